"""Why Neural-σ²-LinUCB only ties on h2 and h3 (issue 26; not a test):
``python benchmarks/h2h3_tie.py [--T 10000] [--seeds 0 1 2] [--problems h2 h3]``.

On the synthetic problems h2 and h3 (d = 20, K = 4, noise variance vₜ ~ U(0, 1) per round), it
plays, with the environment's recommended settings (``db.run`` given a policy), on the same
seeds:

* ``neural-ucb``: NeuralUCB, the runner-up of Fig. demo on h2;
* ``neural-linucb``: Neural-LinUCB, the unweighted ridge head (σ̄² = 1);
* ``neural-sigma2-linucb``: the paper's Neural-σ²-LinUCB, σ̂² = (b − μ̂)(μ̂ − a) from the
  environment's declared reward range [a, b], floored at R²/d′ (Eq. 9–13);
* ``oracle-mse``: the same policy weighted by the true vₜ (floored the same way), which tells
  whether variance weighting has anything to gain on these problems at all;
* ``rescaled-linucb``: Neural-LinUCB with λ·c and α·√c, where c is the median of
  (b − h)(h − a) over the problem's contexts (h at 20,000 random contexts, computed before
  the run). A weighted ridge with a constant σ̄² = c is exactly this policy (A = (cλI + Σφφᵀ)/c,
  the same θ, widths √c times larger), so if it matches Neural-σ²-LinUCB, the weighting acts
  as a rescaling of λ and α, not as information about the noise.

It writes ``benchmarks/results/h2h3_tie.md`` with, per problem: the final regret per seed and
its mean; the mean regret of each 2,000-round block; and, per weighted policy, the quantiles of
σ̂²/σ²_true (the estimate against the true variance of the round), the rank correlation of σ̂²
with σ²_true, the share of rounds where σ̄² sits on the floor R²/d′, the spread of the weights
1/σ̄² (90th over 10th percentile) and the median exploration width. One run of T = 10,000 takes
20–60 s on a shared CPU; the default (2 problems, 5 policies, 3 seeds) about 10 minutes.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

import deepbandits as db
from deepbandits._io import write_atomic
from deepbandits.envs.synthetic import SyntheticEnv, unit_sphere

OUT = Path(__file__).parent / "results" / "h2h3_tie.md"
POLICIES = (
    "neural-ucb",
    "neural-linucb",
    "neural-sigma2-linucb",
    "oracle-mse",
    "rescaled-linucb",
)
BLOCK = 2000


def play(name: str, problem: str, T: int, seed: int) -> pd.DataFrame:
    """The per-round records of one run."""
    env = db.make_env(problem, seed=seed)
    if name == "rescaled-linucb":
        c = range_scale(env)
        lam, alpha = (db.make_policy("neural-linucb").get_params()[k] for k in ("lam", "alpha"))
        name = f"neural-linucb:lam={lam * c:.6g},alpha={alpha * np.sqrt(c):.6g}"
    return db.run(name, env, T, seed).records


def range_scale(env: SyntheticEnv) -> float:
    """Median of (b − h)(h − a) over 20,000 random contexts: the typical σ̂² of a well-fitted
    head."""
    X = unit_sphere(np.random.default_rng(12345), (20000, env.d))
    h = env.expected_reward(X)
    a, b = env.reward_range
    return float(np.median((b - h) * (h - a)))


def md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def variance_stats(rec: pd.DataFrame, floor: float) -> dict[str, float]:
    """How σ̂² (or the oracle σ²) and the weight used relate to the true variance."""
    raw = rec["sigma2_hat"].to_numpy()
    true = rec["sigma2_oracle"].to_numpy()
    used = rec["sigma2_used"].to_numpy()
    ok = np.isfinite(raw) & (true > 0)
    ratio = raw[ok] / true[ok]
    q = np.quantile(ratio, [0.1, 0.5, 0.9]) if ok.any() else [np.nan] * 3
    rho = pd.Series(raw[ok]).corr(pd.Series(true[ok]), method="spearman") if ok.any() else np.nan
    w = 1.0 / used
    return {
        "sigma2_hat_median": float(np.nanmedian(raw)),
        "true_median": float(np.median(true)),
        "ratio_q10": float(q[0]),
        "ratio_q50": float(q[1]),
        "ratio_q90": float(q[2]),
        "spearman": float(rho),
        "on_floor": float(np.mean(np.isclose(used, floor) | (used <= floor))),
        "weight_spread": float(np.quantile(w, 0.9) / np.quantile(w, 0.1)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--T", type=int, default=10000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--problems", nargs="+", default=["h2", "h3"])
    parser.add_argument("--policies", nargs="+", default=list(POLICIES))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    T, seeds = args.T, args.seeds
    start = time.perf_counter()
    sections = []
    for problem in args.problems:
        env0 = db.make_env(problem, seed=seeds[0])
        p0 = db.make_policy("neural-sigma2-linucb", env=env0)
        floor = p0.get_params()["R"] ** 2 / p0.get_params()["feature_dim"]
        recs: dict[tuple[str, int], pd.DataFrame] = {}
        secs: dict[str, float] = {}
        for name in args.policies:
            t0 = time.perf_counter()
            for seed in seeds:
                recs[name, seed] = play(name, problem, T, seed)
                print(
                    f"{problem} {name} seed {seed}: {recs[name, seed]['cum_regret'].iloc[-1]:.1f}"
                )
            secs[name] = (time.perf_counter() - t0) / len(seeds)
        ranges = ", ".join(
            f"seed {s}: [{db.make_env(problem, seed=s).reward_range[0]:.1f}, "
            f"{db.make_env(problem, seed=s).reward_range[1]:.1f}]"
            for s in seeds
        )
        c = range_scale(env0)
        out = [
            f"## {problem}",
            "",
            f"Declared reward ranges [a, b]: {ranges}; floor R²/d′ = {floor:g}; "
            f"c = median (b − h)(h − a) = {c:.4g} (seed {seeds[0]}).",
            "",
        ]
        # final regret
        rows = []
        for name in args.policies:
            finals = [recs[name, s]["cum_regret"].iloc[-1] for s in seeds]
            rows.append(
                [name, *(f"{v:.0f}" for v in finals), f"{np.mean(finals):.0f}", f"{secs[name]:.0f}"]
            )
        out += [
            f"### {problem}: final regret at T = {T}",
            "",
            md_table(["policy", *(f"seed {s}" for s in seeds), "mean", "s per run"], rows),
            "",
        ]
        # regret per block
        edges = list(range(0, T, BLOCK))
        rows = []
        for name in args.policies:
            vals = []
            for lo in edges:
                hi = min(lo + BLOCK, T)
                vals.append(np.mean([recs[name, s]["regret"].iloc[lo:hi].sum() for s in seeds]))
            rows.append([name, *(f"{v:.0f}" for v in vals)])
        out += [
            f"### {problem}: mean regret per {BLOCK}-round block",
            "",
            md_table(["policy", *(f"{lo + 1}–{min(lo + BLOCK, T)}" for lo in edges)], rows),
            "",
        ]
        # variance diagnostics
        rows = []
        for name in args.policies:
            width = np.mean([recs[name, s]["width"].median() for s in seeds])
            if name not in ("neural-sigma2-linucb", "oracle-mse"):
                rows.append([name, *(["–"] * 8), f"{width:.3g}"])
                continue
            stats = [variance_stats(recs[name, s], floor) for s in seeds]
            m = {k: np.mean([st[k] for st in stats]) for k in stats[0]}
            rows.append(
                [
                    name,
                    f"{m['sigma2_hat_median']:.3g}",
                    f"{m['true_median']:.3g}",
                    f"{m['ratio_q10']:.3g}",
                    f"{m['ratio_q50']:.3g}",
                    f"{m['ratio_q90']:.3g}",
                    f"{m['spearman']:.2f}",
                    f"{100 * m['on_floor']:.1f} %",
                    f"{m['weight_spread']:.3g}",
                    f"{width:.3g}",
                ]
            )
        out += [
            f"### {problem}: estimated against true variance",
            "",
            md_table(
                [
                    "policy",
                    "median σ̂²",
                    "median σ²_true",
                    "σ̂²/σ²_true q10",
                    "q50",
                    "q90",
                    "Spearman(σ̂², σ²_true)",
                    "rounds on floor",
                    "weight spread q90/q10",
                    "median width",
                ],
                rows,
            ),
            "",
        ]
        sections.append("\n".join(out))
    total = time.perf_counter() - start
    head = (
        "# h2 and h3: why Neural-σ²-LinUCB ties\n\n"
        f"Written by `python benchmarks/h2h3_tie.py` (T = {T}, seeds {seeds}; "
        f"{total / 60:.1f} min on a shared 2-core CPU). Means are over the seeds; for the "
        "oracle the 'σ̂²' columns hold the oracle σ² before the floor. Weight spread: the 90th "
        "over the 10th percentile of 1/σ̄²; width: ‖φ‖ in A⁻¹ of the arm played, median over "
        "rounds, mean over seeds.\n"
    )
    write_atomic(args.out, head + "\n" + "\n".join(sections))
    print(f"wrote {args.out} in {total:.0f} s")


if __name__ == "__main__":
    main()
