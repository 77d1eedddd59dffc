"""MkDocs hook: the API reference, generated from the docstrings of every public name.

- ``on_config`` fails the build when a public name that needs a docstring has none
  (:func:`public_api.undocumented`), and puts the package's version in the site's name.
- ``on_files`` adds one page per documented module (``reference/<slug>.md``: the module's
  docstring, a table of its names, then a mkdocstrings entry per name), the index of
  ``deepbandits.__all__`` and the table of every policy's parameters, generated from the
  registry (:func:`deepbandits.policies.parameter_table`).
- ``on_page_content`` turns the Sphinx roles that the docstrings use (``:func:`~a.b```) into
  code, linked to the entry when the reference has one.
"""

from __future__ import annotations

import html
import importlib
import inspect
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import public_api  # a sibling file, not a package

#: identifier (the exported and the defining path of each entry, and its members) -> page URL
ANCHORS: dict[str, str] = {}
ROLE = re.compile(
    r":(?:py:)?(?:func|class|meth|mod|data|attr|exc|obj|const):<code>(~?)([^<]+)</code>"
)


def on_config(config: Any) -> Any:
    """Refuse to build with an undocumented public name; name the site with the version."""
    from mkdocs.exceptions import PluginError

    missing = public_api.undocumented()
    if missing:
        raise PluginError(
            "public names without a docstring (add one, or take the name out of __all__): "
            + ", ".join(missing)
        )
    version = importlib.import_module("deepbandits").__version__
    config["site_name"] = f"deepbandits {version}"
    return config


def summary(obj: Any) -> str:
    """The first sentence of an entry's docstring, for the tables (Markdown-safe)."""
    doc = public_api.own_docstring(obj) or ""
    first = doc.split("\n\n")[0].replace("\n", " ").strip()
    first = re.sub(r":(?:py:)?\w+:`~?([^`]+)`", r"`\1`", first)
    return first.replace("|", "\\|")


def kind(obj: Any) -> str:
    """class, function, module, policy recipe or data: the table's second column."""
    if public_api.is_recipe(obj):
        return "policy recipe"
    if inspect.isclass(obj):
        return "exception" if issubclass(obj, BaseException) else "class"
    if inspect.ismodule(obj):
        return "module"
    return "function" if callable(obj) else "data"


def page_url(slug: str) -> str:
    """The URL of ``reference/<slug>.md`` with directory URLs."""
    return "reference/" if slug == "index" else f"reference/{slug}/"


def register(entry: public_api.Entry) -> None:
    """Record the anchors the entry's page will have: its identifier, its defining path and,
    for a class, its public members."""
    url = page_url(entry.page)
    ANCHORS[entry.identifier] = url
    obj = entry.obj
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if module and qualname and (inspect.isclass(obj) or inspect.isfunction(obj)):
        ANCHORS.setdefault(f"{module}.{qualname}", url)
    if inspect.isclass(obj):
        for member in vars(obj):
            if not member.startswith("_"):
                ANCHORS.setdefault(f"{entry.identifier}.{member}", url)
                if module and qualname:
                    ANCHORS.setdefault(f"{module}.{qualname}.{member}", url)


def entry_markdown(entry: public_api.Entry) -> str:
    """The mkdocstrings directive of one entry, with what a recipe or a module needs."""
    obj = entry.obj
    if inspect.ismodule(obj):
        slug = next(s for s, m in public_api.MODULES.items() if m == obj.__name__)
        return (
            f"## `{entry.identifier}` {{ #{entry.identifier} }}\n\n"
            f"The module [`{obj.__name__}`]({slug}.md).\n"
        )
    text = f"::: {entry.identifier}\n"
    if public_api.is_recipe(obj):
        text += (
            f"\n{obj.doc}. Registry name `{obj.name}`: calling it builds that policy "
            f'(`{entry.name}(alpha=0.1)` is `make_policy("{obj.name}", alpha=0.1)`); its '
            f"keywords are in [Policy parameters](policy-parameters.md#{obj.name}).\n"
        )
    return text


def module_page(slug: str, module_name: str, entries: list[public_api.Entry]) -> str:
    """``reference/<slug>.md``: the module's docstring, a table of its names, their entries."""
    mine = [e for e in entries if e.page == slug]
    others = [
        (n, o)
        for n, o in public_api.exported(module_name)
        if not any(e.name == n and e.obj is o for e in mine)
    ]
    lines = [
        f"# `{module_name}`\n",
        f"::: {module_name}\n    options:\n      members: false\n      show_root_heading: false\n",
        "| name | kind | summary |",
        "|---|---|---|",
    ]
    for e in mine:
        lines.append(f"| [`{e.name}`](#{e.identifier}) | {kind(e.obj)} | {summary(e.obj)} |")
    for name, obj in others:
        home = next(e for e in entries if e.obj is obj and e.page != slug)
        target = f"{home.page}.md#{home.identifier}"
        lines.append(f"| [`{name}`]({target}) | {kind(obj)} | {summary(obj)} |")
    lines.append("")
    lines.extend(entry_markdown(e) for e in mine)
    return "\n".join(lines)


def index_page(entries: list[public_api.Entry]) -> str:
    """``reference/index.md``: every name of ``deepbandits.__all__`` and where it is."""
    lines = [
        "# API reference\n",
        "Generated from the numpy-style docstrings of every public name: the names in "
        "`deepbandits.__all__` (below) and in the `__all__` of each subpackage (one page each, "
        "in the menu). `make docs` fails when one of them has no docstring.\n",
        "| `import deepbandits as db` | kind | summary |",
        "|---|---|---|",
    ]
    for name, obj in public_api.exported("deepbandits"):
        home = next((e for e in entries if e.obj is obj), None)
        if home is None:  # data: documented where it is defined
            lines.append(f"| `db.{name}` | {kind(obj)} | {summary(obj)} |")
            continue
        lines.append(
            f"| [`db.{name}`]({home.page}.md#{home.identifier}) | {kind(obj)} | {summary(obj)} |"
        )
    return "\n".join(lines) + "\n"


def parameters_page() -> str:
    """``reference/policy-parameters.md``: each registry name's keywords, from the registry."""
    policies = importlib.import_module("deepbandits.policies")
    lines = [
        "# Policy parameters\n",
        "Every keyword of every registry name, with its default, type and range, as "
        "`deepbandits list --params NAME` prints them (declared once, in "
        "`deepbandits/policies/params.py`).\n",
        "Named configurations (settings of a registry name):\n",
        "| configuration | equals |",
        "|---|---|",
    ]
    for name, (base, params) in policies.CONFIGURATIONS.items():
        spec = base + ":" + ",".join(f"{key}={value}" for key, value in params.items())
        lines.append(f"| `{name}` | `{spec}` |")
    for name, recipe in policies.POLICIES.items():
        lines += [f"\n## `{name}` {{ #{name} }}\n", f"{recipe.doc}.\n"]
        lines += ["| keyword | default | type and range | meaning |", "|---|---|---|---|"]
        for key, default, kind_, doc in policies.parameter_table(name):
            cells = (f"`{key}`", f"`{default}`", kind_, doc)
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def pages() -> dict[str, str]:
    """``{slug: markdown}`` of every generated reference page (and the anchors they hold)."""
    entries = public_api.entries()
    ANCHORS.clear()
    for entry in entries:
        register(entry)
    result = {"index": index_page(entries), "policy-parameters": parameters_page()}
    for slug, module_name in public_api.MODULES.items():
        result[slug] = module_page(slug, module_name, entries)
    return result


def on_files(files: Any, config: Any) -> Any:
    """Add the generated reference pages."""
    from mkdocs.structure.files import File

    for slug, content in pages().items():
        files.append(File.generated(config, f"reference/{slug}.md", content=content))
    return files


def resolve(target: str) -> str | None:
    """The identifier of the reference entry a role's target names, if there is one: the
    target itself, or the one documented entry whose identifier ends with ``.target``."""
    if target in ANCHORS:
        return target
    matches = [i for i in ANCHORS if i.endswith("." + target)]
    return matches[0] if len(matches) == 1 else None


def on_page_content(content: str, page: Any, config: Any, files: Any) -> str:
    """Sphinx roles in rendered docstrings: code, linked to their entry where there is one."""
    from mkdocs.utils import get_relative_url

    def replace(match: re.Match[str]) -> str:
        tilde, target = match.group(1), html.unescape(match.group(2)).strip("()")
        shown = target.rsplit(".", 1)[-1] if tilde else target
        code = f"<code>{html.escape(shown)}</code>"
        identifier = resolve(target)
        if identifier is None:
            return code
        href = get_relative_url(ANCHORS[identifier], page.url) + "#" + identifier
        return f'<a href="{html.escape(href)}">{code}</a>'

    return ROLE.sub(replace, content)
