"""What the pages tell a user to type names only what a clone of the repository has (issue 49
§3.8): no page sends the user's data directory to the development machine's ``../shared/data``
(or ``/work/shared/data``), a folder beside this repository that a clone does not have; the data
directory is the ``data_dir`` argument, else ``$DEEPBANDITS_DATA``, else a cache folder, where
missing files are downloaded when the machine is online."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Folders that hold no page of the project's own.
SKIP = {".git", ".venv", ".venv-peers", ".venv-obp", "site", "node_modules", ".pytest_cache"}
#: A data directory set to the development machine's shared folder: ``DEEPBANDITS_DATA=...``,
#: ``data_dir=...`` or ``--data-dir ...``.
FOREIGN_DATA = re.compile(r"(DEEPBANDITS_DATA|data_dir|--data-dir)\s*[= ]\s*[\"']?\S*shared/data")


def pages() -> list[Path]:
    """Every Markdown page of the repository (README, docs, examples, benchmarks)."""
    found = []
    for path in sorted(ROOT.rglob("*.md")):
        if not SKIP & set(path.relative_to(ROOT).parts):
            found.append(path)
    return found


def test_the_pages_are_found():
    names = {p.relative_to(ROOT).as_posix() for p in pages()}
    assert {"README.md", "examples/README.md", "docs/manual/09-real-datasets.md"} <= names


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_page_sends_the_data_directory_to_a_folder_a_clone_lacks(page):
    lines = enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
    foreign = [f"{n}: {line.strip()}" for n, line in lines if FOREIGN_DATA.search(line)]
    assert not foreign, (
        f"{page.relative_to(ROOT)} sets the data directory to a folder a clone does not have "
        "(write /path/to/data, or leave it to the default data directory):\n" + "\n".join(foreign)
    )


@pytest.mark.parametrize(
    "line",
    [
        "export DEEPBANDITS_DATA=../shared/data",
        "`DEEPBANDITS_DATA=../shared/data deepbandits ope --log obd:...`",
        "export DEEPBANDITS_DATA=/work/shared/data",
        "python benchmarks/ope_obp.py --data-dir ../shared/data",
        'make_env("mnist", data_dir="../shared/data")',
    ],
)
def test_the_check_finds_each_spelling(line):
    assert FOREIGN_DATA.search(line)


@pytest.mark.parametrize(
    "line",
    [
        "export DEEPBANDITS_DATA=/path/to/data   # optional",
        "`python benchmarks/datasets.py` on 2026-11-25, 2 CPU cores, data /work/shared/data",
    ],
)
def test_the_check_leaves_other_lines(line):
    assert not FOREIGN_DATA.search(line)


def test_the_readme_gives_h1_one_time_per_run_with_its_load():
    """The demo table's wall time of Neural-σ²-LinUCB on h1 and the records table's h1 row are
    the same configuration: each says the other's times and under what load they were
    measured, so the README does not disagree with itself."""
    import pandas as pd

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    note = " ".join(readme.split("| policy | seeds | T |", 1)[0].split())  # lines joined
    records = readme.split("## Records", 1)[1]
    row = next(line for line in records.splitlines() if line.startswith("| h1, T = 10,000"))
    two, alone = re.search(r"(\d+) s per run two at a time, (\d+) s alone", row).groups()
    assert f"took {alone} s each alone and {two} s each two at a time" in note
    demo = pd.read_csv(ROOT / "benchmarks/results/demo_summary.csv").set_index("policy")
    seconds = demo.loc["neural-sigma2-linucb", "wall_seconds_mean"]
    assert f"{seconds:.0f} s alone on" in row and "with nothing else running" in note
    assert "the demo's configuration" in row
