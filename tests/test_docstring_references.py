"""Every cross-reference of the package's docstrings and comments (``:class:`~a.b.C``` and the
other Sphinx roles) names something that exists, and so does every ``deepbandits.…`` code span of
the written pages: the check that ``make docs`` runs (``docs/hooks/docstring_references.py``),
here without building the site. Then the check itself: it does flag a wrong target."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

HOOKS = Path(__file__).resolve().parents[1] / "docs" / "hooks"


@pytest.fixture(scope="module")
def refs() -> ModuleType:
    """``docs/hooks/docstring_references.py`` (a folder of MkDocs hooks, not a package)."""
    name = "docs_hook_docstring_references"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, HOOKS / "docstring_references.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    return sys.modules[name]


def test_every_cross_reference_in_the_package_resolves(refs: ModuleType) -> None:
    problems = refs.unresolved()
    assert not problems, "\n" + "\n".join(refs.report(problems))


def test_every_package_name_in_the_pages_exists(refs: ModuleType) -> None:
    problems = refs.unresolved_in_pages()
    assert not problems, "\n" + "\n".join(refs.report(problems))


# --------------------------------------------------------------------------------------------
# the check finds what it should, and only that


@dataclass
class Fixture:
    """A class whose members are declared without a class-level value."""

    field: int  # a dataclass field without a default: no class attribute

    def method(self) -> None:
        setattr(self, "assigned", 1)  # noqa: B010 (not a ``self.x = ...``: not declared)

    def reset(self) -> None:
        self.declared = 0  # a ``self.x = ...``: declared


def targets(problems: list) -> list[str]:
    return [p.target for p in problems]


def test_a_wrong_target_is_flagged(refs: ModuleType) -> None:
    docstring = """The policy (:class:`~deepbandits.policies.Policy`) decides
    (:meth:`~deepbandits.policies.base.Policy.decide`), as :class:`NeuralLinearBandit` did, with
    :func:`~deepbandits.policies.params.check_param` and a :clas:`Policy` typo."""
    problems = refs.check_text(docstring, "deepbandits.policies.decision")
    assert targets(problems) == [
        "~deepbandits.policies.base.Policy.decide",
        "NeuralLinearBandit",
        "Policy",
    ]
    assert "not a role" in problems[-1].reason
    assert all(p.line in (2, 3) for p in problems)
    # the message says where the name went, when the package still has it
    wrong = refs.check_text(":class:`Trainer`", "deepbandits.envs")
    assert "deepbandits.policies.parts.Trainer" in wrong[0].reason


def test_what_the_module_sees_resolves(refs: ModuleType) -> None:
    here = __name__
    ok = [
        # the module's own names and imports, a builtin, an absolute path, a module
        (":class:`Fixture` :func:`targets` :class:`Path` :exc:`ValueError`", here, ()),
        (":mod:`deepbandits.serve` :func:`~deepbandits.make_env()`", here, ()),
        # relative to the module's package (Sphinx's leading dot)
        (":class:`~.parts.trainer.Trainer`", "deepbandits.policies.ridge_ucb", ()),
        # members: a method, from inside the class, a dataclass field, a self.x = ...
        (":meth:`Fixture.method` :attr:`Fixture.field` :attr:`Fixture.declared`", here, ()),
        (":meth:`reset` :attr:`field`", here, ("Fixture",)),
        # the title form, and a target broken over lines of a comment
        (":meth:`Path.open <pathlib.Path.open>`", here, ()),
        ("#: see :data:`~deepbandits.policies.\n#: CONFIGURATIONS`", here, ()),
        # a role inside an inline literal is an example, not a reference
        ("``:class:`~a.b.C```", here, ()),
    ]
    for text, module, scope in ok:
        assert refs.check_text(text, module, scope) == [], text
    wrong = ":attr:`Fixture.assigned` :meth:`reset` :meth:`Fixture.field.real.nope`"
    assert targets(refs.check_text(wrong, here)) == [
        "Fixture.assigned",
        "reset",  # outside the class, a bare member name means nothing
        "Fixture.field.real.nope",
    ]


def test_a_source_is_read_with_its_owners_and_lines(refs: ModuleType) -> None:
    source = '''"""A module: :func:`helper` is fine, :func:`gone` is not."""

import json

#: a constant (:data:`LIMIT`; :func:`json.dumps`, :func:`json.nope`)
LIMIT = 3


def helper():
    """Uses :data:`LIMIT` and :class:`Missing`."""


class Holder:
    def method(self):
        """Calls :meth:`other` and :meth:`absent`."""

    def other(self):
        text = "``:func:`inside_a_literal```"
'''
    module = ModuleType("synthetic_refs")
    exec(compile(source, "synthetic_refs.py", "exec"), module.__dict__)
    sys.modules[module.__name__] = module
    try:
        problems = refs.check_source(source, module.__name__, "synthetic_refs.py")
    finally:
        del sys.modules[module.__name__]
    assert [(p.line, p.owner, p.target) for p in problems] == [
        (1, "<module>", "gone"),
        (5, "<module>", "json.nope"),
        (10, "helper", "Missing"),
        (15, "Holder.method", "absent"),
    ]
    assert str(problems[0]).startswith("synthetic_refs.py:1: in synthetic_refs: :func:`gone`")


def test_a_module_that_fails_to_import_is_reported_as_such(
    refs: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "refs_broken_fixture.py").write_text("raise RuntimeError('half-renamed')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    problems = refs.check_text(":class:`refs_broken_fixture.Thing`", "deepbandits")
    assert len(problems) == 1 and "cannot be checked" in problems[0].reason
    assert "half-renamed" in problems[0].reason
    assert refs.report(problems)[0].startswith("1 cross-references in 1 files cannot be checked")


def test_the_pages_check_flags_a_removed_name(refs: ModuleType) -> None:
    page = "See `deepbandits.policies.save`, `deepbandits.make_env()`.\n```\n`deepbandits.x`\n```\n"
    assert targets(refs.check_markdown(page)) == ["deepbandits.policies.save"]


def test_the_docs_build_runs_the_check() -> None:
    config = (HOOKS.parents[1] / "mkdocs.yml").read_text(encoding="utf-8")
    assert "  - docs/hooks/docstring_references.py\n" in config
