"""The error of a config file (:class:`ConfigError`), and how a pydantic validation error of
one becomes it: the file, the dotted key, what was expected (the ``description`` of the key's
type), what was given, and for an unknown key the closest known one."""

from __future__ import annotations

from difflib import get_close_matches
from pathlib import Path
from types import NoneType, UnionType
from typing import Annotated, Any, Literal, NoReturn, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

from deepbandits.errors import InputValueError


class ConfigError(InputValueError):
    """A config file that cannot be read, or a key of it that does not fit.

    Attributes
    ----------
    path : Path
        The file.
    key : str or None
        The dotted key (``run.policies[1]``, ``claims[0].than``); None for a file that is not
        readable TOML.
    line : int or None
        The line of a TOML syntax error.
    """

    def __init__(
        self,
        path: str | Path,
        key: str | None,
        expected: str,
        got: str,
        detail: str = "",
        line: int | None = None,
    ) -> None:
        self.path, self.key, self.line = Path(path), key, line
        self._args = (path, key, expected, got, detail, line)
        where = f"key '{key}'" if key is not None else f"line {line}" if line else "file"
        tail = f" ({detail})" if detail else ""
        super().__init__(f"{path}: {where}: expected {expected}, got {got}{tail}")

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), self._args


#: Marks a key that the file does not give.
MISSING = object()
#: Marks the value being validated as the part that does not fit.
_VALUE = object()


def show(value: Any) -> str:
    """A given value as an error message shows it (cut to 80 characters)."""
    if value is MISSING:
        return "nothing (the key is missing)"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def bad(
    expected: str = "", *, at: str = "", got: Any = _VALUE, detail: str = "", shown: str = ""
) -> NoReturn:
    """Refuse a value from inside a validator: ``expected`` (what would fit; empty: the
    ``description`` of the value's type), ``at`` the part of the value or the key below the
    validated one (``"[2]"``, ``".mnist"``, ``"checkpoints"``; empty: the value itself), ``got``
    the part that does not fit (default: the value; :data:`MISSING`: nothing), or ``shown``,
    the words that say what was given."""
    context = {"expected": expected, "at": at, "got": got, "detail": detail, "shown": shown}
    raise PydanticCustomError("config", "expected {expected}", context)


def _dotted(loc: tuple[str | int, ...]) -> str:
    key = ""
    for part in loc:
        key += f"[{part}]" if isinstance(part, int) else f".{part}" if key else str(part)
    return key


def _join(key: str, at: str) -> str:
    if not at:
        return key
    if at.startswith(("[", ".")) or not key:
        return f"{key}{at}".lstrip(".")
    return f"{key}.{at}"


def _bare(tp: Any) -> tuple[Any, FieldInfo]:
    """``tp`` without ``Annotated`` and ``| None``, and what its annotations say: the
    description (the outermost one; within one ``Annotated`` the last, as pydantic merges
    them) and the discriminator of a union."""
    said = FieldInfo()
    while True:
        if get_origin(tp) is Annotated:
            tp, *metadata = get_args(tp)
            infos = [m for m in metadata if isinstance(m, FieldInfo)]
            said.description = said.description or next(
                (i.description for i in reversed(infos) if i.description), None
            )
            said.discriminator = said.discriminator or next(
                (i.discriminator for i in infos if i.discriminator), None
            )
        elif get_origin(tp) in (Union, UnionType) and NoneType in get_args(tp):
            tp = Union[tuple(a for a in get_args(tp) if a is not NoneType)]  # noqa: UP007
        else:
            return tp, said


def _below(tp: Any, said: FieldInfo, part: str | int) -> Any:
    """The type of ``part`` inside a value of type ``tp``: a table's key, an array's item, the
    value (or with ``"[key]"`` the key) of a table of values, or a union's member by its tag."""
    args = get_args(tp)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        field = tp.model_fields.get(str(part))
        return None if field is None else Annotated[field.annotation, field]
    if said.discriminator is not None:
        key = str(said.discriminator)
        return next(m for m in args if part in get_args(m.model_fields[key].annotation))
    if get_origin(tp) is dict:
        return args[0] if part == "[key]" else args[1]
    if get_origin(tp) in (list, tuple) and isinstance(part, int):
        return args[0] if len(args) == 1 or args[1] is Ellipsis else args[part]
    return None


def _at(root: Any, loc: tuple[str | int, ...]) -> tuple[Any, str]:
    """The type of the key at ``loc`` below ``root`` (bare: :func:`_bare`, None when there is
    no such key) and what it expects: its description; for a ``Literal``, its values; else a
    table."""
    tp, said = _bare(root)
    for part in loc:
        tp, said = _bare(_below(tp, said, part))
    if said.description:
        return tp, said.description
    if get_origin(tp) is Literal:
        return tp, f"one of {', '.join(map(repr, get_args(tp)))}"
    return tp, "a table"


def _unknown_key(
    path: Path, root: Any, loc: tuple[str | int, ...], key_loc: tuple[str | int, ...], value: Any
) -> ConfigError:
    """The error of a key that the table at ``loc[:-1]`` does not have (``key_loc``: ``loc``
    without a union's tag); at the top level, a table of another kind says so."""
    parent, _ = _at(root, loc[:-1])
    name = str(loc[-1])
    union, said = _bare(root)
    owner = next((m for m in get_args(union) if name in m.model_fields), None)
    if said.discriminator is not None and len(key_loc) == 1 and owner is not None:
        kind = owner.model_fields[said.discriminator].default
        expected = f"no [{name}] table in a config of kind {loc[0]!r} (a table of kind {kind!r})"
        return ConfigError(path, name, expected, show(value))
    allowed = list(parent.model_fields)
    close = get_close_matches(name, allowed, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    where = f"[{_dotted(key_loc[:-1])}]" if key_loc[:-1] else "the top level"
    expected = f"a key of {where}: {', '.join(allowed)}{hint}"
    return ConfigError(path, _dotted(key_loc), expected, f"the unknown key {name!r}")


def config_error(path: Path, root: Any, error: ValidationError) -> ConfigError:
    """The :class:`ConfigError` of the first error of ``error``, raised by validating a file's
    data as ``root`` (a table, or a union of tables told apart by a key, whose tag pydantic
    puts first in an error's location)."""
    first = error.errors(include_url=False)[0]
    loc, kind, value = tuple(first["loc"]), first["type"], first["input"]
    discriminator = _bare(root)[1].discriminator
    if kind == "union_tag_invalid":
        expected = f"one of {first['ctx']['expected_tags']}"
        return ConfigError(path, str(discriminator), expected, show(value.get(discriminator)))
    key_loc = loc[1:] if discriminator is not None else loc
    if kind == "extra_forbidden":
        return _unknown_key(path, root, loc, key_loc, value)
    if kind == "config":
        ctx = first["ctx"]
        expected = ctx["expected"] or _at(root, loc)[1]
        got = ctx["shown"] or show(value if ctx["got"] is _VALUE else ctx["got"])
        return ConfigError(path, _join(_dotted(key_loc), ctx["at"]), expected, got, ctx["detail"])
    if key_loc and key_loc[-1] == "[key]":  # a key of a table of values that does not fit
        expected = _at(root, (*loc[:-2], "[key]"))[1]
        return ConfigError(path, _dotted(key_loc[:-1]), expected, show(value))
    given = MISSING if kind == "missing" else value
    return ConfigError(path, _dotted(key_loc), _at(root, loc)[1], show(given))
