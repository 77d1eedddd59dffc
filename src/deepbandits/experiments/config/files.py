"""Reading config files: :func:`load_config` (one file, validated by the model of its kind) and
the shipped configs (:func:`builtin_configs`, :func:`builtin_config`)."""

from __future__ import annotations

import re
import tomllib
from difflib import get_close_matches
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from deepbandits.errors import InputValueError
from deepbandits.experiments.config.errors import ConfigError, config_error
from deepbandits.experiments.config.model import ConfigFileOfAnyKind, ExperimentConfig

#: Folder of the shipped configs (package data).
CONFIG_DIR = Path(__file__).parent.parent / "configs"
_FILES: TypeAdapter[ConfigFileOfAnyKind] = TypeAdapter(ConfigFileOfAnyKind)


def _read(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except OSError as e:
        raise ConfigError(path, None, "a readable config file", e.strerror or str(e)) from e
    except UnicodeDecodeError as e:
        raise ConfigError(path, None, "UTF-8 text", f"undecodable bytes ({e.reason})") from e
    except tomllib.TOMLDecodeError as e:
        match = re.search(r"line (\d+)", str(e))
        line = int(match[1]) if match else None
        raise ConfigError(path, None, "valid TOML", "a syntax error", str(e), line=line) from e


def load_config(path: str | Path) -> ExperimentConfig:
    """Read and validate the config file ``path`` (see :mod:`deepbandits.experiments.config`).

    Raises
    ------
    ConfigError
        For a file that cannot be read or is not TOML (naming the line), and for any key that
        is unknown, missing, of the wrong type or out of range, or a specification that does
        not build (naming the dotted key, what was expected and what was given).
    """
    path = Path(path)
    data = {"kind": "sweep", **_read(path)}
    try:
        validated = _FILES.validate_python(data, context={"path": path})
    except ValidationError as e:
        raise config_error(path, ConfigFileOfAnyKind, e) from None
    return validated.to_config(path)


def builtin_configs() -> dict[str, ExperimentConfig]:
    """Every shipped config (``deepbandits/experiments/configs/*.toml``), by name, sorted."""
    configs = [load_config(p) for p in CONFIG_DIR.glob("*.toml")]
    return {c.name: c for c in sorted(configs, key=lambda c: c.name)}


def builtin_config(name: str) -> ExperimentConfig:
    """The shipped config ``name``.

    Raises
    ------
    InputValueError
        When no shipped config has that name (the message lists them).
    """
    path = CONFIG_DIR / f"{name}.toml"
    if not isinstance(name, str) or "/" in name or not path.is_file():
        names = sorted(p.stem for p in CONFIG_DIR.glob("*.toml"))
        close = get_close_matches(str(name), names, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise InputValueError(
            f"unknown experiment {name!r}{hint}; expected one of {', '.join(names)}"
        )
    return load_config(path)
