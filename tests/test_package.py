"""The package as a user installs it: ``python -m build`` makes a wheel and an sdist with the
experiment configs, the license and the metadata inside; the wheel, installed with its
dependencies into a fresh virtual environment outside the repository, answers ``deepbandits
--version`` and runs a quick experiment from its own configs.

Slow (about a minute: the dependencies install from pip's cache or the package index): deselected
from ``make test``, run by ``.ci/run`` (``pytest -m slow``)."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
VERSION = PROJECT["version"]
CONFIGS = sorted(p.name for p in (ROOT / "src/deepbandits/experiments/configs").glob("*.toml"))

pytestmark = pytest.mark.slow


def run(*command: str | Path, cwd: Path, timeout: float = 600) -> str:
    """Run a command, fail with its output if it fails, return its stdout."""
    done = subprocess.run(
        [str(c) for c in command],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, f"{command} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``python -m build`` of the working tree: a wheel and an sdist."""
    out = tmp_path_factory.mktemp("dist")
    run(sys.executable, "-m", "build", "--outdir", out, ROOT, cwd=ROOT)
    return out


def test_wheel_holds_the_configs_license_and_metadata(dist: Path) -> None:
    (wheel,) = dist.glob(f"deepbandits-{VERSION}-py3-none-any.whl")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        metadata = z.read(f"deepbandits-{VERSION}.dist-info/METADATA").decode()
    shipped = sorted(
        n.rsplit("/", 1)[1] for n in names if n.startswith("deepbandits/experiments/configs/")
    )
    assert shipped == CONFIGS and len(CONFIGS) >= 20
    # the stubs lazy_loader reads when the package is imported
    src = ROOT / "src"
    stubs = sorted(str(p.relative_to(src)) for p in src.rglob("__init__.pyi"))
    assert stubs and set(stubs) <= set(names)
    assert f"deepbandits-{VERSION}.dist-info/licenses/LICENSE" in names
    assert not any(n.startswith(("tests/", "docs/", "examples/")) for n in names)
    assert "License-Expression: MIT" in metadata
    assert "Project-URL: Paper, https://proceedings.mlr.press/v258/bui25a.html" in metadata
    assert "Classifier: Programming Language :: Python :: 3.11" in metadata
    assert "Provides-Extra: docs" in metadata
    assert "Neural-σ²-LinUCB" in metadata  # the README as the long description


def test_sdist_holds_the_sources_configs_license_and_citation(dist: Path) -> None:
    (sdist,) = dist.glob(f"deepbandits-{VERSION}.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    for required in ("pyproject.toml", "README.md", "LICENSE", "CITATION.cff"):
        assert required in names
    assert {f"src/deepbandits/experiments/configs/{c}" for c in CONFIGS} <= names


def test_wheel_installs_into_a_fresh_venv_and_runs(dist: Path, tmp_path: Path) -> None:
    (wheel,) = dist.glob("*.whl")
    venv = tmp_path / "venv"
    base = getattr(sys, "_base_executable", sys.executable)  # the interpreter, not .venv's
    run(base, "-m", "venv", venv, cwd=tmp_path)
    run(venv / "bin/python", "-m", "pip", "install", "--quiet", wheel, cwd=tmp_path)

    where = run(
        venv / "bin/python", "-c", "import deepbandits; print(deepbandits.__file__)", cwd=tmp_path
    )
    assert where.strip().startswith(str(venv)), where  # the wheel's copy, not the work tree
    assert run(venv / "bin/deepbandits", "--version", cwd=tmp_path).strip() == (
        f"deepbandits {VERSION}"
    )
    listing = run(venv / "bin/deepbandits", "reproduce", "--list", cwd=tmp_path)
    assert all(c.removesuffix(".toml") in listing for c in CONFIGS)

    demo_help = run(venv / "bin/deepbandits", "demo", "--help", cwd=tmp_path)
    if "--quick" in demo_help:
        command = ["demo", "--quick", "--out", "demo"]
        out = tmp_path / "demo"
    else:  # the smallest experiment of the paper, from the configs inside the wheel
        command = ["reproduce", "linear", "--quick", "--jobs", "1", "--out", "linear"]
        out = tmp_path / "linear"
    run(venv / "bin/deepbandits", *command, cwd=tmp_path)
    assert (out / "report" / "index.html").is_file()
    assert list(out.rglob("seed_*.json"))
