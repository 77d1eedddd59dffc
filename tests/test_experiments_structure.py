"""The shape of deepbandits.experiments (issue 47, item 6): the library's own errors (and the
command line taking only those for the user's mistakes), one config model per kind told apart by
``kind``, and ``tune`` as small functions."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Annotated, Literal, get_args, get_origin

import pytest

from deepbandits.cli import experiments as experiment_commands
from deepbandits.cli import main
from deepbandits.errors import InputValueError
from deepbandits.experiments.config import (
    ExperimentConfig,
    LatencyConfig,
    LatencyFile,
    MatchedConfig,
    MatchedFile,
    SweepConfig,
    SweepFile,
)
from deepbandits.experiments.config.model import ConfigFileOfAnyKind

EXPERIMENTS = Path(__file__).parent.parent / "src" / "deepbandits" / "experiments"
#: Not part of this package's issue; its raises are listed in the issue's report.
OTHERS = {EXPERIMENTS / "runner.py"}
SOURCES = sorted(p for p in EXPERIMENTS.rglob("*.py") if p not in OTHERS)
#: The most lines of code (its docstring aside) a function of ``tune`` may have.
LONGEST = 60


def _raised(path: Path) -> list[tuple[int, str]]:
    """``(line, name)`` of every ``raise Name(...)`` / ``raise Name`` of ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(exc, ast.Name):
                found.append((node.lineno, exc.id))
    return found


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(EXPERIMENTS)))
def test_experiments_raise_the_library_errors(path: Path) -> None:
    """A bare ValueError or RuntimeError would read as a user's mistake (or hide one): the
    library's types say which (:mod:`deepbandits.errors`)."""
    bare = [(line, name) for line, name in _raised(path) if name in ("ValueError", "RuntimeError")]
    assert not bare, f"{path}: {bare}"


def _members(union: object) -> tuple[tuple[type, ...], str | None]:
    """The members of an ``Annotated[A | B | ..., Field(discriminator=...)]`` and its key."""
    assert get_origin(union) is Annotated
    inner, *metadata = get_args(union)
    discriminator = next(m.discriminator for m in metadata if hasattr(m, "discriminator"))
    return get_args(inner), discriminator


@pytest.mark.parametrize(
    ("union", "models"),
    [
        (ExperimentConfig, (SweepConfig, LatencyConfig, MatchedConfig)),
        (ConfigFileOfAnyKind, (SweepFile, LatencyFile, MatchedFile)),
    ],
)
def test_a_config_is_a_union_of_one_model_per_kind(union: object, models: tuple[type]) -> None:
    members, discriminator = _members(union)
    assert members == models and discriminator == "kind"
    kinds = []
    for model in members:
        kind = model.model_fields["kind"].annotation  # type: ignore[attr-defined]
        assert get_origin(kind) is Literal and len(get_args(kind)) == 1, model
        kinds += get_args(kind)
        assert "options" not in model.model_fields, f"{model.__name__} has an options bag"  # type: ignore[attr-defined]
    assert kinds == ["sweep", "latency", "matched"]


def _is_text(node: ast.expr) -> bool:
    """A string constant, or a tuple, list or set of them."""
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return bool(node.elts) and all(_is_text(e) for e in node.elts)
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


@pytest.mark.parametrize(
    "path",
    [
        EXPERIMENTS / "reproduce.py",
        *sorted((EXPERIMENTS / "config").glob("*.py")),
        EXPERIMENTS.parent / "cli" / "experiments.py",
    ],
    ids=lambda p: p.name,
)
def test_nothing_branches_on_a_kind_string(path: Path) -> None:
    """The model's type (or a method of it) says what a kind does, not ``config.kind == ...``."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            kind = any(isinstance(o, ast.Attribute) and o.attr == "kind" for o in operands)
            assert not (kind and any(map(_is_text, operands))), f"{path}:{node.lineno}"


def _code_lines(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines of ``function`` from its first statement after the docstring to its end."""
    body = function.body
    has_docstring = ast.get_docstring(function) is not None and len(body) > 1
    first = body[1] if has_docstring else body[0]
    return function.end_lineno - first.lineno + 1  # type: ignore[operator]


def test_tune_is_made_of_small_functions() -> None:
    tree = ast.parse((EXPERIMENTS / "tune" / "__init__.py").read_text(encoding="utf-8"))
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    assert {"tune", "_plan", "_objective", "_run_trials"} <= {f.name for f in functions}
    long = {f.name: _code_lines(f) for f in functions if _code_lines(f) > LONGEST}
    assert not long, long


@pytest.mark.parametrize(
    ("raised", "status", "start"),
    [
        (InputValueError("seeds and T override a sweep's"), 2, "deepbandits: error: seeds"),
        (ValueError("a bare one"), 1, "deepbandits: internal error: ValueError: a bare one"),
        (TypeError("a bare one"), 1, "deepbandits: internal error: TypeError: a bare one"),
    ],
)
def test_the_command_line_takes_only_the_library_errors_for_the_users_mistakes(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    raised: Exception,
    status: int,
    start: str,
) -> None:
    """A bare ``ValueError`` out of experiments code is a bug, reported as one (exit 1)."""

    def run_experiment(*args: object, **kwargs: object) -> None:
        raise raised

    monkeypatch.setattr(experiment_commands, "run_experiment", run_experiment)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    argv = ["reproduce", "linear", "--out", str(tmp_path / "out"), "--no-progress"]
    assert main(argv) == status
    assert capsys.readouterr().err.startswith(start)
