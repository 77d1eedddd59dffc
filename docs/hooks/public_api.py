"""The public API that the reference documents, and the check that each public name has a
docstring.

Public means: the names in ``deepbandits.__all__`` and in the ``__all__`` of each documented
subpackage (:data:`MODULES`); ``deepbandits.client`` has no ``__all__``, so its public names are
the classes and functions it defines without a leading underscore. A name is documented on the
page of the first subpackage that exports it (``deepbandits.run`` on the page of
``deepbandits.experiments``); the top-level page documents the rest and links to the others.

Used by the MkDocs hook ``docs/hooks/reference.py`` (which fails the build on a missing
docstring) and by ``tests/test_docs.py`` (which runs the same check without building).
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from types import ModuleType
from typing import Any

#: page slug (``reference/<slug>.md``) -> module; the order decides where a name re-exported by
#: several modules is documented (the first subpackage that exports it, the top level last).
MODULES: dict[str, str] = {
    "policies": "deepbandits.policies",
    "parts": "deepbandits.policies.parts",
    "envs": "deepbandits.envs",
    "datasets": "deepbandits.datasets",
    "experiments": "deepbandits.experiments",
    "metrics": "deepbandits.metrics",
    "plotting": "deepbandits.plotting",
    "report": "deepbandits.report",
    "ope": "deepbandits.ope",
    "serve": "deepbandits.serve",
    "client": "deepbandits.client",
    "linalg": "deepbandits.linalg",
    "networks": "deepbandits.networks",
    "errors": "deepbandits.errors",
    "deepbandits": "deepbandits",
}


@dataclass(frozen=True)
class Entry:
    """One public name: where it is exported, the object, and the page that documents it."""

    module: str
    name: str
    obj: Any
    page: str

    @property
    def identifier(self) -> str:
        """The mkdocstrings identifier (and HTML anchor) of the entry."""
        return f"{self.module}.{self.name}"


def public_names(module: ModuleType) -> list[str]:
    """``module.__all__``, or for a module without one, the classes and functions it defines
    whose names do not start with an underscore."""
    names = getattr(module, "__all__", None)
    if names is not None:
        return [n for n in names if not n.startswith("__")]
    return [
        n
        for n, obj in vars(module).items()
        if not n.startswith("_")
        and (inspect.isclass(obj) or inspect.isfunction(obj))
        and getattr(obj, "__module__", None) == module.__name__
    ]


def is_recipe(obj: Any) -> bool:
    """A policy registry entry (``LinUCB``, ...): an instance documented by its ``doc``."""
    return type(obj).__name__ == "Recipe" and isinstance(getattr(obj, "doc", None), str)


def own_docstring(obj: Any) -> str | None:
    """The docstring written for ``obj`` itself (not inherited, not generated), or None.

    Classes: their own ``__doc__`` only (``inspect.getdoc`` would return a base class's), and
    not the ``Name(field: type, ...)`` line that ``dataclasses`` generates. Registry recipes:
    their ``doc``. Other data (constants, mappings) carry no docstring of their own and give
    None: they are documented by their module's docstring, and :func:`undocumented` skips them.
    """
    if is_recipe(obj):
        return obj.doc.strip() or None
    if inspect.isclass(obj):
        doc = obj.__dict__.get("__doc__")
        if doc and doc.startswith(f"{obj.__name__}(") and hasattr(obj, "__dataclass_fields__"):
            return None
        return inspect.cleandoc(doc) if doc and doc.strip() else None
    if inspect.ismodule(obj) or callable(obj):
        doc = getattr(obj, "__doc__", None)
        return inspect.cleandoc(doc) if doc and doc.strip() else None
    return None


def needs_docstring(obj: Any) -> bool:
    """Classes, functions, modules and registry recipes must have a docstring; data need not."""
    return is_recipe(obj) or inspect.isclass(obj) or inspect.ismodule(obj) or callable(obj)


def entries() -> list[Entry]:
    """Every public name once, on the page that documents it (see the module notes)."""
    seen: dict[int, Entry] = {}  # id of an object -> its first entry
    result: list[Entry] = []
    for page, module_name in MODULES.items():
        module = importlib.import_module(module_name)
        for name in public_names(module):
            obj = getattr(module, name)
            if id(obj) in seen and seen[id(obj)].name == name:
                continue  # re-exported: documented where it was first met
            entry = Entry(module_name, name, obj, page)
            seen.setdefault(id(obj), entry)
            result.append(entry)
    return result


def exported(module_name: str) -> list[tuple[str, Any]]:
    """``(name, object)`` of every public name of ``module_name``, in its ``__all__`` order."""
    module = importlib.import_module(module_name)
    return [(n, getattr(module, n)) for n in public_names(module)]


def undocumented() -> list[str]:
    """``module.name`` of every public name that needs a docstring and has none."""
    missing = []
    for module_name in MODULES.values():
        for name, obj in exported(module_name):
            if needs_docstring(obj) and own_docstring(obj) is None:
                missing.append(f"{module_name}.{name}")
    return missing
