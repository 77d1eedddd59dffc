"""The whole paper's suite, timed (not a test): ``python benchmarks/suite.py --quick``.

Runs ``deepbandits reproduce --all`` (``--quick`` by default scale) once with 1 worker process
and once with 2, each from scratch in a temporary folder, as a child process, and prints a
Markdown table: wall time, speed-up of 2 workers over 1, and the peak resident memory of the
largest process (``getrusage(RUSAGE_CHILDREN).ru_maxrss``: the run's main process or one of its
workers), beside the configs' expected CPU time. It also checks that the two runs wrote the same
per-round records (the engine's promise that results do not depend on the number of workers).

Run it on an otherwise idle machine: absolute times drift with load; the speed-up is the figure
to compare. The table is also written to ``benchmarks/results/suite.md`` (``suite_full.md``
with ``--full``), which the manual includes.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import pandas as pd

from deepbandits._io import write_atomic
from deepbandits.experiments.config import builtin_configs
from deepbandits.experiments.reproduce import expected_cpu_seconds, format_duration
from deepbandits.experiments.results import load_results

RESULTS = Path(__file__).parent / "results"

#: Columns that depend on the machine's speed, not on the trajectory.
TIMING = ("time_select", "time_update", "time_train")


#: Runs a command and writes its descendants' peak RSS (KiB) to the file named first.
PEAK_WRAPPER = (
    "import resource, subprocess, sys; status = subprocess.run(sys.argv[2:]).returncode; "
    "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)); "
    "sys.exit(status)"
)


def timed_suite(out: Path, workers: int, quick: bool) -> tuple[float, float, int]:
    """Run the suite into ``out`` with ``workers`` processes; return its wall seconds, the peak
    RSS in MiB of its largest process and its exit status."""
    command = [sys.executable, "-m", "deepbandits", "reproduce", "--all", "--out", str(out)]
    command += ["--jobs", str(workers), "--no-progress"] + (["--quick"] if quick else [])
    peak_file = out.with_name(out.name + ".peak")
    start = time.perf_counter()
    status = subprocess.run(
        [sys.executable, "-c", PEAK_WRAPPER, str(peak_file), *command], check=False
    ).returncode
    wall = time.perf_counter() - start
    return wall, int(peak_file.read_text()) / 1024, status


def same_records(a: Path, b: Path) -> bool:
    """Whether two suite folders hold the same runs with the same per-round records."""
    left = load_results(a).drop(columns=list(TIMING)).sort_values(["config_hash", "t"])
    right = load_results(b).drop(columns=list(TIMING)).sort_values(["config_hash", "t"])
    left, right = left.reset_index(drop=True), right.reset_index(drop=True)
    return left.equals(right)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--full", action="store_true", help="the full suite (hours)")
    args = parser.parse_args()
    quick = not args.full
    configs = list(builtin_configs().values())
    cpu, full = expected_cpu_seconds(configs, quick), expected_cpu_seconds(configs, False)
    print(
        f"{len(configs)} experiments, {'quick' if quick else 'full'}; expected CPU time "
        f"{format_duration(cpu)} (full suite: {format_duration(full)})",
        flush=True,
    )
    rows = []
    with tempfile.TemporaryDirectory(prefix="deepbandits-suite-") as tmp:
        folders = {}
        for workers in (1, 2):
            folders[workers] = Path(tmp) / f"workers{workers}"
            wall, peak, status = timed_suite(folders[workers], workers, quick)
            rows.append({"workers": workers, "wall_s": wall, "peak_mib": peak, "status": status})
            print(f"{workers} worker(s): {wall:.0f} s, exit status {status}", flush=True)
        identical = same_records(folders[1], folders[2])
    table = pd.DataFrame(rows)
    lines = [
        f"`python benchmarks/suite.py{'' if quick else ' --full'}` on {date.today().isoformat()}: "
        f"{len(configs)} experiments, {'quick' if quick else 'full'} scale.",
        "",
        "| workers | wall time | speed-up | peak memory of one process (MiB) | exit status |",
        "|---|---|---|---|---|",
    ]
    for row in table.itertuples():
        speedup = table["wall_s"].iloc[0] / row.wall_s
        lines.append(
            f"| {row.workers} | {format_duration(row.wall_s)} | {speedup:.2f}× | "
            f"{row.peak_mib:.0f} | {row.status} |"
        )
    lines += ["", f"Per-round records identical with 1 and 2 workers: {identical}."]
    print("\n" + "\n".join(lines))
    write_atomic(RESULTS / f"suite{'' if quick else '_full'}.md", "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
