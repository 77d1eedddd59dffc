"""Every script in ``examples/`` runs to the end as a user would run it (``python
examples/NAME.py``, a fresh process, the working directory elsewhere, no display) and prints
something. Slow (3 to 77 s each on 2 cores that two other processes kept busy, as
``examples/README.md`` says): deselected from ``make test``, run by ``.ci/run``
(``pytest -m slow``) and by ``make docs``, whose gallery runs them too."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
LIMIT_S = 120  # the slowest took 77 s with both cores busy with other work

pytestmark = pytest.mark.slow


def test_there_are_at_least_six_examples() -> None:
    assert len(EXAMPLES) >= 6


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs(script: Path, tmp_path: Path) -> None:
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONHASHSEED": "0"}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=LIMIT_S,
        check=False,
    )
    elapsed = time.perf_counter() - start
    assert done.returncode == 0, f"{script.name} failed:\n{done.stderr[-3000:]}"
    assert done.stdout.strip(), f"{script.name} printed nothing"
    assert "Traceback" not in done.stderr
    assert elapsed < LIMIT_S
