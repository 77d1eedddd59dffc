"""What a benchmark prints, kept to be written into its results file (``benchmarks/results/``),
which the manual includes: one helper for the scripts that print line by line, and one for
those that add a row per run to a CSV."""

from __future__ import annotations

import time
from datetime import date
from pathlib import Path

import pandas as pd

from deepbandits._io import write_atomic


class Output:
    """Call it with each line to print; :meth:`save` writes them all, under a line saying which
    script ran when and for how long, through the atomic helper."""

    def __init__(self, script: str) -> None:
        self.script = script
        self.lines: list[str] = []
        self.started = time.perf_counter()

    def __call__(self, line: str, flush: bool = False) -> None:
        self.lines.append(line)
        print(line, flush=flush)

    def save(self, path: Path, machine: str) -> None:
        """Write the lines to ``path``, headed by the script, the date, the run's wall time and
        ``machine`` (what it ran on)."""
        minutes, seconds = divmod(round(time.perf_counter() - self.started), 60)
        head = (
            f"`python benchmarks/{self.script}` on {date.today().isoformat()}, {minutes} min "
            f"{seconds} s, {machine}: "
        )
        write_atomic(path, head + "\n".join(self.lines) + "\n")


def append_row(path: Path, row: dict) -> None:
    """Add ``row`` to the CSV at ``path`` (made if missing) through the atomic helper. The file
    is read when writing, not when the script starts, so that scripts running in parallel each
    keep the rows the others added."""
    rows = [pd.read_csv(path)] if path.exists() else []
    rows.append(pd.DataFrame([row]))
    write_atomic(path, pd.concat(rows, ignore_index=True).to_csv(index=False))
