"""Accuracy of the ridge inverse after many rank-one updates (not a test):
``python benchmarks/ridge_accuracy.py [--quick]``.

:class:`deepbandits.RidgeState` keeps A⁻¹ by Sherman–Morrison rank-one updates. This benchmark
feeds it n = 10⁶ observations (10⁵ with ``--quick``) and measures how far its A⁻¹, θ and widths
are from a long-double reference, for two behaviours on the same data:

* ``old``: an exact re-inversion every ``refresh_every = 500`` updates only (the library before
  the drift estimate; :data:`deepbandits.linalg.ridge.DRIFT_TOL` set to infinity);
* ``new``: the library's: also an exact (symmetric) re-inversion whenever the estimated drift of a
  rank-one step would pass ``DRIFT_TOL``.

Problem: one head, λ = 1, unit weights; contexts x = S z with z ~ N(0, I_d) and S the diagonal of
column scales log-spaced from 1 to ``span`` (10⁶: scales spanning 10⁶; 1: the well-scaled
control); rewards r = zᵀβ + 0.1·N(0, 1). Dimensions d = 20 and 64.

Reference: A = λI + Σ x xᵀ and b = Σ r x accumulated in long double (x87 80-bit, ε = 5.4e-20)
from the same float64 data, A⁻¹ by Gauss–Jordan elimination of the equilibrated E⁻¹AE⁻¹
(E = diag(A)^½) in long double, θ = A⁻¹b. As a check of the reference the benchmark also prints
its largest distance to a float64 Cholesky solve of the equilibrated problem.

Errors (relative, each at log-spaced checkpoints from n = 2d on and just before the first periodic
re-inversion; ``final`` is the last one, ``worst`` the largest over the checkpoints):

* ``A⁻¹``: ‖K − R‖_F / ‖R‖_F of the kept inverse K against the reference R;
* ``A⁻¹ eq.``: the same after equilibration, ‖E(K − R)E‖_F / ‖ERE‖_F, where every entry counts at
  its own scale (with scales spanning 10⁶ the plain norm sees only the largest entries);
* ``θ``: ‖E(θ − θ_ref)‖ / ‖Eθ_ref‖;
* ``widths``: the largest |w − w_ref| / w_ref of ‖x‖_{A⁻¹} over 64 probe contexts drawn like
  the data (the quantity the UCB policies add to the mean).

Before 2d updates the problem itself is ill-conditioned: while some direction has seen no data,
A holds λ = 1 beside entries up to 10¹² and its float64 entries cannot carry λ to better than
10⁻⁴ relative, whatever keeps the inverse. ``updates/s`` is the CPU time (``time.thread_time``)
of the ``update`` calls alone, both behaviours interleaved block by block on the same data; both
run the current ``update`` (input checks and drift bookkeeping included) and differ only in
whether the drift estimate may trigger a re-inversion.

Output: a Markdown table on stdout and in ``benchmarks/results/ridge_accuracy.md`` (``--out``).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import scipy.linalg
from numpy.typing import NDArray

import deepbandits.linalg.ridge as ridge_module
from deepbandits._io import write_atomic
from deepbandits.linalg.ridge import RidgeState

Array = NDArray[np.float64]
LongArray = NDArray[np.longdouble]
#: quantities compared with the reference, in table order
MEASURES = ("A⁻¹", "A⁻¹ eq.", "θ", "widths")
BEHAVIOURS = ("old", "new")
TARGET = 1e-8
BLOCK = 8192


def column_scales(d: int, span: float) -> Array:
    """Column scales log-spaced from 1 to ``span``."""
    return np.logspace(0.0, np.log10(span), d)


def observations(
    d: int, span: float, n: int, seed: int, block: int = BLOCK
) -> Iterator[tuple[Array, Array]]:
    """The ``n`` observations ``(X, r)`` of the benchmark's problem, in blocks of ``block`` rows."""
    rng = np.random.default_rng(seed)
    scales, beta = column_scales(d, span), rng.standard_normal(d)
    for start in range(0, n, block):
        Z = rng.standard_normal((min(block, n - start), d))
        yield Z * scales, Z @ beta + 0.1 * rng.standard_normal(len(Z))


def probes(d: int, span: float, seed: int, k: int = 64) -> Array:
    """``k`` contexts drawn like the data, for the widths."""
    return np.random.default_rng([seed, 1]).standard_normal((k, d)) * column_scales(d, span)


def longdouble_spd_inverse(A: LongArray) -> LongArray:
    """Inverse of a symmetric positive definite ``A`` by Gauss–Jordan elimination (no pivoting)
    of the equilibrated E⁻¹AE⁻¹, E = diag(A)^½, in long double."""
    d = len(A)
    e = 1 / np.sqrt(np.diag(A))
    work = np.concatenate([A * np.outer(e, e), np.eye(d, dtype=np.longdouble)], axis=1)
    for k in range(d):
        work[k] /= work[k, k]
        column = work[:, k].copy()
        column[k] = 0
        work -= np.outer(column, work[k])
    return work[:, d:] * np.outer(e, e)


class Reference:
    """A = λI + Σ x xᵀ and b = Σ r x in long double, and the exact ridge quantities from them."""

    def __init__(self, d: int, lam: float = 1.0):
        self.A = np.eye(d, dtype=np.longdouble) * lam
        self.b = np.zeros(d, dtype=np.longdouble)

    def add(self, X: Array, r: Array) -> None:
        Xl = X.astype(np.longdouble)
        self.A += Xl.T @ Xl
        self.b += Xl.T @ r.astype(np.longdouble)

    def solution(self) -> tuple[LongArray, LongArray]:
        """A⁻¹ and θ = A⁻¹b."""
        A_inv = longdouble_spd_inverse(self.A)
        return A_inv, A_inv @ self.b

    def float64_check(self) -> float:
        """Equilibrated relative distance of the long-double A⁻¹ to a float64 Cholesky inverse of
        E⁻¹AE⁻¹: an independent estimate of the reference's accuracy (≈ κ·ε of float64)."""
        e = np.sqrt(np.diag(self.A))
        M = (self.A / np.outer(e, e)).astype(np.float64)
        M_inv = scipy.linalg.cho_solve(scipy.linalg.cho_factor(M), np.eye(len(M)))
        R = (longdouble_spd_inverse(self.A) * np.outer(e, e)).astype(np.float64)
        return float(np.linalg.norm(M_inv - R) / np.linalg.norm(R))


def relative_errors(ridge: RidgeState, ref: Reference, P: Array) -> dict[str, float]:
    """The relative errors of :data:`MEASURES` of head 0 of ``ridge`` against ``ref``."""
    R, theta = ref.solution()
    e = np.sqrt(np.diag(ref.A))
    K = ridge.A_inv[0].astype(np.longdouble)

    def rel(err: LongArray, ref_value: LongArray) -> float:
        return float(np.linalg.norm(err.astype(np.float64)) / np.linalg.norm(ref_value))

    w_ref = np.sqrt(np.einsum("kd,de,ke->k", P, R, P))
    _, width = ridge.score(P)
    return {
        "A⁻¹": rel(K - R, R.astype(np.float64)),
        "A⁻¹ eq.": rel((K - R) * np.outer(e, e), (R * np.outer(e, e)).astype(np.float64)),
        "θ": rel(e * (ridge.theta[0] - theta), (e * theta).astype(np.float64)),
        "widths": float(np.max(np.abs(width - w_ref) / w_ref)),
    }


def checkpoints(d: int, n: int, refresh_every: int) -> list[int]:
    """Log-spaced numbers of updates from 2d to n, and the one before the first re-inversion."""
    points = np.unique(np.round(np.geomspace(2 * d, n, 20)).astype(int))
    return sorted({*points.tolist(), refresh_every - 1} & set(range(2 * d, n + 1)))


@contextmanager
def periodic_only() -> Iterator[None]:
    """The ``old`` behaviour: no drift-triggered re-inversion."""
    saved = ridge_module.DRIFT_TOL
    ridge_module.DRIFT_TOL = float("inf")
    try:
        yield
    finally:
        ridge_module.DRIFT_TOL = saved


def count_refreshes(ridge: RidgeState, X: Array, r: Array) -> tuple[int, float]:
    """Feed ``(X, r)`` to ``ridge``; returns its exact re-inversions and the CPU seconds taken."""
    refreshes, start = 0, time.thread_time()
    for x, y in zip(X, r, strict=True):
        ridge.update(x, y)
        refreshes += ridge.drift[0] == 0.0
    return refreshes, time.thread_time() - start


def run_case(
    d: int, span: float, n: int, seed: int = 0, refresh_every: int = 500
) -> dict[str, dict[str, float]]:
    """Both behaviours on one problem: for each, the ``final`` and ``worst`` error of every
    measure, the exact re-inversions, updates/second, and the reference's check."""
    ridges = {b: RidgeState(d, 1, 1.0, refresh_every) for b in BEHAVIOURS}
    ref, P = Reference(d), probes(d, span, seed)
    stops = checkpoints(d, n, refresh_every)
    out = {b: {"refreshes": 0.0, "seconds": 0.0} for b in BEHAVIOURS}
    worst = {b: dict.fromkeys(MEASURES, 0.0) for b in BEHAVIOURS}
    reference_check, done = 0.0, 0
    for X, r in observations(d, span, n, seed):
        # split the block at the checkpoints it contains
        cuts = [c - done for c in stops if done < c <= done + len(X)]
        for a, z in zip([0, *cuts], [*cuts, len(X)], strict=True):
            if a == z:
                continue
            ref.add(X[a:z], r[a:z])
            for b in BEHAVIOURS:
                if b == "old":
                    with periodic_only():
                        refreshes, seconds = count_refreshes(ridges[b], X[a:z], r[a:z])
                else:
                    refreshes, seconds = count_refreshes(ridges[b], X[a:z], r[a:z])
                out[b]["refreshes"] += refreshes
                out[b]["seconds"] += seconds
            if done + z in stops:
                reference_check = max(reference_check, ref.float64_check())
                for b in BEHAVIOURS:
                    errors = relative_errors(ridges[b], ref, P)
                    for m in MEASURES:
                        worst[b][m] = max(worst[b][m], errors[m])
        done += len(X)
    final = {b: relative_errors(ridges[b], ref, P) for b in BEHAVIOURS}
    for b in BEHAVIOURS:
        out[b] |= {f"{m} final": final[b][m] for m in MEASURES}
        out[b] |= {f"{m} worst": worst[b][m] for m in MEASURES}
        out[b]["updates/s"] = n / out[b]["seconds"]
        out[b]["reference check"] = reference_check
    return out


def table(rows: Sequence[tuple[int, float, dict[str, dict[str, float]]]]) -> str:
    """Markdown table of :func:`run_case` results ``(d, span, result)``."""
    head = ["d", "column scales", "behaviour", *(f"{m} final / worst" for m in MEASURES)]
    head += ["exact re-inversions", "updates/s", "speed vs old"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for d, span, result in rows:
        for b in BEHAVIOURS:
            res = result[b]
            errors = [f"{res[f'{m} final']:.1e} / {res[f'{m} worst']:.1e}" for m in MEASURES]
            ratio = res["updates/s"] / result["old"]["updates/s"]
            scales = f"1 to {span:.0e}" if span > 1 else "1 (control)"
            lines.append(
                f"| {d} | {scales} | {b} | "
                + " | ".join(errors)
                + f" | {res['refreshes']:.0f} | {res['updates/s']:,.0f} | {ratio:.2f} |"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="10⁵ updates instead of 10⁶")
    parser.add_argument("--n", type=int, default=None, help="number of updates (overrides)")
    parser.add_argument("--dims", default="20,64", help="comma-separated dimensions d")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parent / "results" / "ridge_accuracy.md",
    )
    args = parser.parse_args(argv)
    command = " ".join(["python benchmarks/ridge_accuracy.py", *(argv or sys.argv[1:])])
    n = args.n if args.n is not None else 10**5 if args.quick else 10**6
    rows = []
    for d in (int(v) for v in args.dims.split(",")):
        for span in (1e6, 1.0):
            rows.append((d, span, run_case(d, span, n, args.seed)))
            print(f"d={d}, scales 1 to {span:.0e}: done", flush=True)
    check = max(result["new"]["reference check"] for _, _, result in rows)
    text = (
        f"# Ridge inverse accuracy after n = {n:,} rank-one updates\n\n"
        f"Relative errors against the long-double reference (final / worst over checkpoints "
        f"from n = 2d on); target {TARGET:.0e}. `old`: exact re-inversion every 500 updates "
        f"only; `new`: also when the drift estimate passes DRIFT_TOL = "
        f"{ridge_module.DRIFT_TOL:.0e}. Reference check (float64 Cholesky of the equilibrated "
        f"problem against the long-double reference, worst): {check:.1e}.\n\n"
        + table(rows)
        + f"\n\n`{command}`\n"
    )
    print(text)
    write_atomic(args.out, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
