"""MkDocs hook: tables built from the files the code and the benchmarks write, never retyped.

- ``results/real-datasets.md`` is generated from ``benchmarks/results/real_*_runs.csv`` (the
  ``runs.csv`` that ``deepbandits report`` wrote for each comparison): mean ± std over seeds of
  each policy's final regret and wall time.
- In any page, ``<!-- generated: experiments -->`` becomes the table of ``deepbandits reproduce
  --list`` (from the shipped configs and their measured costs), ``<!-- generated: policies -->``
  the registry's names with their one-line descriptions, ``<!-- generated: environments -->``
  the environment registry, ``<!-- generated: demo-summary -->`` the table of ``make demo``
  (``benchmarks/results/demo_summary.csv``), ``<!-- generated: real-datasets -->`` one row per
  comparison of ``real_*_runs.csv`` (the policies as columns), ``<!-- generated: ope-obd -->``
  the table of ``benchmarks/results/ope_obd_<campaign>.csv`` (what ``deepbandits ope --log
  obd:...`` wrote) and ``<!-- generated: version -->`` the package's version.
- ``<!-- generated: table FILE "HEADING" -->`` is the first Markdown table of ``FILE`` (relative
  to the repository) after its first line that starts with ``HEADING`` (without it, the file's
  first table): one section of a benchmark's output, where a page discusses it part by part.

The other benchmark tables (``benchmarks/results/*.md``) are included verbatim by
``pymdownx.snippets`` in the pages under ``docs/results/``.
"""

from __future__ import annotations

import importlib
import re
import shlex
from pathlib import Path
from typing import Any

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
MARKER = re.compile(r"<!-- generated: ([a-z-]+)((?: [^>]+?)?) -->")


def mean_std(values: pd.Series, digits: int = 0, ddof: int = 0) -> str:
    """``mean ± std`` (population std over the seeds unless ``ddof=1``); the value alone when
    there is one and the sample std is asked for."""
    if len(values) <= ddof:
        return f"{values.mean():,.{digits}f}"
    return f"{values.mean():,.{digits}f} ± {values.std(ddof=ddof):,.{digits}f}"


def listed(values: pd.Series, digits: int = 0) -> str:
    """The values, comma-separated (a column of the seeds' rows, in their order)."""
    return ", ".join(f"{v:,.{digits}f}" for v in values)


def span(values: pd.Series, digits: int = 0) -> str:
    """``min–max`` of the values (the wall times of a group of runs; one value alone)."""
    if values.min() == values.max():
        return f"{values.min():,.{digits}f}"
    return f"{values.min():,.{digits}f}–{values.max():,.{digits}f}"


def seeds_row(
    label: str, group: pd.DataFrame, cells: list[str], final: str, seconds: str = "wall_seconds"
) -> str:
    """A table row of a group of runs, one per seed: ``label (seeds)``, the ``cells``, the
    column ``final`` as mean ± sample std (per seed) and the span of the ``seconds`` column."""
    group = group.sort_values("seed")
    return (
        f"| {label} ({listed(group['seed'])}) | {' | '.join(cells)} | "
        f"{mean_std(group[final], 1, ddof=1)} ({listed(group[final])}) | "
        f"{span(group[seconds])} s |"
    )


def real_datasets_page() -> str:
    """``results/real-datasets.md`` from every ``real_<name>_runs.csv``."""
    lines = [
        "# Real datasets (Section 5.2)\n",
        "Computed when the site is built from `benchmarks/results/real_<dataset>_runs.csv`, the "
        "`runs.csv` that `deepbandits report` wrote for each comparison (one row per run; "
        "how they were made: `benchmarks/results/README.md`, included below). Final regret "
        "is the mean ± std over the seeds listed; wall time is per run, with two to four runs "
        "sharing the 2 cores.\n",
    ]
    for path in sorted(RESULTS.glob("real_*_runs.csv")):
        runs = pd.read_csv(path)
        name = path.name.removeprefix("real_").removesuffix("_runs.csv")
        horizon = ", ".join(str(t) for t in sorted(runs["T"].unique()))
        lines += [
            f"\n## {name} (T = {horizon})\n",
            f"From `{path.relative_to(ROOT)}`.\n",
            "| policy | seeds | final regret | per seed | wall time per run (s) |",
            "|---|---|---|---|---|",
        ]
        for policy, group in runs.groupby("policy", sort=False):
            group = group.sort_values("seed")
            seeds, per_seed = listed(group["seed"]), listed(group["final_regret"])
            wall = span(group["wall_seconds"], 1)
            lines.append(
                f"| {policy} | {seeds} | {mean_std(group['final_regret'])} | {per_seed} | {wall} |"
            )
    readme = (RESULTS / "README.md").read_text(encoding="utf-8")
    lines += ["\n## How these runs were made\n", demote(readme, 2)]
    return "\n".join(lines)


def demote(markdown: str, levels: int) -> str:
    """``markdown`` with every ATX heading ``levels`` levels deeper (outside code blocks)."""
    out, fenced = [], False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        out.append("#" * levels + line if not fenced and line.startswith("#") else line)
    return "\n".join(out) + "\n"


def experiments_table() -> str:
    """The table of ``deepbandits reproduce --list``, from the shipped configs."""
    config = importlib.import_module("deepbandits.experiments.config")
    reproduce = importlib.import_module("deepbandits.experiments.reproduce")
    configs = list(config.builtin_configs().values())
    lines = [
        "| experiment | reproduces | expected CPU, quick | expected CPU, full |",
        "|---|---|---|---|",
    ]
    for c in configs:
        cost = [
            reproduce.format_duration(x) if x is not None else "?"
            for x in (c.quick_cpu_s, c.full_cpu_s)
        ]
        lines.append(f"| `{c.name}` | {', '.join(c.reproduces)} | {cost[0]} | {cost[1]} |")
    quick = reproduce.format_duration(reproduce.expected_cpu_seconds(configs, True))
    full = reproduce.format_duration(reproduce.expected_cpu_seconds(configs, False))
    lines.append(
        f"\nAll {len(configs)}: {quick} of CPU quick, {full} full (one core of a 2-core "
        "machine; divide by `--jobs` for the wall time)."
    )
    return "\n".join(lines)


def policies_table() -> str:
    """The registry's names and their one-line descriptions."""
    policies = importlib.import_module("deepbandits.policies")
    lines = ["| name | what it is |", "|---|---|"]
    for name, recipe in policies.POLICIES.items():
        lines.append(f"| [`{name}`](../reference/policy-parameters.md#{name}) | {recipe.doc} |")
    return "\n".join(lines)


def demo_summary_table() -> str:
    """``benchmarks/results/demo_summary.csv``: the ``summary.csv`` that ``deepbandits demo``
    wrote, as the demo prints it."""
    summary = pd.read_csv(RESULTS / "demo_summary.csv")
    lines = [
        "| policy | seeds | T | final regret (mean ± std) | wall time per run (s) |",
        "|---|---|---|---|---|",
    ]
    for row in summary.itertuples(index=False):
        lines.append(
            f"| {row.policy} | {row.seeds} | {row.T} | {row.final_regret_mean:.1f} ± "
            f"{row.final_regret_std:.1f} | {row.wall_seconds_mean:.1f} |"
        )
    return "\n".join(lines)


def file_table(path: str, heading: str = "") -> str:
    """The first Markdown table of ``path`` after its first line starting with ``heading``."""
    lines = (ROOT / path).read_text(encoding="utf-8").splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(heading)), None)
    if start is None:
        raise ValueError(f"{path}: no line starts with {heading!r}")
    rows: list[str] = []
    for line in lines[start + (1 if heading else 0) :]:
        if line.startswith("|"):
            rows.append(line)
        elif rows:
            break
    if len(rows) < 2:
        raise ValueError(f"{path}: no table after {heading!r}")
    return "\n".join(rows)


#: Column order and titles of the real-dataset summary, and the rows' titles
REAL_POLICIES = {
    "linucb": "LinUCB",
    "neural-linucb": "Neural-LinUCB",
    "neural-sigma2-linucb": "Neural-σ²-LinUCB",
    "neural-ucb": "NeuralUCB",
}
REAL_DATASETS = {
    "shuttle": "shuttle",
    "covertype": "covertype",
    "covertype_15k": "covertype",
    "mnist": "MNIST",
    "cifar10": "CIFAR-10 (30,000 images)",
}


def real_datasets_table() -> str:
    """One row per ``real_<name>_runs.csv``: each policy's final regret, mean ± sample std over
    the seeds (per seed; wall time per run: the mean below 10 s, else the range), the lowest
    mean in bold."""
    head = " | ".join(REAL_POLICIES.values())
    lines = [f"| dataset, T | {head} |", "|---|" + "---|" * len(REAL_POLICIES)]
    for name, title in REAL_DATASETS.items():
        runs = pd.read_csv(RESULTS / f"real_{name}_runs.csv")
        horizon = ", ".join(f"{t:,}" for t in sorted(runs["T"].unique()))
        means = runs.groupby("policy")["final_regret"].mean()
        cells = []
        for policy in REAL_POLICIES:
            group = runs[runs["policy"] == policy].sort_values("seed")
            per_seed = ", ".join(f"{r:.0f}" for r in group["final_regret"])
            wall_s = group["wall_seconds"]
            low, high = wall_s.min(), wall_s.max()
            wall = f"{wall_s.mean():.1f} s" if high < 10 else f"{low:,.0f}–{high:,.0f} s"
            cell = mean_std(group["final_regret"], ddof=1)
            cell = f"**{cell}**" if policy == means.idxmin() else cell
            cells.append(f"{cell} ({per_seed}; {wall})")
        lines.append(f"| {title}, {horizon} | {' | '.join(cells)} |")
    return "\n".join(lines)


def ope_obd_table() -> str:
    """``benchmarks/results/ope_obd_<campaign>.csv`` (the ``ope.csv`` of ``deepbandits ope
    --log obd:behavior=random,campaign=<campaign>``), every campaign in one table."""
    lines = [
        "| campaign (truth: BTS click rate) | estimator | estimate [95 % interval] | covers | "
        "rel. error | 30 runs | OBP's published (all) |",
        "|---|---|---|---|---|---|---|",
    ]
    for campaign in ("all", "men", "women"):
        table = pd.read_csv(RESULTS / f"ope_obd_{campaign}.csv")
        for i, row in enumerate(table.itertuples(index=False)):
            obp = getattr(row, "obp_mean", float("nan"))  # only campaign all has OBP's numbers
            published = f"{obp:.3f} ± {row.obp_std:.3f}" if pd.notna(obp) else ""
            lines.append(
                f"| {f'{campaign}: {row.truth:.4f}' if i == 0 else ''} | {row.name} | "
                f"{row.estimate:.5f} [{row.lower:.5f}, {row.upper:.5f}] | "
                f"{'yes' if row.covered else 'no'} | {row.relative_error:.3f} | "
                f"{row.rel_error_mean:.3f} ± {row.rel_error_std:.3f} | {published} |"
            )
    return "\n".join(lines)


def regret_marks(
    runs: pd.DataFrame, before: list[str], after: list[str], label: str = "t = {:,}"
) -> list[str]:
    """The header and rule of a table whose columns are ``before``, the cumulative regret at
    each round of the ``regret_<t>`` columns of ``runs`` (titled ``label``), then ``after``."""
    marks = [label.format(int(c.split("_")[1])) for c in runs.columns if c.startswith("regret_")]
    columns = [*before, *marks, *after]
    return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]


def records_table(dataset: str) -> str:
    """``benchmarks/results/records_<dataset>.csv`` (``benchmarks/records.py`` on a run of
    ``deepbandits reproduce records-<dataset>``): each policy's final regret and its regret at
    the config's checkpoints, mean ± sample std over the seeds, beside the published numbers of
    the config's ``[paper]`` table (the lowest measured mean in bold)."""
    config = importlib.import_module("deepbandits.experiments.config").builtin_configs()
    paper = config[f"records-{dataset}"].paper or {"source": "none at this T", "values": {}}
    source = paper["source"]
    runs = pd.read_csv(RESULTS / f"records_{dataset}.csv")
    marks = [c for c in runs.columns if c.startswith("regret_")]
    before, after = ["policy", "final regret (per seed)"], ["wall time per run"]
    lines = regret_marks(runs, before, [*after, f"published ({source})"], "regret at t = {:,}")
    means = runs.groupby("policy")["final_regret"].mean()
    published = {label: v.get("final_regret", "") for label, v in paper["values"].items()}
    for policy, group in runs.groupby("policy", sort=False):
        per_seed = ", ".join(f"{r:.0f}" for r in group.sort_values("seed")["final_regret"])
        final = mean_std(group["final_regret"], ddof=1)
        final = f"**{final}**" if policy == means.idxmin() else final
        at = "".join(f" {mean_std(group[c], ddof=1)} |" for c in marks)
        wall = f"{group['wall_seconds'].min():,.0f}–{group['wall_seconds'].max():,.0f} s"
        lines.append(
            f"| {policy} | {final} ({per_seed}) |{at} {wall} | {published.pop(policy, '')} |"
        )
    for label, value in published.items():  # the records of algorithms the config does not run
        lines.append(f"| {label} | not run |" + " |" * len(marks) + f" | {value} |")
    return "\n".join(lines)


def records_tuning_table(dataset: str) -> str:
    """``benchmarks/results/records_<dataset>_tuning.csv`` (``benchmarks/records_tuning.py``):
    every run on the tuning seeds, in the order it was made; a mark a run did not record is
    "–", an environment without keywords is the recommended one."""
    runs = pd.read_csv(RESULTS / f"records_{dataset}_tuning.csv", keep_default_na=False)
    marks = [c for c in runs.columns if c.startswith("regret_")]
    before = ["policy specification", "environment", "seed"]
    lines = regret_marks(runs, before, ["final regret (T)", "wall time"])
    for row in runs.itertuples(index=False):
        at = "".join(
            f" {'–' if getattr(row, c) in ('', 'nan') else f'{float(getattr(row, c)):,.0f}'} |"
            for c in marks
        )
        env = f"`{row.env}`" if row.env else "(recommended)"
        lines.append(
            f"| `{row.spec}` | {env} | {row.seed} |{at} {float(row.regret):,.0f} ({int(row.T):,}) "
            f"| {float(row.seconds):,.0f} s |"
        )
    return "\n".join(lines)


def full_information_table() -> str:
    """``benchmarks/results/records_mnist_full_information.csv``
    (``benchmarks/records_full_information.py``): each network's mistakes with every label seen,
    mean ± sample std over the seeds, beside Neural-σ²-LinUCB's regret on the same seeds
    (``records_mnist.csv``)."""
    runs = pd.read_csv(RESULTS / "records_mnist_full_information.csv")
    bandit = pd.read_csv(RESULTS / "records_mnist.csv")
    bandit = bandit[bandit["policy"] == "neural-sigma2-linucb"].sort_values("seed")
    names = {
        "disjoint": "the policies' network (a first layer per arm, squared error on every "
        "arm's reward)",
        "shared": "a classifier of the same size (one first layer, ten outputs, cross-entropy)",
        "lenet": "that classifier behind a LeNet trunk (5×5 convolutions of 8 and 16 channels)",
    }
    lines = [
        "| learner (seeds) | t = 1,000 | t = 4,096 | T = 10,000 (per seed) | time per run |",
        "|---|---|---|---|---|",
    ]
    # each row: its label, its runs, and their columns at t = 1,000, t = 4,096, T and the time
    mistakes = ["mistakes_1000", "mistakes_4096", "mistakes", "seconds"]
    rows = [
        (f"{names[network]}, every label seen", group, mistakes)
        for network, group in runs.groupby("network", sort=False)
    ]
    regret = ["", "regret_4096", "final_regret", "wall_seconds"]
    label = "Neural-σ²-LinUCB, one reward per round (today's settings: the LeNet trunk)"
    rows.append((label, bandit, regret))
    for label, group, (early, middle, final, seconds) in rows:
        at = [mean_std(group[c], 1, ddof=1) if c else "–" for c in (early, middle)]
        lines.append(seeds_row(label, group, at, final, seconds))
    return "\n".join(lines)


def exploration_table() -> str:
    """``benchmarks/results/records_exploration.csv`` (``benchmarks/records.py --exploration``
    on runs of ``deepbandits reproduce records-<dataset>``): per dataset and policy, the rounds
    that played an arm below the largest predicted mean (the run records' ``mean_gap``), the
    regret paid in them, the regret of the greedy choices and the final regret, mean ± sample
    std over the seeds."""
    runs = pd.read_csv(RESULTS / "records_exploration.csv")
    runs = runs.assign(
        explored_rounds=runs["explored_share"] * runs["T"],
        greedy_regret=runs["final_regret"] - runs["explored_regret"],
    )
    lines = [
        "| dataset | policy (seeds) | rounds explored | regret in them | regret of greedy "
        "choices | final regret (per seed) | time per run |",
        "|---|---|---|---|---|---|---|",
    ]
    columns = ("explored_rounds", "explored_regret", "greedy_regret")
    for (dataset, policy), group in runs.groupby(["dataset", "policy"], sort=False):
        cells = [mean_std(group[c], 1, ddof=1) for c in columns]
        lines.append(seeds_row(f"{dataset} | {policy}", group, cells, "final_regret"))
    return "\n".join(lines)


def environments_table() -> str:
    """The environment registry's names."""
    envs = importlib.import_module("deepbandits.envs")
    return ", ".join(f"`{name}`" for name in envs.env_names())


GENERATORS = {
    "experiments": experiments_table,
    "policies": policies_table,
    "environments": environments_table,
    "demo-summary": demo_summary_table,
    "real-datasets": real_datasets_table,
    "ope-obd": ope_obd_table,
    "records": records_table,
    "records-tuning": records_tuning_table,
    "records-full-information": full_information_table,
    "records-exploration": exploration_table,
    "table": file_table,
    "version": lambda: importlib.import_module("deepbandits").__version__,
}


def on_files(files: Any, config: Any) -> Any:
    """Add the generated results page."""
    from mkdocs.structure.files import File

    files.append(File.generated(config, "results/real-datasets.md", content=real_datasets_page()))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace each ``<!-- generated: NAME [ARGUMENTS] -->`` marker with its table."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise ValueError(f"{page.file.src_uri}: unknown generated block {name!r}")
        return GENERATORS[name](*shlex.split(match.group(2)))

    return MARKER.sub(replace, markdown)
