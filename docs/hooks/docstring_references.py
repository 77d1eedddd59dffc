"""MkDocs hook and check: every cross-reference in the package's docstrings and comments, and
every ``deepbandits.…`` name in the written pages, names something that exists.

The docstrings (and the ``#:`` comments of module data) name other code with Sphinx roles,
``:class:`~deepbandits.policies.Policy``` and the like. The site renders them as code, linked to
their entry when the reference documents one (``docs/hooks/reference.py``), and plain otherwise:
a role whose target was renamed or removed would render without a word of warning. This module
finds such roles:

- :func:`unresolved` reads every ``.py`` file of the package (its strings, docstrings among
  them, and its comments), extracts each role's target and resolves it; the targets it cannot
  resolve come back as :class:`Problem` (file, line, the class or function whose text holds
  the role, the target, and what the package has of that name);
- :func:`check_text` does the same for one docstring, as if it stood in a given module (the
  test shows with it that a wrong target is caught);
- :func:`unresolved_in_pages` checks the code spans of the written pages that are a dotted
  ``deepbandits.…`` name (autorefs already warns on a ``[text][identifier]`` it cannot map);
- ``on_config`` logs each problem as a warning, which fails ``mkdocs build --strict``;
  ``tests/test_docstring_references.py`` runs the same checks without building the site.

A target resolves (as Sphinx's Python domain would, plus the names the module imports) when one
of these names an object that imports, or a member that a class declares:

- first ``~`` (show the last part) and ``!`` (no link) prefixes, a ``()`` suffix, the
  ``Title <target>`` form and line breaks inside the backticks (with the ``#:`` of a comment)
  are stripped;
- ``.name`` (a leading dot): ``name`` relative to the module, then to each package above it;
- ``name``: in the enclosing classes (innermost first), in the module, through a name the
  module imports (``TYPE_CHECKING`` and function-level imports included), as an absolute path,
  or a builtin.

A class's members include, besides its attributes, what it declares without a class-level value:
annotations (dataclass and pydantic fields), ``__slots__`` and the ``self.name = ...`` of its
methods, in it or its bases. A role inside an inline literal (``:class:`~a.b.C```) is an
example, not a reference. A role the renderer does not know (``:cls:``, a typo) is a problem
too: it would be left as text. When a module fails to import, the roles whose resolution needs
it are reported together under that failure, not as wrong targets.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import importlib.util
import inspect
import io
import re
import sys
import tokenize
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: the roles the renderer understands (``docs/hooks/reference.py``), ``:py:`` prefix optional
ROLES = frozenset({"func", "class", "meth", "mod", "data", "attr", "exc", "obj", "const"})
#: a role, ``:name:`content```, whose content may run over lines (and comment markers)
ROLE = re.compile(r":(?:py:)?([a-z]+):`([^`]+)`")
#: the package checked, and its sources
PACKAGE = "deepbandits"
SOURCES = Path(__file__).resolve().parents[2] / "src" / PACKAGE


@dataclass(frozen=True)
class Problem:
    """One role whose target does not resolve."""

    path: str  #: the file, relative to the repository (or ``<string>``)
    line: int  #: where the role starts
    module: str  #: the dotted module
    owner: str  #: qualified name of the class or function whose text holds it, or ``<module>``
    role: str
    target: str  #: as written between the backticks
    reason: str = "does not resolve"

    def __str__(self) -> str:
        where = "" if self.owner == "<module>" else f".{self.owner}"
        written = f":{self.role}:`{self.target}`" if self.role else f"`{self.target}`"
        inside = f" in {self.module}{where}" if self.module else ""
        return f"{self.path}:{self.line}:{inside}: {written} {self.reason}"


# --------------------------------------------------------------------------------------------
# reading targets


def clean_target(content: str) -> str:
    """The dotted name a role's content points to: without line breaks (and the ``#:`` of a
    continued comment), the title of ``Title <target>``, ``~``/``!`` prefixes and ``()``."""
    text = re.sub(r"\s*\n\s*(?:#:?)?\s*", " ", content).strip()
    titled = re.fullmatch(r".*<([^<>]+)>", text, re.DOTALL)
    if titled:
        text = titled.group(1)
    text = re.sub(r"\s+", "", text).lstrip("~!")
    return text.removesuffix("()")


def roles(text: str) -> Iterator[tuple[int, str, str]]:
    """``(offset, role, content)`` of every role in ``text``."""
    for match in ROLE.finditer(text):
        yield match.start(), match.group(1), match.group(2)


# --------------------------------------------------------------------------------------------
# resolving targets


#: dotted name -> why it could not be looked at: a module that exists but fails to import, or
#: an attribute whose lookup fails with something else than AttributeError (a lazily loaded
#: name whose module fails)
BROKEN: dict[str, str] = {}


@functools.cache
def _import(name: str) -> Any:
    """The module ``name``, or None when there is none or it fails to import (then noted in
    :data:`BROKEN`); never a ``__main__``."""
    if "__main__" in name.split("."):
        return None
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        missing = error.name or ""
        if missing and (name == missing or name.startswith(missing + ".")):
            return None  # no such module (or package above it): not a module path
        BROKEN[name] = f"{type(error).__name__}: {error}"
    except Exception as error:  # the module is there, but raises when imported
        BROKEN[name] = f"{type(error).__name__}: {error}"
    return None


@functools.cache
def _parsed(path: str) -> ast.Module | None:
    try:
        return ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None


@functools.cache
def _assigned_in(path: str) -> dict[str, frozenset[str]]:
    """Class name -> the names its methods assign as ``self.name``, for a source file."""
    tree = _parsed(path)
    found: dict[str, set[str]] = {}
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.ClassDef):
            names = found.setdefault(node.name, set())
            for sub in ast.walk(node):
                if (
                    isinstance(sub, ast.Attribute)
                    and isinstance(sub.ctx, ast.Store)
                    and isinstance(sub.value, ast.Name)
                    and sub.value.id == "self"
                ):
                    names.add(sub.attr)
    return {name: frozenset(names) for name, names in found.items()}


def _self_attributes(cls: type) -> frozenset[str]:
    """The names a class's methods assign as ``self.name`` (from its source)."""
    try:
        path = inspect.getsourcefile(cls)
    except TypeError:  # a builtin
        return frozenset()
    return _assigned_in(path).get(cls.__name__, frozenset()) if path else frozenset()


def declares(cls: type, name: str) -> bool:
    """Whether ``cls`` (or a base) declares ``name`` without a class-level value: an annotation,
    a dataclass or pydantic field, a slot, a ``self.name = ...``."""
    for klass in inspect.getmro(cls):
        if klass is object:
            continue
        slots = klass.__dict__.get("__slots__", ())
        slots = (slots,) if isinstance(slots, str) else slots
        if (
            name in inspect.get_annotations(klass)
            or name in getattr(klass, "__dataclass_fields__", {})
            or name in (getattr(klass, "model_fields", None) or {})
            or name in slots
            or name in _self_attributes(klass)
        ):
            return True
    return False


def _member(obj: Any, name: str) -> tuple[bool, Any]:
    """``(found, value)`` of ``obj.name``; a declared-only member is found with value None."""
    try:
        return True, getattr(obj, name)
    except AttributeError:
        pass
    except Exception as error:  # a lazily loaded name whose module fails, say
        owner = getattr(obj, "__name__", type(obj).__name__)
        BROKEN[f"{owner}.{name}"] = f"{type(error).__name__}: {error}"
    if inspect.ismodule(obj):
        sub = _import(f"{obj.__name__}.{name}")
        if sub is not None:
            return True, sub
        if name in getattr(obj, "__annotations__", {}):
            return True, None
    if inspect.isclass(obj) and declares(obj, name):
        return True, None
    return False, None


@functools.cache
def lookup(path: str) -> bool:
    """Whether the dotted ``path`` names something: a module, or the longest prefix that
    imports, then an attribute (or declared member) per remaining part."""
    parts = path.split(".")
    if not all(p.isidentifier() for p in parts):
        return False
    try:  # a module: found without running it (its package is imported, not the module)
        if "__main__" not in parts and importlib.util.find_spec(path) is not None:
            return True
    except Exception:  # not a module (or its package fails: the import below says why)
        pass
    for i in range(len(parts), 0, -1):
        obj = _import(".".join(parts[:i]))
        if obj is None:
            continue
        for name in parts[i:]:
            if obj is None:  # a declared-only member has no members to look in
                return False
            found, obj = _member(obj, name)
            if not found:
                return False
        return True
    return False


def imports_of(tree: ast.Module, module: str, package: bool) -> dict[str, str]:
    """Local name -> dotted path of every import in a module (``TYPE_CHECKING`` and
    function-level imports included); ``package``: the module is a package's ``__init__``."""
    names: dict[str, str] = {}
    here = module if package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    head = alias.name.split(".")[0]
                    names[head] = head
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = here.split(".")
                anchor = parts[: len(parts) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                if alias.name != "*":
                    names[alias.asname or alias.name] = f"{base}.{alias.name}"
    return names


def candidates(
    target: str, module: str, scope: tuple[str, ...], imports: dict[str, str]
) -> list[str]:
    """The dotted paths a target may mean, seen from ``module`` inside the classes ``scope``."""
    if target.startswith("."):
        rest = target.lstrip(".")
        parts = module.split(".")
        return [".".join([*parts[:i], rest]) for i in range(len(parts), 0, -1)]
    found = [".".join([module, *scope[:i], target]) for i in range(len(scope), -1, -1)]
    head, _, tail = target.partition(".")
    if head in imports:
        found.append(imports[head] + (f".{tail}" if tail else ""))
    found.append(target)
    if hasattr(builtins, head):
        found.append(f"builtins.{target}")
    return found


def resolves(
    target: str, module: str, scope: tuple[str, ...] = (), imports: dict[str, str] | None = None
) -> tuple[bool, str | None]:
    """Whether a cleaned target names something, seen from ``module`` inside ``scope``; when
    not, and a module on the way failed to import, why (the target could not be checked)."""
    if not target:
        return False, None
    paths = candidates(target, module, scope, imports or {})
    if any(lookup(p) for p in paths):
        return True, None
    for path in paths:
        parts = path.split(".")
        for i in range(1, len(parts) + 1):
            prefix = ".".join(parts[:i])
            if prefix in BROKEN:
                return False, f"{prefix} fails to import ({BROKEN[prefix]})"
    return False, None


# --------------------------------------------------------------------------------------------
# walking sources


def _scopes(tree: ast.Module) -> list[tuple[int, int, str, tuple[str, ...]]]:
    """``(first line, last line, qualified name, enclosing classes)`` of every class and
    function, outer ones first; the classes are the run of classes from the module down (a
    class inside a function has none: its members are not reachable by a dotted name)."""
    found: list[tuple[int, int, str, tuple[str, ...]]] = []

    def visit(node: ast.AST, qual: tuple[str, ...], classes: tuple[str, ...] | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                name = (*qual, child.name)
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                is_class = isinstance(child, ast.ClassDef)
                inner = (*classes, child.name) if is_class and classes is not None else None
                # a function's own docstring is seen from its class
                scope = inner if is_class else classes
                found.append((first, child.end_lineno or child.lineno, ".".join(name), scope or ()))
                visit(child, name, inner if is_class else None)
            else:
                visit(child, qual, classes)

    visit(tree, (), ())
    return found


#: an inline literal (text between double backquotes): a role inside one is an example, not
#: a reference
LITERAL = re.compile(r"``(?!`).*?``(?!`)", re.DOTALL)


def _blank_literals(text: str) -> str:
    """``text`` with its inline literals blanked (same length, same lines)."""
    return LITERAL.sub(lambda m: re.sub(r"[^\n]", " ", m[0]), text)


def texts(source: str) -> Iterator[tuple[int, str]]:
    """``(first line, text)`` of every string (docstrings among them) and every run of comments
    on consecutive lines in a Python source; the whole source when it does not tokenize."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        yield 1, source
        return
    comments: list[tokenize.TokenInfo] = []
    for token in tokens:
        if token.type == tokenize.COMMENT:
            if comments and token.start[0] != comments[-1].start[0] + 1:
                yield comments[0].start[0], "\n".join(c.string for c in comments)
                comments = []
            comments.append(token)
        elif token.type == tokenize.STRING:
            yield token.start[0], token.string
    if comments:
        yield comments[0].start[0], "\n".join(c.string for c in comments)


def _check(
    text: str,
    first_line: int,
    module: str,
    path: str,
    scopes: list[tuple[int, int, str, tuple[str, ...]]],
    imports: dict[str, str],
) -> list[Problem]:
    """The problems of one text (a string or a run of comments) starting at ``first_line``."""
    problems = []
    text = _blank_literals(text)
    for offset, role, content in roles(text):
        line = first_line + text.count("\n", 0, offset)
        inside = [s for s in scopes if s[0] <= line <= s[1]]
        owner, scope = (inside[-1][2], inside[-1][3]) if inside else ("<module>", ())
        shown = re.sub(r"\s*\n\s*(?:#:?)?\s*", " ", content).strip()
        if role not in ROLES:
            reason = "is not a role the site renders (" + ", ".join(sorted(ROLES)) + ")"
            problems.append(Problem(path, line, module, owner, role, shown, reason))
        else:
            found, broken = resolves(clean_target(content), module, scope, imports)
            if broken:
                reason = f"cannot be checked: {broken}"
                problems.append(Problem(path, line, module, owner, role, shown, reason))
            elif not found:
                problems.append(Problem(path, line, module, owner, role, shown, _reason(content)))
    return problems


def check_source(
    source: str, module: str, path: str = "<string>", package: bool = False
) -> list[Problem]:
    """The problems of one Python source, read as module ``module`` (``package``: a package's
    ``__init__``, for its relative imports; ``path``: how problems name the file): the roles
    in its strings and comments."""
    try:
        tree: ast.Module | None = ast.parse(source)
    except SyntaxError:
        tree = None
    scopes = _scopes(tree) if tree is not None else []
    imports = imports_of(tree, module, package) if tree is not None else {}
    problems = []
    for line, text in texts(source):
        problems += _check(text, line, module, path, scopes, imports)
    return sorted(problems, key=lambda p: p.line)


def check_text(
    text: str,
    module: str = PACKAGE,
    scope: tuple[str, ...] = (),
    imports: dict[str, str] | None = None,
) -> list[Problem]:
    """The problems of one docstring (or any text) as if it stood in ``module``, inside the
    classes ``scope``, with ``imports`` (local name -> dotted path) in the module."""
    owner = ".".join(scope) or "<module>"
    scopes = [(1, text.count("\n") + 1, owner, scope)] if scope else []
    return _check(text, 1, module, "<string>", scopes, imports or {})


# --------------------------------------------------------------------------------------------
# what a wrong target may have meant


@functools.cache
def index(root: Path = SOURCES) -> tuple[str, ...]:
    """The dotted name of everything the package's sources define at module and class level
    (read, not imported): the names a wrong target is compared with."""
    names = []
    for path in sorted(root.rglob("*.py")):
        tree = _parsed(str(path))
        if tree is None:
            continue
        module = module_name(path, root)
        names.append(module)

        def visit(body: list[ast.stmt], prefix: str) -> None:
            for node in body:
                if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                    names.append(f"{prefix}.{node.name}")
                    if isinstance(node, ast.ClassDef):
                        visit(node.body, f"{prefix}.{node.name}")
                elif isinstance(node, ast.Assign | ast.AnnAssign):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    names.extend(f"{prefix}.{t.id}" for t in targets if isinstance(t, ast.Name))

        visit(tree.body, module)
    return tuple(names)


def _package_root() -> Path:
    """The folder of the package as imported (the sources checked, or another copy)."""
    module = _import(PACKAGE)
    return Path(module.__file__).parent if module is not None else SOURCES


def suggestions(target: str) -> list[str]:
    """What a target that does not resolve may have meant: the same name under one of the
    package's packages where it resolves there, else the names the sources define that end
    like it (its last two parts, else its last)."""
    root = _package_root()
    name = target.lstrip(".")
    rest = name.removeprefix(f"{PACKAGE}.")
    packages = [module_name(p, root) for p in sorted(root.rglob("__init__.py"))]
    found = [f"{m}.{n}" for m in packages for n in dict.fromkeys((name, rest))]
    found = [path for path in found if lookup(path)]
    if found:
        return found
    parts = name.split(".")
    for tail in (parts[-2:], parts[-1:]) if len(parts) > 1 else (parts,):
        found = [n for n in index(root) if n.endswith("." + ".".join(tail))]
        if found:
            return found
    return []


def _reason(content: str) -> str:
    found = suggestions(clean_target(content))
    if not found:
        return "does not resolve"
    more = f" (and {len(found) - 3} more)" if len(found) > 3 else ""
    return "does not resolve; the package has " + ", ".join(found[:3]) + more


def module_name(path: Path, root: Path = SOURCES) -> str:
    """``deepbandits.policies.params`` for ``src/deepbandits/policies/params.py``."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def unresolved(root: Path = SOURCES) -> list[Problem]:
    """Every role in the package's ``.py`` files whose target does not resolve (or whose role
    the renderer does not know), in file and line order."""
    if str(root.parent) not in sys.path:
        sys.path.insert(0, str(root.parent))
    repo = root.parents[1]
    problems: list[Problem] = []
    with warnings.catch_warnings():  # what the modules imported warn of is not ours to show
        warnings.simplefilter("ignore")
        for path in sorted(root.rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            if ":`" not in text:
                continue
            shown = str(path.relative_to(repo)) if path.is_relative_to(repo) else str(path)
            package = path.name == "__init__.py"
            problems += check_source(text, module_name(path, root), shown, package)
    return problems


# --------------------------------------------------------------------------------------------
# the written pages


#: a Markdown code span that is a dotted name in the package: `` `deepbandits.envs.make_env` ``
CODE_NAME = re.compile(rf"(?<!`)`({PACKAGE}(?:\.[A-Za-z_]\w*)+)(?:\(\))?`(?!`)")
#: the documentation's pages
PAGES = Path(__file__).resolve().parents[1]


def check_markdown(text: str, path: str = "<string>") -> list[Problem]:
    """The code spans of a Markdown page that name ``deepbandits.<something>`` which does not
    exist (fenced code blocks are left alone: they are code, run or not)."""
    problems = []
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip()
        if stripped.startswith(("```", "~~~")):
            marker = stripped[:3]
            fence = None if fence == marker else (fence or marker)
            continue
        if fence:
            continue
        for match in CODE_NAME.finditer(line):
            found, broken = resolves(match.group(1), PACKAGE)
            if not found:
                reason = f"cannot be checked: {broken}" if broken else _reason(match.group(1))
                problems.append(Problem(path, number, "", "<module>", "", match.group(1), reason))
    return problems


def unresolved_in_pages(root: Path = PAGES) -> list[Problem]:
    """Every code span of the written pages (not ``generated/``) naming nothing that exists."""
    repo = root.parent
    problems: list[Problem] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for path in sorted(root.rglob("*.md")):
            if "generated" in path.relative_to(root).parts:
                continue
            shown = str(path.relative_to(repo)) if path.is_relative_to(repo) else str(path)
            problems += check_markdown(path.read_text(encoding="utf-8"), shown)
    return problems


# --------------------------------------------------------------------------------------------
# the MkDocs hook


def report(problems: list[Problem]) -> list[str]:
    """One line per problem; the roles that could not be checked because a module fails to
    import are counted under that failure, not listed one by one."""
    lines = []
    unchecked: dict[str, list[Problem]] = {}
    for problem in problems:
        if problem.reason.startswith("cannot be checked: "):
            unchecked.setdefault(problem.reason.removeprefix("cannot be checked: "), []).append(
                problem
            )
        else:
            lines.append(f"cross-reference that does not resolve: {problem}")
    for why, held in unchecked.items():
        files = len({p.path for p in held})
        lines.append(f"{len(held)} cross-references in {files} files cannot be checked: {why}")
    return lines


def on_config(config: Any) -> Any:
    """Log each unresolved role as a warning: ``mkdocs build --strict`` then fails. (Caches
    are cleared first, for ``mkdocs serve``; modules already imported stay as they were.)"""
    from mkdocs.plugins import get_plugin_logger

    for cached in (_import, _parsed, _assigned_in, lookup, index):
        cached.cache_clear()
    BROKEN.clear()
    log = get_plugin_logger("docstring_references")
    pages = Path(config["docs_dir"])
    for line in report(unresolved() + unresolved_in_pages(pages)):
        log.warning(line)
    return config
