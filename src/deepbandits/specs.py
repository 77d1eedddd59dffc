"""Policy and environment specifications ``name:key=value,key=value`` and seed ranges: the one
parser (:func:`parse_spec`) and the one writer (:func:`with_params`) of the package."""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from deepbandits.errors import InputValueError


def parse_value(text: str) -> Any:
    """``true``/``false``/``none``, integers, floats, lists; anything else stays a string.

    A list is written in brackets: JSON (``[0,1]``, ``["a","b"]``) or bare words
    (``[color,shape]`` → ``["color", "shape"]``), each item parsed like a value
    (``[0,b]`` → ``[0, "b"]``; nested brackets are lists too).
    """
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    if text.strip().startswith("["):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return _parse_bare_list(text.strip())
    return text


def _parse_bare_list(text: str) -> list[Any]:
    """``[color,shape]`` → ``["color", "shape"]``; items are parsed by :func:`parse_value`
    (a JSON string item such as ``"a"`` loses its quotes)."""
    inner = text[1:-1] if text.endswith("]") else None
    if inner is None or _depth_errors(inner):
        raise InputValueError(f"cannot parse list value {text!r}: unbalanced brackets")
    if not inner.strip():
        return []
    items = _split_items(inner)
    if any(not item.strip() for item in items):
        raise InputValueError(f"cannot parse list value {text!r}: empty item")
    values = []
    for item in items:
        item = item.strip()
        if len(item) >= 2 and item[0] == item[-1] == '"':
            try:
                values.append(json.loads(item))
                continue
            except json.JSONDecodeError:
                pass
        values.append(parse_value(item))
    return values


def _depth_errors(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += (ch == "[") - (ch == "]")
        if depth < 0:
            return True
    return depth != 0


def _split_items(text: str) -> list[str]:
    """Split at the commas outside brackets, keeping empty items."""
    parts, depth, current = [], 0, []
    for ch in text:
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return parts


def _split_top_level(text: str) -> list[str]:
    """Split at the commas outside brackets, dropping empty items."""
    return [p for p in _split_items(text) if p.strip()]


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"linucb:alpha=0.1,per_arm=true"`` → ``("linucb", {"alpha": 0.1, "per_arm": True})``.

    Lists are written in brackets: ``reward_range=[0,1]``, ``categorical=[color,shape]``. Each
    keyword may be given once.
    """
    name, _, rest = spec.partition(":")
    name = name.strip()
    if not name:
        raise InputValueError(f"empty name in specification {spec!r}")
    params: dict[str, Any] = {}
    for item in _split_top_level(rest):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise InputValueError(f"expected key=value in {spec!r}, got {item!r}")
        if key in params:
            raise InputValueError(
                f"keyword {key!r} is given twice in {spec!r}; give each keyword once"
            )
        params[key] = parse_value(value.strip())
    return name, params


def _format_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)  # shortest text that reads back as this float (never as an int)
    return str(value)


def with_params(spec: str, params: dict[str, Any]) -> str:
    """``spec`` with ``params`` appended: ``with_params("linucb:lam=2", {"alpha": 0.5})``
    → ``"linucb:lam=2,alpha=0.5"``; :func:`parse_spec` reads it back."""
    name, _, rest = spec.strip().partition(":")
    items = [rest.strip().strip(",")] if rest.strip().strip(",") else []
    items += [f"{k}={_format_value(v)}" for k, v in params.items()]
    return f"{name.strip()}:{','.join(items)}" if items else name.strip()


def split_specs(args: list[str]) -> list[str]:
    """Policy specifications from command-line words, each word possibly a comma list.

    ``["linucb,neural-ucb:mode=full,alpha=0.1", "neural-ts"]`` →
    ``["linucb", "neural-ucb:mode=full,alpha=0.1", "neural-ts"]``: after a comma, an item with
    ``=`` and no ``:`` continues the previous specification's keywords; anything else starts a
    new one.
    """
    specs: list[str] = []
    for word in args:
        for item in _split_top_level(word):
            continues = "=" in item and ":" not in item.split("=", 1)[0]
            if continues and specs and ":" in specs[-1]:
                specs[-1] += "," + item
            else:
                specs.append(item.strip())
    return specs


#: One item of a seed list: a seed ``7`` or a range ``0-4``.
_SEED_ITEM = re.compile(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?")


def parse_seeds(text: str) -> list[int]:
    """``"0-4"`` → [0, 1, 2, 3, 4]; ``"1,3,5"`` → [1, 3, 5]; ``"7"`` → [7].

    Seeds are integers >= 0, each listed once (a repeated seed would be run, and counted in the
    mean, twice); a range is written low-high.
    """
    seeds: list[int] = []
    for item in text.split(","):
        match = _SEED_ITEM.fullmatch(item)
        if match is None:
            what = "a negative seed" if item.strip().startswith("-") else "not a seed or range"
            raise InputValueError(
                f"seeds must look like '0-4' or '1,3,5' (integers >= 0); {item.strip()!r} is {what}"
            )
        lo = int(match[1])
        hi = lo if match[2] is None else int(match[2])
        if hi < lo:
            raise InputValueError(f"seed range {item.strip()!r} is empty: write it as {hi}-{lo}")
        seeds.extend(range(lo, hi + 1))
    repeated = [seed for seed, count in Counter(seeds).items() if count > 1]
    if repeated:
        listed = ", ".join(map(str, repeated))
        raise InputValueError(
            f"seed{'s' if len(repeated) > 1 else ''} {listed} listed more than once in {text!r}; "
            "each seed may be given once"
        )
    return seeds


def format_seeds(seeds: list[int]) -> str:
    """The text :func:`parse_seeds` reads back as ``seeds``: ``[0, 1, 2, 5]`` → ``"0-2,5"``."""
    items: list[str] = []
    start = 0
    for i, seed in enumerate(seeds):
        if i + 1 == len(seeds) or seeds[i + 1] != seed + 1:
            first = seeds[start]
            items.append(str(seed) if first == seed else f"{first}-{seed}")
            start = i + 1
    return ",".join(items)
