"""The command line's ``name:key=value,key=value`` specifications and seed ranges."""

from __future__ import annotations

import json
from typing import Any


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
        raise ValueError(f"cannot parse list value {text!r}: unbalanced brackets")
    if not inner.strip():
        return []
    items = _split_items(inner)
    if any(not item.strip() for item in items):
        raise ValueError(f"cannot parse list value {text!r}: empty item")
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

    Lists are written in brackets: ``reward_range=[0,1]``, ``categorical=[color,shape]``.
    """
    name, _, rest = spec.partition(":")
    name = name.strip()
    if not name:
        raise ValueError(f"empty name in specification {spec!r}")
    params: dict[str, Any] = {}
    for item in _split_top_level(rest):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"expected key=value in {spec!r}, got {item!r}")
        params[key.strip()] = parse_value(value.strip())
    return name, params


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


def parse_seeds(text: str) -> list[int]:
    """``"0-4"`` → [0, 1, 2, 3, 4]; ``"1,3,5"`` → [1, 3, 5]; ``"7"`` → [7]."""
    seeds: list[int] = []
    try:
        for part in text.split(","):
            lo, dash, hi = part.strip().partition("-")
            seeds.extend(range(int(lo), int(hi) + 1) if dash else [int(lo)])
    except ValueError as exc:
        raise ValueError(f"seeds must look like '0-4' or '1,3,5', got {text!r}") from exc
    if not seeds:
        raise ValueError(f"no seeds in {text!r}")
    return seeds
