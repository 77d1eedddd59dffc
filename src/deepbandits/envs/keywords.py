"""The keywords an environment's registry name accepts, with their defaults, types and meanings,
read from the signatures and numpydoc docstrings of the functions that take them
(``deepbandits list --params h1``, ``--params table``).

What :func:`~deepbandits.envs.make_env` accepts for a name is its factory's keywords and, for
the classification bandits, the constructor's of
:class:`~deepbandits.envs.classification.ClassificationEnv` (without ``X`` and ``y``); each
keyword is described where it is documented: the factory, ``read_table``
(:mod:`deepbandits.datasets.table`), :func:`~deepbandits.datasets.load_dataset` or the class.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable
from typing import Any

from deepbandits.datasets import load_dataset
from deepbandits.datasets.table import read_table
from deepbandits.envs.classification import ClassificationEnv

#: ``name : type`` at the start of a numpydoc parameter entry (several names may share one).
ENTRY = re.compile(r"^(?P<names>\*{0,2}\w+(?:,\s*\*{0,2}\w+)*)\s*(?::\s*(?P<type>.*))?$")


def documented(functions: Iterable[Callable[..., Any]]) -> dict[str, tuple[str, str]]:
    """``{keyword: (type, first sentence)}`` from the Parameters sections of ``functions``'
    numpydoc docstrings; the first function that documents a keyword wins."""
    found: dict[str, tuple[str, str]] = {}
    for function in functions:
        lines = inspect.cleandoc(function.__doc__ or "").splitlines()
        if "Parameters" not in lines:
            continue
        entries: list[tuple[list[str], str, list[str]]] = []
        reading = False  # within the first paragraph of the latest entry
        for line in lines[lines.index("Parameters") + 2 :]:
            if line.strip() and set(line.strip()) == {"-"}:
                entries.pop()  # the line above is the next section's title, not an entry
                break
            if line and not line[0].isspace():
                match = ENTRY.match(line)
                names = [n.strip().lstrip("*") for n in match["names"].split(",")] if match else []
                entries.append((names, ((match and match["type"]) or "").strip(), []))
                reading = True
            elif line.strip() and reading and entries:
                entries[-1][2].append(line.strip())
            else:
                reading = False
        for names, kind, text in entries:
            for name in names:
                found.setdefault(name, (plain(kind), first_sentence(" ".join(text))))
    return found


def plain(text: str) -> str:
    """Docstring markup as plain text: ``:class:`~a.b.C``` → ``C``, double backquotes off."""
    text = re.sub(r":\w+:`~?([^`]+)`", lambda m: m[1].rsplit(".", 1)[-1], text)
    return text.replace("``", "")


def first_sentence(text: str, limit: int = 100) -> str:
    """The first sentence of ``text`` as plain text, cut at a word before ``limit``
    characters (with "…")."""
    sentence = re.split(r"\.\s+(?=[A-Z])", plain(text), maxsplit=1)[0].rstrip(".")
    if len(sentence) <= limit:
        return sentence
    return sentence[: sentence.rfind(" ", 0, limit)].rstrip(",;:") + " …"


def _signature_rows(
    functions: list[Callable[..., Any]], exclude: tuple[str, ...]
) -> list[inspect.Parameter]:
    """The keywords of ``functions`` in order, each once (``*args``/``**params`` left out)."""
    seen: dict[str, inspect.Parameter] = {}
    for function in functions:
        for name, p in inspect.signature(function).parameters.items():
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and name not in exclude:
                seen.setdefault(name, p)
    return list(seen.values())


def keyword_table(
    factory: Callable[..., Any], classification: bool
) -> list[tuple[str, str, str, str]]:
    """One row per keyword that ``make_env`` passes to ``factory`` (a registry entry, a
    ``functools.partial`` of one): keyword, default (``"required"`` when it has none), type and
    range, and meaning. ``classification``: the factory also passes the constructor's keywords
    of :class:`~deepbandits.envs.classification.ClassificationEnv` (``X`` and ``y`` aside,
    unless the factory is the class itself)."""
    target = getattr(factory, "func", factory)
    functions: list[Callable[..., Any]] = [factory]
    sources: list[Callable[..., Any]] = []
    if classification:
        functions.append(ClassificationEnv)
        sources += [read_table, load_dataset, ClassificationEnv]
    docs = documented([*sources, target])  # the factory's own "as in ..." entries come last
    exclude = () if target is ClassificationEnv else ("X", "y")
    rows = []
    for p in _signature_rows(functions, exclude=exclude):
        kind, meaning = docs.get(p.name, ("", ""))
        default = "required" if p.default is p.empty else repr(p.default)
        annotation = p.annotation if isinstance(p.annotation, str) else str(p.annotation)
        rows.append(
            (
                p.name,
                default,
                re.sub(r",?\s*default\s*=.*$", "", kind) or annotation,
                meaning or "–",
            )
        )
    return rows


__all__ = ["documented", "first_sentence", "keyword_table", "plain"]
