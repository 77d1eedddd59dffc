"""Your own data's defaults on public tables nobody tuned them on (not a test):
``python benchmarks/held_out_tables.py --data DIR [SPEC ...] [--tables a,b] [--seeds 0,1]``.

Plays each policy specification (``NAME[:key=value,...]``, built as :func:`deepbandits.run`
builds it: the specification, then your own data's settings for what it leaves out; default:
the library's defaults of Neural-σ²-LinUCB and LinUCB, nothing passed) for ``T`` = 4,000 rounds
on each public table of :data:`TABLES`, read as it is published through
``make_env("table", ...)``, and appends one row per run to
``benchmarks/results/held_out_tables.csv``: table, specification, seed, the final regret and its
ratio to uniform random play's (T·(1 − 1/K), what a policy that never learns loses), the
accuracy, the arms never played over the last quarter of the run and, of those, the arms locked
out (the best arm in at least 1 % of those rounds), and the wall time on one thread. A run
already in the CSV (same table, specification, seed, T, and the same parameters of the bandit
and of the policy as built) is not made again, so an interrupted call resumes; a run whose
parameters changed since is made again and added. It then prints a Markdown table (mean over
the seeds), with ``--report`` into ``benchmarks/results/held_out_tables.md``.

Seeds: the defaults were chosen on the tuning seeds 0 and 1 (``--seeds 0,1``) and are reported
on the evaluation seeds 2 and 3 (``--seeds 2,3 --report``), which no choice looked at.

The tables (``--data DIR`` holds the files under the names below, as downloaded from the UCI
repository, https://archive.ics.uci.edu, or the mirrors named; their SHA-256 is checked): two-class
banknote (1,372 × 4), phoneme (5,404 × 5), MAGIC gamma (19,020 × 10), Pima diabetes (768 × 8) and
ionosphere (351 × 34); wheat seeds (210 × 7, 3 classes), glass (214 × 9, 6 classes), white wine
quality (4,898 × 11, 7 classes), E. coli (336 × 7, 8 classes), optdigits (3,823 × 64, 10 classes,
with a header row), letter recognition (20,000 × 16, 26 classes, the letter first under a header
row) and abalone (4,177 × 8, the age in rings as 28 classes, the sex a category). None of them was
looked at before the library's defaults were set. Besides them, ``digits``, ``synth26`` and
``synth2``, the "own data" tables of ``benchmarks/defaults.py``, made here (:data:`GENERATED`).

The issue-49 commands (candidates on the tuning seeds, then the evaluation; two processes at a
time, one per core)::

    python benchmarks/held_out_tables.py --data DIR --seeds 0,1 SPEC ...   # candidates
    python benchmarks/held_out_tables.py --data DIR --seeds 2,3 \\
        neural-sigma2-linucb neural-sigma2-linucb:train_steps=300,lr=0.01 \\
        linucb linucb:alpha=0.02
    python benchmarks/held_out_tables.py --data DIR --seeds 2,3 --report \\
        --tables synth26,glass,ecoli,phoneme,letter,wine-white,digits \\
        neural-linucb neural-linucb:train_steps=300,lr=0.01,epsilon=0.0

Each runs only what the CSV lacks; ``--report`` writes the table of every run of the seeds in
the CSV.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

import deepbandits as db
from _output import Output, append_row
from deepbandits.experiments.runner import give_horizon
from deepbandits.metrics import locked_out_arms, unplayed_arms, window_accuracy
from deepbandits.specs import parse_seeds, parse_spec
from defaults import own_data

RESULTS = Path(__file__).resolve().parent / "results"
CSV = RESULTS / "held_out_tables.csv"
T_DEFAULT = 4000
DEFAULT_SPECS = ("neural-sigma2-linucb", "linucb")


@dataclass(frozen=True)
class HeldOutTable:
    """A public table as published: its file, how it is read (the keywords of
    ``make_env("table", ...)``: label by position, header, categorical columns, rows to skip),
    where it came from and the SHA-256 of the file read."""

    file: str
    sha256: str
    source: str
    keywords: dict[str, Any] = field(default_factory=dict)


#: The held-out tables, smallest class count first.
TABLES: dict[str, HeldOutTable] = {
    "banknote": HeldOutTable(
        "banknote_authentication.csv",
        "d0539aaed2139ba7a587b3e34fb345ce503ff7d5d33dbf9912d8e195ce425cb9",
        "UCI 267 (banknote authentication), via github.com/jbrownlee/Datasets",
        {"label": -1},
    ),
    "phoneme": HeldOutTable(
        "phoneme.csv",
        "eacbb9f7a2b2135d067bff28ed7b9adb760f61f5e91f375f91e22e7e42ace24d",
        "ELENA/KEEL phoneme, via github.com/jbrownlee/Datasets",
        {"label": -1},
    ),
    "magic": HeldOutTable(
        "magic04.data",
        "e9314b7ebd4b4b59a3b3d65f7316663963777b16a46786877651dbbaa640b36a",
        "UCI 159 (MAGIC gamma telescope), "
        "via github.com/TanishaSharma01/MAGIC-gamma-hadron-classification",
        {"label": -1},
    ),
    "pima": HeldOutTable(
        "pima-indians-diabetes.csv",
        "6bfe5d0f379d17a0e0819b996407e3c09bf80febd4287f2ed212190dfff154af",
        "Pima Indians diabetes (768 × 8; zeros mark missing values, left as published), "
        "via github.com/jbrownlee/Datasets",
        {"label": -1},
    ),
    "ionosphere": HeldOutTable(
        "ionosphere.csv",
        "fd6dd7864b55d56dac0a1e6e24af9ccc35bf2555ac79af8ab9f3d1daa065ab83",
        "UCI 52 (ionosphere; the label a letter, g or b), via github.com/jbrownlee/Datasets",
        {"label": -1},
    ),
    "wheat-seeds": HeldOutTable(
        "wheat-seeds.csv",
        "8dbd1853a4439afc113cfe07f290422c7ce3fe48745d71f3f7eaa027cd38fd6e",
        "UCI 236 (seeds; 3 varieties of wheat), via github.com/jbrownlee/Datasets",
        {"label": -1},
    ),
    "glass": HeldOutTable(
        "glass.csv",
        "1b7039aa2d617c1827e790b55d45ac138dce06b5f2a3fb6c25f2f135b59ad2d0",
        "UCI 42 (glass identification, without its id column), via github.com/jbrownlee/Datasets",
        {"label": -1},
    ),
    "wine-white": HeldOutTable(
        "winequality-white.csv",
        "659d419fff887f225bf977d20520bb64a64cae203e460087f809721d4430ba27",
        "UCI 186 (wine quality, white), via github.com/jbrownlee/Datasets",
        {"label": -1},
    ),
    "ecoli": HeldOutTable(
        "ecoli.csv",
        "26836c66779f5ce2b0c4d21c0667dcfb89f2a408e3cdac7e38dbc63e0abd5691",
        "UCI 39 (E. coli, without its name column), via github.com/jbrownlee/Datasets",
        {"label": -1},
    ),
    "optdigits": HeldOutTable(
        "optdigits.tra",
        "83b5fd08ac1e96b0509c7fbac516c0259026240b432cc738dbd746e3a8549834",
        "UCI 80 (optical digits, training part, with a header row added), "
        "via github.com/logicalapple/cs7641-Supervised-Learning",
        {"label": -1},
    ),
    "letter": HeldOutTable(
        "letter-recognition.data",
        "9b63b12c9425f919cf32a4de0ffbbef25960ddeced6a0c15fc8cf2dbb530b403",
        "UCI 59 (letter recognition; the letter first, with a header row added), "
        "via github.com/davidgasquez/letter-recognition",
        {"label": 0},
    ),
    "abalone": HeldOutTable(
        "abalone.csv",
        "eb2de13be807e9bb9ec4128b9c89b98ab23d7739121cfd17b7dde69b46ba7bf6",
        "UCI 1 (abalone; the rings as classes), via github.com/jbrownlee/Datasets",
        {"label": -1, "categorical": [0]},
    ),
}


#: Tables made here rather than read, those ``benchmarks/defaults.py`` plays as "own data"
#: (:func:`defaults.own_data`): scikit-learn's digits, and make_classification's synth26 (26
#: classes, where arms were locked out) and synth2.
GENERATED = ("digits", "synth26", "synth2")


def table_path(name: str, data: Path) -> Path:
    """The file of held-out table ``name`` in ``data``, its checksum checked."""
    table = TABLES[name]
    path = data / table.file
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != table.sha256:
        raise SystemExit(f"{path}: SHA-256 {digest}, expected {table.sha256} ({table.source})")
    return path


def build(name: str, data: Path, spec: str, seed: int, T: int) -> tuple[Any, Any, str]:
    """The bandit of held-out table ``name`` (or of :data:`GENERATED` table ``name``), the
    policy ``spec`` gets on it, and a digest of both's parameters (seed aside): a saved run is
    reused only while it is the same."""
    if name in GENERATED:
        X, y = own_data(name)
        env = db.make_env("classification", X=X, y=y, seed=seed, horizon=T)
    else:
        path = str(table_path(name, data))
        env = db.make_env("table", path=path, seed=seed, horizon=T, **TABLES[name].keywords)
    policy_name, params = parse_spec(spec)
    policy = db.make_policy(policy_name, env=env, **params)
    give_horizon(policy, T)
    described = {
        "env": {k: v for k, v in env.get_params().items() if k not in ("seed", "path")},
        "policy": {k: v for k, v in policy.get_params().items() if k != "seed"},
    }
    digest = hashlib.sha256(json.dumps(described, default=str, sort_keys=True).encode())
    return env, policy, digest.hexdigest()[:12]


def run_row(name: str, data: Path, spec: str, seed: int, T: int) -> dict[str, Any]:
    """One run of ``spec`` on held-out table ``name`` and what the CSV keeps of it."""
    env, policy, digest = build(name, data, spec, seed, T)
    window = T // 4
    start = time.perf_counter()
    records = db.run(policy, env, T, seed=seed, threads=1).records
    seconds = time.perf_counter() - start
    regret = float(records["cum_regret"].iloc[-1])
    return {
        "table": name,
        "n_rows": env.X.shape[0],
        "n_features": env.X.shape[1],
        "n_arms": env.n_arms,
        "spec": spec,
        "seed": seed,
        "T": T,
        "regret": regret,
        "regret_over_random": round(regret / (T * (1 - 1 / env.n_arms)), 4),
        "accuracy_last_quarter": round(window_accuracy(records["regret"], window), 4),
        "unplayed_arms_last_quarter": unplayed_arms(records["arm"], env.n_arms, window),
        "locked_out_arms_last_quarter": locked_out_arms(
            records["arm"], records["best_arm"], env.n_arms, window
        ),
        "seconds": round(seconds, 1),
        "parameters": digest,
    }


def report(frame: pd.DataFrame, seeds: list[int], T: int) -> list[str]:
    """A Markdown table of the mean over ``seeds`` per table and specification."""
    rows = frame[frame["seed"].isin(seeds) & (frame["T"] == T)]
    rows = rows.drop_duplicates(["table", "spec", "seed"], keep="last")  # the latest parameters
    order = {name: i for i, name in enumerate([*TABLES, *GENERATED])}
    rows = rows.sort_values(
        ["n_arms", "table"], key=lambda c: c.map(order) if c.name == "table" else c, kind="stable"
    )
    lines = [
        f"Seeds {', '.join(map(str, seeds))}, T = {T:,}, mean over the seeds; regret over "
        "random play's is the final regret over T·(1 − 1/K); unplayed / locked out: arms never "
        "played in the last quarter, and of those the ones that were the best arm in at least "
        "1 % of its rounds; seconds: wall time of one run on one thread.",
        "",
        "| table | rows × features | K | policy | regret / random | accuracy, last quarter "
        "| unplayed / locked out | seconds |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (name, spec), group in rows.groupby(["table", "spec"], sort=False):
        if group["seed"].nunique() < len(seeds):
            continue  # a specification measured on some of the seeds only
        first = group.iloc[0]
        lines.append(
            f"| {name} | {first['n_rows']:,} × {first['n_features']} | {first['n_arms']} | "
            f"`{spec}` | {group['regret_over_random'].mean():.3f} | "
            f"{group['accuracy_last_quarter'].mean():.3f} | "
            f"{group['unplayed_arms_last_quarter'].max()} / "
            f"{group['locked_out_arms_last_quarter'].max()} | "
            f"{statistics.mean(group['seconds']):.1f} |"
        )
    lines += ["", *by_kind(rows, seeds)]
    return lines


#: The kinds of table the issue's goals name, by their number of classes K.
KINDS = {"K = 2": (2, 2), "K = 3–10": (3, 10), "K ≥ 26": (26, 10**6)}


def by_kind(rows: pd.DataFrame, seeds: list[int]) -> list[str]:
    """Markdown tables of each specification's mean regret over random play's per kind of
    table (:data:`KINDS`), with the most arms locked out in one run and the mean seconds per
    1,000 rounds: one table per set of tables, for the specifications run on all of the set's
    tables and seeds (rows compare only over the same tables)."""
    complete = rows.groupby(["spec", "table"])["seed"].nunique() == len(seeds)
    sets: dict[frozenset[str], list[str]] = {}
    for spec, done in complete[complete].reset_index().groupby("spec", sort=False):
        sets.setdefault(frozenset(done["table"]), []).append(spec)
    lines: list[str] = []
    for tables, specs in sorted(sets.items(), key=lambda item: -len(item[0])):
        order = [name for name in [*TABLES, *GENERATED] if name in tables]
        lines += [
            f"Mean over the {len(tables)} tables {', '.join(order)}, by kind, and the seeds:",
            "",
            "| policy | " + " | ".join(KINDS) + " | most arms locked out in a run | seconds per "
            "1,000 rounds |",
            "|---|" + "---|" * (len(KINDS) + 2),
        ]
        for spec in specs:
            group = rows[(rows["spec"] == spec) & rows["table"].isin(tables)]
            cells = []
            for low, high in KINDS.values():
                kind = group[group["n_arms"].between(low, high)]
                cells.append(f"{kind['regret_over_random'].mean():.3f}" if len(kind) else "-")
            per_thousand = 1000 * group["seconds"].sum() / group["T"].sum()
            lines.append(
                f"| `{spec}` | {' | '.join(cells)} | "
                f"{group['locked_out_arms_last_quarter'].max()} | {per_thousand:.1f} |"
            )
        lines.append("")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("specs", nargs="*", default=list(DEFAULT_SPECS))
    parser.add_argument("--data", type=Path, required=True, help="folder holding the tables")
    parser.add_argument("--tables", default=",".join([*TABLES, *GENERATED]))
    parser.add_argument("--seeds", default="0,1", help="'0,1' (tuning) or '2,3' (evaluation)")
    parser.add_argument("--T", type=int, default=T_DEFAULT)
    parser.add_argument("--report", action="store_true", help="write held_out_tables.md")
    args = parser.parse_args(argv)
    names = [n for n in args.tables.split(",") if n]
    unknown = sorted(set(names) - set(TABLES) - set(GENERATED))
    if unknown:
        known = ", ".join([*TABLES, *GENERATED])
        parser.error(f"--tables: no table {', '.join(unknown)}; choose from {known}")
    seeds = parse_seeds(args.seeds)
    done = pd.read_csv(CSV) if CSV.exists() else pd.DataFrame(columns=["table"])
    for name in names:
        for spec in args.specs:
            for seed in seeds:
                digest = build(name, args.data, spec, seed, args.T)[2]
                if (
                    len(done)
                    and (
                        (done["table"] == name)
                        & (done["spec"] == spec)
                        & (done["seed"] == seed)
                        & (done["T"] == args.T)
                        & (done["parameters"] == digest)
                    ).any()
                ):
                    continue
                row = run_row(name, args.data, spec, seed, args.T)
                append_row(CSV, row)
                print(
                    f"{name} {spec} seed {seed}: regret/random {row['regret_over_random']:.3f}, "
                    f"unplayed {row['unplayed_arms_last_quarter']}, {row['seconds']} s",
                    flush=True,
                )
    lines = report(pd.read_csv(CSV), seeds, args.T)
    if args.report:
        out = Output("held_out_tables.py")
        for line in lines:
            out(line)
        out.save(
            RESULTS / "held_out_tables.md",
            "from the runs in held_out_tables.csv (one thread per run, two at a time on a 2-core "
            "machine beside other work)",
        )
    else:
        print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
