"""How a dataset's recommended settings were chosen (not a test):
``python benchmarks/records_tuning.py mnist SPEC [SPEC ...] [--seed 0] [--T 10000]``.

Plays each policy specification (``NAME[:key=value,...]``, built as :func:`deepbandits.run`
builds it: the specification, then the environment's settings for what it leaves out) on the
dataset, read from ``$DEEPBANDITS_DATA``, on the tuning seed, one run at a time on one thread,
and appends a row per run to ``benchmarks/results/records_<dataset>_tuning.csv``: the
specification, the environment's keywords (``--env key=value``, e.g. ``settings=paper`` to start
from the paper's settings, ``preprocess=standardize``), the seed, T, the cumulative regret at
t = 1,000, 2,000, 4,096, 5,000 and T, and the wall time. Evaluation seeds (``deepbandits
reproduce records-<dataset>``) are never tuning seeds.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

import deepbandits as db
from deepbandits._io import write_atomic

RESULTS = Path(__file__).resolve().parent / "results"
MARKS = (1000, 2000, 4096, 5000)


def tune_row(dataset: str, spec: str, env_kw: dict[str, str], seed: int, T: int) -> dict:
    """One run of ``spec`` and what the CSV keeps of it."""
    env = db.make_env(dataset, **env_kw)
    start = time.perf_counter()
    cum = db.run(spec, env, T, seed).records["cum_regret"]
    row = {"spec": spec, "env": ",".join(f"{k}={v}" for k, v in env_kw.items()), "seed": seed}
    row.update({f"regret_{t}": float(cum.iloc[t - 1]) for t in MARKS if t <= T})
    row.update(T=T, regret=float(cum.iloc[-1]), seconds=round(time.perf_counter() - start, 1))
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset")
    parser.add_argument("specs", nargs="+")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--T", type=int, default=10000)
    parser.add_argument("--env", action="append", default=[], help="key=value")
    args = parser.parse_args(argv)
    env_kw = dict(item.split("=", 1) for item in args.env)
    out = RESULTS / f"records_{args.dataset}_tuning.csv"
    for spec in args.specs:
        row = tune_row(args.dataset, spec, env_kw, args.seed, args.T)
        print(row, flush=True)
        # read when writing, not at the start: runs in parallel each add their rows
        rows = [pd.read_csv(out)] if out.exists() else []
        rows.append(pd.DataFrame([row]))
        write_atomic(out, pd.concat(rows, ignore_index=True).to_csv(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
