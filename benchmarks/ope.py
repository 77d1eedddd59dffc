"""Off-policy evaluation at scale, and against Open Bandit Pipeline (not a test):
``python benchmarks/ope.py [--quick]`` (run it with ``.venv-peers/bin/python`` for the OBP
columns; without obp they say so).

Inputs (seeded): n = 10⁶ logged rounds, K = 10 arms; the logging policy and the evaluation
policy are softmaxes of two random score tables, the reward model's predictions q̂ a third
table in (0, 1), and rewards Bernoulli draws from a mean that q̂ approximates. Both libraries
get the same arrays (OBP's with a position axis of length 1), with Switch-DR's τ = 2 and DRos's
λ = 5 so that both modify some weights.

Measured for deepbandits (:func:`deepbandits.ope.evaluate` with ``q_hat`` given, so no reward
model is fitted): the wall time of the estimate with its 95 % interval from 1,000 Poisson
bootstrap resamples, for each estimator alone, for IPS + SNIPS + DR together and for all seven
together (the resamples are shared, so more estimators cost little more), best of ``--repeats``;
and the peak of the memory it allocates (``tracemalloc``, which sees numpy's buffers) above the
inputs. For OBP 0.4.1: ``estimate_policy_value`` and ``estimate_interval`` (1,000 resamples, its
Python loop over ``numpy.random.choice``) of the same estimator, once each, and the largest
absolute difference between the two libraries' estimates (the check: at most 1e-10).

``--quick``: n = 10⁵ and 200 resamples. Writes ``benchmarks/results/ope.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from deepbandits._io import write_atomic
from deepbandits.ope import ESTIMATORS, SlopeTuned, evaluate, make_log

OUT = Path(__file__).parent / "results" / "ope.md"
TAU, LAM = 2.0, 5.0
TOLERANCE = 1e-10


def softmax(z: np.ndarray) -> np.ndarray:
    z = np.exp(z - z.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def inputs(n: int, K: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    logging = softmax(rng.standard_normal((n, K)))
    target = softmax(1.5 * rng.standard_normal((n, K)))
    u = rng.random(n)[:, None]
    action = np.minimum((logging.cumsum(axis=1) < u).sum(axis=1), K - 1)
    mean = 1 / (1 + np.exp(-rng.standard_normal((n, K)) - 1.0))
    q_hat = np.clip(mean + 0.05 * rng.standard_normal((n, K)), 0.0, 1.0)
    reward = (rng.random(n) < mean[np.arange(n), action]).astype(np.float64)
    return {
        "action": action,
        "reward": reward,
        "pscore": logging[np.arange(n), action],
        "action_dist": target,
        "q_hat": q_hat,
    }


def best_time(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def ours(data: dict[str, np.ndarray], names: list[str], n_boot: int) -> Any:
    n = len(data["action"])
    log = make_log(
        np.zeros((n, 1)),
        data["action"],
        data["reward"],
        data["pscore"],
        n_actions=data["q_hat"].shape[1],
    )
    return evaluate(
        log,
        data["action_dist"],
        estimators=names,
        q_hat=data["q_hat"],
        n_bootstrap=n_boot,
        switch_tau=TAU,
        shrinkage_lambda=LAM,
        warn=False,
    )


def peak_memory(fn: Callable[[], Any]) -> float:
    """MiB allocated at the peak of ``fn`` above what was allocated before it."""
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return (peak - base) / 2**20


def obp_estimators() -> dict[str, Any] | str:
    try:
        import obp
        from obp import ope
    except ImportError as exc:
        return f"obp not installed ({exc}); run with .venv-peers/bin/python"
    return {
        "version": obp.__version__,
        "ips": ope.InverseProbabilityWeighting(),
        "snips": ope.SelfNormalizedInverseProbabilityWeighting(),
        "dm": ope.DirectMethod(),
        "dr": ope.DoublyRobust(),
        "sndr": ope.SelfNormalizedDoublyRobust(),
        "switch-dr": ope.SwitchDoublyRobust(tau=TAU),
        "dr-os": ope.DoublyRobustWithShrinkage(lambda_=LAM),
    }


def obp_kwargs(data: dict[str, np.ndarray]) -> dict[str, Any]:
    return {
        "reward": data["reward"],
        "action": data["action"],
        "pscore": data["pscore"],
        "action_dist": data["action_dist"][:, :, None],
        "estimated_rewards_by_reg_model": data["q_hat"][:, :, None],
        "position": None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="n = 10⁵, 200 resamples")
    parser.add_argument("--repeats", type=int, default=2, help="best of (deepbandits), 2")
    parser.add_argument("--no-obp-intervals", action="store_true", help="skip OBP's slow loop")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    n, n_boot, K = (10**5, 200, 10) if args.quick else (10**6, 1000, 10)
    data = inputs(n, K, args.seed)
    # the estimators with fixed settings, which obp 0.4.1 has too (its tuned ones differ)
    names = [name for name, cls in ESTIMATORS.items() if not issubclass(cls, SlopeTuned)]
    rows = []
    peers = obp_estimators()
    kw = obp_kwargs(data) if isinstance(peers, dict) else {}
    for name in names:
        seconds, result = best_time(lambda name=name: ours(data, [name], n_boot), args.repeats)
        row = {
            "estimator": ESTIMATORS[name].display,
            "ours": result.estimate(name),
            "interval": f"{result.table['lower'][0]:.5f} .. {result.table['upper'][0]:.5f}",
            "ours_s": seconds,
        }
        if isinstance(peers, dict):
            est = peers[name]
            start = time.perf_counter()
            theirs = float(est.estimate_policy_value(**kw))
            row["obp_value_s"] = time.perf_counter() - start
            row["obp"] = theirs
            row["diff"] = abs(theirs - row["ours"])
            if not args.no_obp_intervals:
                start = time.perf_counter()
                ci = est.estimate_interval(
                    **kw, alpha=0.05, n_bootstrap_samples=n_boot, random_state=0
                )
                row["obp_interval_s"] = time.perf_counter() - start
                lo, hi = (v for k, v in ci.items() if "CI" in k)
                row["obp_ci"] = f"{lo:.5f} .. {hi:.5f}"
        rows.append(row)
        print(row, file=sys.stderr, flush=True)
    trio, _ = best_time(lambda: ours(data, ["ips", "snips", "dr"], n_boot), args.repeats)
    every, _ = best_time(lambda: ours(data, names, n_boot), args.repeats)
    mem = peak_memory(lambda: ours(data, names, n_boot))
    mem_trio = peak_memory(lambda: ours(data, ["ips", "snips", "dr"], n_boot))
    lines = [
        f"# Off-policy evaluation: n = {n:,} rounds, K = {K}, {n_boot:,} bootstrap resamples",
        "",
        f"`{' '.join([os.path.relpath(sys.executable), *sys.argv])}` on "
        f"{platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, numpy {np.__version__}"
        + (f", obp {peers['version']}" if isinstance(peers, dict) else f"; {peers}"),
        "",
        "| estimator | deepbandits | its 95 % interval | deepbandits s (estimate + interval) "
        "| OBP | abs. difference | OBP s (estimate) | OBP s (interval) | OBP's 95 % interval |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['estimator']} | {r['ours']:.10f} | {r['interval']} | {r['ours_s']:.2f} | "
            + (
                f"{r['obp']:.10f} | {r['diff']:.1e} | {r['obp_value_s']:.2f} | "
                f"{r.get('obp_interval_s', float('nan')):.1f} | {r.get('obp_ci', '')} |"
                if "obp" in r
                else "— | — | — | — | — |"
            )
        )
    check = max((r["diff"] for r in rows if "diff" in r), default=float("nan"))
    lines += [
        "",
        f"deepbandits, IPS + SNIPS + DR with their intervals in one call: {trio:.2f} s "
        f"(target ≤ 10 s); all seven: {every:.2f} s. Peak memory above the inputs: "
        f"{mem_trio:.0f} MiB (three), {mem:.0f} MiB (seven).",
        f"Largest difference from OBP's estimates: {check:.1e} "
        f"({'within' if check <= TOLERANCE else 'ABOVE'} {TOLERANCE:g})."
        if rows and "diff" in rows[0]
        else "No OBP cross-check (obp is not installed here).",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.quick:
        write_atomic(OUT, text)
    return 0 if not (check > TOLERANCE) else 1


if __name__ == "__main__":
    raise SystemExit(main())
