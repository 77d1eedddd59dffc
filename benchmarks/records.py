"""The records table's numbers from a finished run (not a test):
``python benchmarks/records.py mnist FOLDER``, where ``FOLDER`` is what ``deepbandits reproduce
records-mnist --out FOLDER`` wrote.

Reads the run's ``runs.csv`` (one row per policy and seed) and each run's per-round records
(``<policy>/seed_<s>.csv``) and writes ``benchmarks/results/records_<dataset>.csv``: policy,
seed, T, the final regret, the cumulative regret at each of the config's checkpoints (t = 4,096
for MNIST, Calvera's benchmark: a run does not depend on T, so it is the regret of a T = 4,096
run), the share of rounds that explored (played an arm below the largest predicted mean) and the
regret paid in them (:func:`deepbandits.metrics.exploration_split`; the rest is the greedy
choices' mistakes), and the wall time of the run. The site's records page renders it beside the
published numbers of the config's ``[paper]`` table.

With ``--exploration`` the rows go instead to ``benchmarks/results/records_exploration.csv``
(with a ``dataset`` column, replacing that dataset's earlier rows): a run made to measure how
much the policies explore, whose regret is not the records table's.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from deepbandits._io import write_atomic
from deepbandits.experiments.compare import label_of
from deepbandits.experiments.config import builtin_configs

RESULTS = Path(__file__).resolve().parent / "results"


def records_rows(dataset: str, folder: Path) -> pd.DataFrame:
    """One row per run of ``folder``, with the regret at the config's checkpoints."""
    config = builtin_configs()[f"records-{dataset}"]
    runs = pd.read_csv(next(folder.glob("report/*/runs.csv")))
    rows = []
    for run in runs.itertuples(index=False):
        cum = pd.read_csv(folder / label_of(run.policy) / f"seed_{run.seed}.csv")["cum_regret"]
        row = {"policy": run.policy, "seed": run.seed, "T": run.T, "final_regret": run.final_regret}
        marks = [t for t in config.checkpoints if t <= run.T]
        row.update({f"regret_{t}": float(cum.iloc[t - 1]) for t in marks})
        if hasattr(run, "explored_share"):  # reports written before the column lack it
            row.update(explored_share=run.explored_share, explored_regret=run.explored_regret)
        row["wall_seconds"] = round(float(run.wall_seconds), 1)
        rows.append(row)
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset")
    parser.add_argument("folder", type=Path)
    parser.add_argument(
        "--exploration", action="store_true", help="write to records_exploration.csv instead"
    )
    args = parser.parse_args(argv)
    table = records_rows(args.dataset, args.folder)
    print(table.to_string(index=False))
    if json.loads((args.folder / "experiment.json").read_text())["quick"]:
        print("a --quick run: nothing written")
        return 0
    if not args.exploration:
        write_atomic(RESULTS / f"records_{args.dataset}.csv", table.to_csv(index=False))
        return 0
    path = RESULTS / "records_exploration.csv"
    table.insert(0, "dataset", args.dataset)
    if path.exists():
        earlier = pd.read_csv(path)
        table = pd.concat([earlier[earlier["dataset"] != args.dataset], table])
    write_atomic(path, table.to_csv(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
