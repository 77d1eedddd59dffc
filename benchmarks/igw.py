"""What inverse gap weighting costs in regret (issue 50 §1; not a test):
``python benchmarks/igw.py [--envs h1,shuttle,covertype] [--seeds 0,1] [--T 5000] [--report]``.

Plays LinUCB and Neural-σ²-LinUCB with their exploration as it comes (UCB, deterministic: a log
of propensities 1) and with inverse gap weighting (``explore=igw``: SquareCB with γₜ =
10·√(t + 1), every propensity exact and above 0), without and with a floor of 0.02 on every
arm's probability (``min_propensity=0.02``, under 1/K on these bandits), on h1 and on the
shuttle and covertype datasets (read from ``$DEEPBANDITS_DATA``, never downloaded here), each
with the environment's recommended settings as the command line gives them. Each finished run
is one row of ``benchmarks/results/igw.csv`` (environment, specification, seed, T, final
regret, seconds on one thread); a run already there is not made again, so an interrupted call
resumes. It prints (with ``--report`` also writes ``benchmarks/results/igw.md``) the mean final
regret over the seeds and its ratio to the same policy's with UCB.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

import deepbandits as db
from _output import Output, append_row
from deepbandits.specs import parse_seeds

RESULTS = Path(__file__).resolve().parent / "results"
CSV = RESULTS / "igw.csv"
POLICIES = ("linucb", "neural-sigma2-linucb")
VARIANTS = ("", "explore=igw", "explore=igw,min_propensity=0.02")
ENVS = ("h1", "shuttle", "covertype")


def spec_of(policy: str, variant: str) -> str:
    return f"{policy}:{variant}" if variant else policy


def run_row(env_name: str, spec: str, seed: int, T: int) -> dict[str, object]:
    """One run of ``spec`` on ``env_name`` and what the CSV keeps of it."""
    extra = {} if env_name == "h1" else {"download": False}
    env = db.make_env(env_name, seed=seed, horizon=T, **extra)
    start = time.perf_counter()
    result = db.run(spec, env, T, seed=seed, threads=1)
    return {
        "env": env_name,
        "spec": spec,
        "seed": seed,
        "T": T,
        "final_regret": float(result.final_regret),
        "seconds": round(time.perf_counter() - start, 1),
    }


def report(frame: pd.DataFrame, envs: list[str], seeds: list[int], T: int) -> list[str]:
    """Mean final regret per environment and specification, and its ratio to UCB's."""
    rows = frame[frame["seed"].isin(seeds) & (frame["T"] == T) & frame["env"].isin(envs)]
    lines = [
        f"T = {T:,}, seeds {', '.join(map(str, seeds))}: mean final regret (± std over the "
        "seeds), and its ratio to the same policy's with UCB (`explore` as it comes).",
        "",
        "| environment | policy | exploration | final regret | ratio to UCB | seconds |",
        "|---|---|---|---|---|---|",
    ]
    for env_name in envs:
        for policy in POLICIES:
            base = rows[(rows["env"] == env_name) & (rows["spec"] == policy)]
            for variant in VARIANTS:
                group = rows[(rows["env"] == env_name) & (rows["spec"] == spec_of(policy, variant))]
                if group["seed"].nunique() < len(seeds):
                    continue
                regret = group["final_regret"]
                ratio = regret.mean() / base["final_regret"].mean()
                lines.append(
                    f"| {env_name} | {policy} | {variant.replace('explore=', '') or 'ucb'} | "
                    f"{regret.mean():,.1f} ± {regret.std(ddof=0):,.1f} | {ratio:.2f} | "
                    f"{group['seconds'].mean():.1f} |"
                )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", default=",".join(ENVS))
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--T", type=int, default=5000)
    parser.add_argument("--report", action="store_true", help="write igw.md")
    args = parser.parse_args(argv)
    envs = [e for e in args.envs.split(",") if e]
    seeds = parse_seeds(args.seeds)
    for env_name in envs:
        for policy in POLICIES:
            for variant in VARIANTS:
                spec = spec_of(policy, variant)
                for seed in seeds:
                    done = pd.read_csv(CSV) if CSV.exists() else pd.DataFrame(columns=["env"])
                    if (
                        len(done)
                        and (
                            (done["env"] == env_name)
                            & (done["spec"] == spec)
                            & (done["seed"] == seed)
                            & (done["T"] == args.T)
                        ).any()
                    ):
                        continue
                    row = run_row(env_name, spec, seed, args.T)
                    append_row(CSV, row)
                    print(
                        f"{env_name} {spec} seed {seed}: {row['final_regret']:.1f}, "
                        f"{row['seconds']} s",
                        flush=True,
                    )
    lines = report(pd.read_csv(CSV), envs, seeds, args.T)
    if args.report:
        out = Output("igw.py")
        for line in lines:
            out(line)
        out.save(
            RESULTS / "igw.md",
            "from the runs in igw.csv (one thread per run, two at a time on a 2-core machine)",
        )
    else:
        print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
