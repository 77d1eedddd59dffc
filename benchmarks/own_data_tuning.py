"""How your own data's defaults were chosen (not a test):
``python benchmarks/own_data_tuning.py SPEC [SPEC ...] [--envs digits,synth26,synth2]
[--seeds 2,3,4] [--T 5000]``.

Plays each policy specification (``NAME[:key=value,...]``, built as :func:`deepbandits.run`
builds it: the specification, then your own data's settings for what it leaves out) on the
"own data" tables of ``benchmarks/defaults.py`` and appends a row per run to
``benchmarks/results/own_data_tuning.csv``: table, specification, seed, T, final regret, the
arms never played over the last 1000 rounds and, of those, the arms locked out (the best arm in
at least 1 % of those rounds), and the wall time. At the end it prints each specification's mean
per table. The defaults table's seeds (0 and 1) are not tuning seeds: use others (2, 3, 4).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import deepbandits as db
from _output import append_row
from deepbandits.metrics import locked_out_arms, unplayed_arms
from deepbandits.specs import parse_seeds
from defaults import OWN_DATA, WINDOW, build_env

OUT = Path(__file__).resolve().parent / "results" / "own_data_tuning.csv"


def tune_row(env_name: str, spec: str, seed: int, T: int) -> dict:
    """One run of ``spec`` on the own table ``env_name`` and what the CSV keeps of it."""
    env = build_env(env_name, seed, T, {})
    start = time.perf_counter()
    records = db.run(spec, env, T, seed=seed, threads=1).records
    return {
        "env": env_name,
        "spec": spec,
        "seed": seed,
        "T": T,
        "regret": float(records["cum_regret"].iloc[-1]),
        "unplayed_arms_last": unplayed_arms(records["arm"], env.n_arms, WINDOW),
        "locked_out_arms_last": locked_out_arms(
            records["arm"], records["best_arm"], env.n_arms, WINDOW
        ),
        "seconds": round(time.perf_counter() - start, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("specs", nargs="+")
    parser.add_argument("--envs", default=",".join(OWN_DATA))
    parser.add_argument("--seeds", default="2,3,4", help="tuning seeds: '2,3,4' or '2-4'")
    parser.add_argument("--T", type=int, default=5000)
    args = parser.parse_args(argv)
    envs = [e for e in args.envs.split(",") if e]
    unknown = sorted(set(envs) - set(OWN_DATA))
    if unknown:
        parser.error(f"--envs: no own table {', '.join(unknown)}; choose from {OWN_DATA}")
    finals: dict[tuple[str, str], list[float]] = {}
    for spec in args.specs:
        for env_name in envs:
            for seed in parse_seeds(args.seeds):
                row = tune_row(env_name, spec, seed, args.T)
                print(row, flush=True)
                finals.setdefault((env_name, spec), []).append(row["regret"])
                append_row(OUT, row)
    for (env_name, spec), regrets in finals.items():
        print(f"{env_name} {spec}: {statistics.fmean(regrets):,.1f} over seeds {args.seeds}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
