"""The error of a config file (:class:`ConfigError`), and how a pydantic validation error of
one becomes it: the file, the dotted key, what was expected, what was given, and for an
unknown key the closest known one."""

from __future__ import annotations

from difflib import get_close_matches
from pathlib import Path
from typing import Any, NoReturn

from pydantic import BaseModel, ValidationError
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


class Expect:
    """Field metadata: what a key must hold, in the words of an error message (``"an integer
    >= 1"``); what a missing required key says it expected."""

    def __init__(self, text: str) -> None:
        self.text = text


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
    expected: str, *, at: str = "", got: Any = _VALUE, detail: str = "", shown: str = ""
) -> NoReturn:
    """Refuse a value from inside a validator: ``expected`` (what would fit), ``at`` the part
    of the value or the key below the validated one (``"[2]"``, ``".mnist"``, ``"checkpoints"``;
    empty: the value itself), ``got`` the part that does not fit (default: the value;
    :data:`MISSING`: nothing), or ``shown``, the words that say what was given."""
    context = {"expected": expected, "at": at, "got": got, "detail": detail, "shown": shown}
    raise PydanticCustomError("config", "expected {expected}", context)


def given(context: dict[str, Any], value: Any) -> Any:
    """The part of ``value`` that a refusal (:func:`bad`) names."""
    return value if context["got"] is _VALUE else context["got"]


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


def _model_at(model: type[BaseModel], loc: tuple[str | int, ...]) -> type[BaseModel] | None:
    """The model of the table at ``loc`` (list indices passed over), or None."""
    for part in loc:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        annotation = getattr(field, "annotation", None)
        inner = getattr(annotation, "__args__", ())
        found = [
            t for t in (annotation, *inner) if isinstance(t, type) and issubclass(t, BaseModel)
        ]
        if not found:
            return None
        model = found[0]
    return model


def _expected(model: type[BaseModel], loc: tuple[str | int, ...]) -> str:
    """The :class:`Expect` text of the key at ``loc``."""
    parent = _model_at(model, loc[:-1])
    field = None if parent is None else parent.model_fields.get(str(loc[-1]))
    for meta in getattr(field, "metadata", ()):
        if isinstance(meta, Expect):
            return meta.text
    return "a table"


def config_error(path: Path, model: type[BaseModel], error: ValidationError) -> ConfigError:
    """The :class:`ConfigError` of the first error of ``error`` (raised by validating a file's
    data with ``model``)."""
    first = error.errors(include_url=False)[0]
    loc = tuple(first["loc"])
    key, kind = _dotted(loc), first["type"]
    if kind == "config":
        ctx = first["ctx"]
        got = ctx["shown"] or show(given(ctx, first["input"]))
        return ConfigError(path, _join(key, ctx["at"]), ctx["expected"], got, ctx["detail"])
    if kind == "extra_forbidden":
        parent = _model_at(model, loc[:-1])
        allowed = list(parent.model_fields) if parent is not None else []
        close = get_close_matches(str(loc[-1]), allowed, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        where = f"[{_dotted(loc[:-1])}]" if loc[:-1] else "the top level"
        return ConfigError(
            path,
            key,
            f"a key of {where}: {', '.join(allowed)}{hint}",
            f"the unknown key {loc[-1]!r}",
        )
    if kind == "missing":
        return ConfigError(path, key, _expected(model, loc), show(MISSING))
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return ConfigError(path, key, "a table", show(first["input"]))
    return ConfigError(path, key, _expected(model, loc), show(first["input"]))
