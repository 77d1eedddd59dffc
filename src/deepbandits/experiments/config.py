"""Experiment configs: every experiment of the paper as a TOML file, and yours in the same format.

One file per experiment (the shipped ones are ``deepbandits/experiments/configs/NAME.toml``;
:func:`builtin_configs`), read by :func:`load_config` and validated before anything runs: every
key is checked (type, range, allowed values; an unknown key is an error with the closest known
one suggested), every policy and environment specification is built once, and a
:class:`ConfigError` names the file, the dotted key, what was expected and what was given.

Schema (``[run]``, ``[latency]`` or ``[matched]`` according to ``kind``)::

    name = "demo-h1"                  # the file's stem (default: the stem)
    title = "Fig. demo (h1)"          # one line (default: the name)
    reproduces = ["Fig. demo"]        # the paper's figures and tables (default: none)
    description = "..."               # (default: empty)
    kind = "sweep"                    # "sweep" (default), "latency" or "matched"

    [run]                             # kind "sweep": policies x seeds on each environment
    env = "h1"                        # environment specification NAME[:key=value,...]
    envs = ["h1:noise=fixed,noise_std=0.1", "h1:noise=fixed,noise_std=2"]   # or, instead of
                                      # env, several: one comparison each (in the folder
                                      # compare.label_of(env)), the claims checked in each
    policies = ["linucb", "neural-sigma2-linucb:alpha=0.1"]   # or ["all"]
    T = 10000                         # rounds per run (>= 1)
    seeds = "0-9"                     # or a list [0, 1, 2]; integers >= 0, each once
    checkpoints = [0, 2000]           # hold-out checkpoints, each <= T (default: none)
    holdout_size = 500                # hold-out rounds per checkpoint (default: 500)

    [latency]                         # kind "latency": experiments.latency.run_latency's options
    policies = [...]; rounds = 100; train_every = 10; steps = [2, 1000]; feature_dim = 64
    repeats = 3; threads = 1; paper = { neural-ucb = [6.42, 2.28] }   # (select s, update s)

    [matched]                         # kind "matched": the fields of MatchedProtocol
                                      # (defaults: MatchedProtocol's)

    [quick]                           # what --quick changes
    T = 1000; seeds = [0, 1]; checkpoints = [0, 500]   # kind "sweep" (checkpoints = []: none)
    policy_params = { train_steps = 50 }   # set in every policy that takes the key (replacing
                                           # the specification's own value); each key taken by
                                           # a policy, no two specifications made equal
    [quick.latency]                   # kind "latency": keys of [latency] replaced
    [quick.matched]                   # kind "matched": keys of [matched] replaced

    [cost]                            # expected CPU seconds on one core (optional)
    quick_cpu_s = 20.0; full_cpu_s = 650.0; note = "how the numbers were obtained"

    [paper]                           # the paper's printed numbers (kind "sweep", optional)
    source = "Table quantitative"
    metrics = { cumulative_reward = "cumulative reward" }      # summary metric -> heading
    values = { linucb = { cumulative_reward = "7459.08 ± 32.97" } }   # policy -> metric -> text

    [[claims]]                        # what the paper's text says of a figure (kind "sweep")
    text = "Neural-σ²-LinUCB has the lowest regret"
    check = "lowest"                  # "lowest" / "highest": policy's mean metric is the
                                      # lowest / highest of all; "below" / "above": policy's
                                      # mean < / > than's mean
    policy = "neural-sigma2-linucb"   # one of [run] policies (of the expansion of "all")
    than = "neural-linucb"            # required for "below"/"above", refused otherwise
    metric = "final_regret"           # a column of the report's per-run table (default)

Dataset environments are not loaded during validation (only their name and keywords are
checked); synthetic ones are built.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, fields, is_dataclass, replace
from difflib import get_close_matches
from pathlib import Path
from typing import Any

from deepbandits.envs import CLASSIFICATION_ENVS, ENVS, ClassificationEnv, _keywords, make_env
from deepbandits.envs.synthetic import REWARD_FUNCTIONS
from deepbandits.errors import DeepBanditsError, InputValueError
from deepbandits.experiments.compare import label_of
from deepbandits.experiments.matched import MatchedProtocol
from deepbandits.experiments.specs import parse_seeds, parse_spec
from deepbandits.experiments.tune import with_params
from deepbandits.policies import distinct_policy_names, make_policy
from deepbandits.experiments.report.paper import CHECKS as CLAIM_CHECKS
from deepbandits.experiments.report.tables import METRICS as SUMMARY_METRICS
from deepbandits.experiments.report.tables import RUN_METRICS

#: Folder of the shipped configs (package data).
CONFIG_DIR = Path(__file__).with_name("configs")
#: Kinds of experiment, and the table each one needs.
SECTIONS: dict[str, str] = {"sweep": "run", "latency": "latency", "matched": "matched"}
#: Checks a claim can make (:data:`deepbandits.experiments.report.paper.CHECKS`).
CHECKS = tuple(CLAIM_CHECKS)
#: Metrics a claim may name: the columns of the report's per-run table
#: (:data:`deepbandits.experiments.report.tables.RUN_METRICS`).
METRICS = RUN_METRICS
#: Metrics the paper's numbers may name: those of the report's summary over seeds
#: (:data:`deepbandits.experiments.report.tables.METRICS`), beside which they are printed.
PAPER_METRICS = tuple(key for key, _ in SUMMARY_METRICS)
#: Policy specification meaning every distinct registered policy
#: (:func:`~deepbandits.policies.distinct_policy_names`).
ALL = "all"


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


@dataclass(frozen=True)
class Claim:
    """What the paper's text says of a figure, as a check on the measured per-run table.

    ``"lowest"`` (``"highest"``): ``policy``'s mean ``metric`` over seeds is the lowest
    (highest) of all policies; ``"below"`` (``"above"``): ``policy``'s mean is below (above)
    ``than``'s.
    """

    text: str
    check: str
    policy: str
    metric: str = "final_regret"
    than: str | None = None


@dataclass(frozen=True)
class ExperimentConfig:
    """One experiment, as its config file says (:func:`load_config`).

    ``envs`` (``[run]``'s ``env``, or its ``envs``), ``T``, ``seeds``, ``checkpoints`` and
    ``holdout_size`` are those of ``[run]`` (kind ``"sweep"``; empty / None otherwise): a sweep
    over several environments makes one comparison per environment, and its claims are checked
    in each; ``env`` is the first. ``policies`` are ``[run]``'s, or those of the
    ``[latency]`` / ``[matched]`` table, which ``options`` holds with its defaults filled in.
    ``quick`` is the validated ``[quick]`` table (:meth:`scaled`), ``quick_cpu_s`` and
    ``full_cpu_s`` the expected CPU seconds on one core (None when the file has no ``[cost]``),
    ``paper`` the paper's printed numbers (``{"source", "metrics", "values"}``, as
    ``paper_reference.json``).
    """

    name: str
    title: str
    reproduces: tuple[str, ...]
    description: str
    kind: str
    path: Path
    envs: tuple[str, ...]
    policies: tuple[str, ...]
    T: int | None
    seeds: tuple[int, ...]
    checkpoints: tuple[int, ...]
    holdout_size: int
    options: dict[str, Any]
    quick: dict[str, Any]
    quick_cpu_s: float | None
    full_cpu_s: float | None
    cost_note: str
    paper: dict[str, Any] | None
    claims: tuple[Claim, ...]

    @property
    def env(self) -> str | None:
        """The environment of a sweep (the first of ``envs``); None for other kinds."""
        return self.envs[0] if self.envs else None

    def scaled(self, quick: bool) -> ExperimentConfig:
        """The config with its ``[quick]`` changes applied (``quick=True``), else itself.

        Kind ``"sweep"``: ``T``, ``seeds`` and ``checkpoints`` replaced (without quick
        checkpoints, those after the quick ``T`` are dropped); each ``policy_params`` key set in
        every policy that takes it (:meth:`~deepbandits.policies.Policy.get_params`), replacing
        the value its specification gives; claims and the paper's values follow the renamed
        specifications. Kinds ``"latency"`` and ``"matched"``: the keys of ``[quick.latency]``
        / ``[quick.matched]`` replace those of ``options``.
        """
        if not quick or not self.quick:
            return self
        if self.kind != "sweep":
            options = {**self.options, **self.quick.get(self.kind, {})}
            return replace(self, options=options, policies=tuple(options["policies"]))
        T = self.quick.get("T", self.T)
        if "checkpoints" in self.quick:
            checkpoints = tuple(sorted(self.quick["checkpoints"]))
        else:
            checkpoints = tuple(c for c in self.checkpoints if c <= T)
        params = self.quick.get("policy_params", {})
        names = self.policy_list() if params else list(self.policies)
        renamed = {spec: _with_policy_params(spec, params) for spec in names}
        paper = self.paper
        if paper is not None:
            values = {renamed.get(k, k): v for k, v in paper["values"].items()}
            paper = {**paper, "values": values}
        claims = tuple(
            replace(
                c,
                policy=renamed.get(c.policy, c.policy),
                than=None if c.than is None else renamed.get(c.than, c.than),
            )
            for c in self.claims
        )
        return replace(
            self,
            T=T,
            seeds=tuple(self.quick.get("seeds", self.seeds)),
            checkpoints=checkpoints,
            policies=tuple(renamed.values()),
            paper=paper,
            claims=claims,
        )

    def policy_list(self) -> list[str]:
        """The policy specifications to run: ``["all"]`` expanded to every distinct
        registered policy (:func:`~deepbandits.policies.distinct_policy_names`)."""
        return distinct_policy_names() if self.policies == (ALL,) else list(self.policies)

    def matched_protocol(self) -> MatchedProtocol:
        """The :class:`~deepbandits.experiments.matched.MatchedProtocol` of a ``"matched"``
        config (of its quick version after ``scaled(True)``)."""
        if self.kind != "matched":
            raise InputValueError(
                f"matched_protocol() needs a config of kind 'matched', but {self.name!r} is of "
                f"kind {self.kind!r}"
            )
        return _protocol(self.options)

    def to_dict(self) -> dict[str, Any]:
        """Every field as JSON-able values (lists, dicts, strings, numbers, None), to save
        beside the results."""
        return {f.name: _jsonable(getattr(self, f.name)) for f in fields(self)}


def load_config(path: str | Path) -> ExperimentConfig:
    """Read and validate the config file ``path`` (see the module documentation).

    Raises
    ------
    ConfigError
        For a file that cannot be read or is not TOML (naming the line), and for any key that
        is unknown, missing, of the wrong type or out of range, or a specification that does
        not build (naming the dotted key, what was expected and what was given).
    """
    path = Path(path)
    try:
        with path.open("rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise ConfigError(path, None, "a readable config file", e.strerror or str(e)) from e
    except UnicodeDecodeError as e:
        raise ConfigError(path, None, "UTF-8 text", f"undecodable bytes ({e.reason})") from e
    except tomllib.TOMLDecodeError as e:
        match = re.search(r"line (\d+)", str(e))
        line = int(match[1]) if match else None
        raise ConfigError(path, None, "valid TOML", "a syntax error", str(e), line=line) from e
    return _build(path, data)


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


# ---------------------------------------------------------------------------- values
class _Bad(Exception):
    """A value that does not fit: what was expected, where inside the value (``"[2]"``,
    ``".mnist"``; empty: the value itself), the part that does not fit, and why."""

    def __init__(self, expected: str, *, at: str = "", got: Any = None, detail: str = "") -> None:
        super().__init__(expected)
        self.expected, self.at, self.got, self.detail = expected, at, got, detail


#: Marks a key that the file does not give.
_MISSING = object()

Parser = Callable[[Any], Any]


def _show(value: Any) -> str:
    if value is _MISSING:
        return "nothing (the key is missing)"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _Bad("a non-empty string")
    return value


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise _Bad("a string")
    return value


def _choice(options: tuple[str, ...]) -> Parser:
    def parse(value: Any) -> str:
        if value not in options:
            raise _Bad(f"one of {', '.join(map(repr, options))}")
        return str(value)

    return parse


def _integer(minimum: int) -> Parser:
    def parse(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise _Bad(f"an integer >= {minimum}")
        return value

    return parse


def _number(value: Any) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
    ):
        raise _Bad("a finite number >= 0")
    return float(value)


def _items(parse: Parser, *, distinct: bool = False, empty: bool = False) -> Parser:
    """A list whose items ``parse`` accepts (their keys ``[i]``)."""

    def parse_list(value: Any) -> list[Any]:
        what = f"a {'' if empty else 'non-empty '}list{' of distinct items' if distinct else ''}"
        if not isinstance(value, list) or (not value and not empty):
            raise _Bad(what)
        out = []
        for i, item in enumerate(value):
            try:
                out.append(parse(item))
            except _Bad as e:
                raise _Bad(
                    e.expected, at=f"[{i}]{e.at}", got=_part(e, item), detail=e.detail
                ) from None
            if distinct and out[-1] in out[:-1]:
                raise _Bad(f"{what} (each once)", at=f"[{i}]", got=item, detail="given twice")
        return out

    return parse_list


def _mapping(parse: Parser) -> Parser:
    """A table whose values ``parse`` accepts (their keys ``.name``)."""

    def parse_table(value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise _Bad("a table")
        out = {}
        for key, item in value.items():
            try:
                out[key] = parse(item)
            except _Bad as e:
                raise _Bad(
                    e.expected, at=f".{key}{e.at}", got=_part(e, item), detail=e.detail
                ) from None
        return out

    return parse_table


def _part(error: _Bad, item: Any) -> Any:
    return item if error.got is None else error.got


def _table(value: Any) -> dict[str, Any]:
    return _mapping(lambda v: v)(value)


def _seeds(value: Any) -> list[int]:
    if isinstance(value, str):
        try:
            return parse_seeds(value)
        except InputValueError as e:
            raise _Bad('seeds such as "0-4" or "1,3,5"', detail=str(e)) from e
    return _items(_integer(0), distinct=True)(value)


def _built(what: str, build: Callable[[str], Any]) -> Parser:
    """A specification string that ``build`` accepts; its error becomes the detail."""

    def parse(value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise _Bad(what)
        try:
            build(value)
        except (DeepBanditsError, ValueError, TypeError) as e:
            raise _Bad(what, detail=str(e)) from e
        return value

    return parse


def _build_policy(spec: str) -> None:
    name, params = parse_spec(spec)
    make_policy(name, **params)


def _build_env(spec: str) -> None:
    """Build a synthetic environment; of a dataset, table or array environment only check the
    name and the keywords (nothing is loaded)."""
    name, params = parse_spec(spec)
    if name in REWARD_FUNCTIONS:
        make_env(name, **params)
        return
    if name not in ENVS:
        raise InputValueError(f"unknown environment {name!r}; expected one of {', '.join(ENVS)}")
    allowed = _keywords(ENVS[name])
    if name in CLASSIFICATION_ENVS:
        allowed += _keywords(ClassificationEnv, exclude=("X", "y"))
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise InputValueError(
            f"unknown option(s) {', '.join(map(repr, unknown))} for environment {name!r}; "
            f"valid options: {', '.join(sorted(allowed))}"
        )


_POLICY = _built("a policy specification NAME[:key=value,...] that builds", _build_policy)
_ENV = _built("an environment specification NAME[:key=value,...]", _build_env)


def _policies(allow_all: bool) -> Parser:
    specs = _items(_POLICY, distinct=True)

    def parse(value: Any) -> list[str]:
        if allow_all and value == [ALL]:
            return [ALL]
        return specs(value)

    return parse


def _pair(value: Any) -> list[float]:
    if not isinstance(value, list) or len(value) != 2:
        raise _Bad("[arm selection seconds, update seconds]")
    return [_number(v) for v in value]


def _with_policy_params(spec: str, params: Mapping[str, Any]) -> str:
    """``spec`` with the keys of ``params`` that its policy takes set (replacing its own)."""
    name, given = parse_spec(spec)
    accepted = make_policy(name).get_params()
    taken = {k: v for k, v in params.items() if k in accepted}
    return with_params(name, {**given, **taken}) if taken else spec


def _protocol(options: Mapping[str, Any]) -> MatchedProtocol:
    fixed = {k: tuple(v) if isinstance(v, list) else v for k, v in options.items()}
    return MatchedProtocol(**fixed)


def _jsonable(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return _jsonable(asdict(value))
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


# ---------------------------------------------------------------------------- tables
class _Section:
    """One table of a config file: unknown keys refused on creation, values read by
    :meth:`read` with errors naming the dotted key."""

    def __init__(self, path: Path, prefix: str, value: Any, allowed: Iterable[str]) -> None:
        self.path, self.prefix = path, prefix
        if not isinstance(value, dict):
            raise ConfigError(path, prefix, "a table", _show(value))
        self.data: dict[str, Any] = value
        allowed = list(allowed)
        for key in value:
            if key not in allowed:
                close = get_close_matches(key, allowed, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                where = f"[{prefix}]" if prefix else "the top level"
                raise ConfigError(
                    path,
                    self.key(key),
                    f"a key of {where}: {', '.join(allowed)}{hint}",
                    f"the unknown key {key!r}",
                )

    def key(self, name: str) -> str:
        return f"{self.prefix}.{name}" if self.prefix else name

    def fail(self, name: str, expected: str, got: Any, detail: str = "") -> ConfigError:
        return ConfigError(self.path, self.key(name), expected, _show(got), detail)

    def read(self, name: str, parse: Parser, default: Any = _MISSING) -> Any:
        """The value of ``name`` as ``parse`` returns it; ``default`` when it is not given
        (required when there is none)."""
        value = self.data.get(name, _MISSING)
        if value is _MISSING and default is not _MISSING:
            return default
        try:
            return parse(value)
        except _Bad as e:
            got = value if e.got is None else e.got
            raise self.fail(name + e.at, e.expected, got, e.detail) from None

    def read_all(
        self, parsers: Mapping[str, Parser], defaults: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        """Every key of ``parsers``: the missing ones from ``defaults`` (None: left out)."""
        out = {}
        for name, parse in parsers.items():
            if name in self.data or defaults is not None:
                out[name] = self.read(name, parse, (defaults or {}).get(name, _MISSING))
        return out


_TOP = (
    "name",
    "title",
    "reproduces",
    "description",
    "kind",
    *SECTIONS.values(),
    "quick",
    "cost",
    "paper",
    "claims",
)
_REPRODUCES = _items(_text, empty=True)
_ENV_LIST = _items(_ENV, distinct=True)
#: The keys of ``[run]`` naming the environment(s): exactly one is given.
_ENV_KEYS = ("env", "envs")
_RUN: dict[str, Parser] = {
    "env": _ENV,
    "envs": _ENV_LIST,
    "policies": _policies(allow_all=True),
    "T": _integer(1),
    "seeds": _seeds,
    "checkpoints": _items(_integer(0), distinct=True, empty=True),
    "holdout_size": _integer(1),
}
_RUN_DEFAULTS: dict[str, Any] = {"checkpoints": [], "holdout_size": 500}
_QUICK_RUN: dict[str, Parser] = {
    "T": _RUN["T"],
    "seeds": _seeds,
    "checkpoints": _RUN["checkpoints"],
    "policy_params": _table,
}
_LATENCY: dict[str, Parser] = {
    "policies": _policies(allow_all=False),
    "rounds": _integer(1),
    "train_every": _integer(1),
    "steps": _items(_integer(1), distinct=True),
    "feature_dim": _integer(1),
    "repeats": _integer(1),
    "threads": _integer(1),
    "paper": _mapping(_pair),
}
_LATENCY_DEFAULTS: dict[str, Any] = {
    "rounds": 100,
    "train_every": 10,
    "steps": [2, 1000],
    "feature_dim": 64,
    "repeats": 3,
    "threads": 1,
    "paper": {},
}
_MATCHED: dict[str, Parser] = {
    "envs": _items(_ENV, distinct=True),
    "policies": _policies(allow_all=False),
    "reference": _text,
    "T": _mapping(_integer(1)),
    "default_T": _integer(1),
    "tuning_seeds": _seeds,
    "eval_seeds": _seeds,
    "n_trials": _integer(1),
    "search": _items(_text, distinct=True),
    "budget": _table,
    "sampler_seed": _integer(0),
}
_MATCHED_DEFAULTS: dict[str, Any] = _jsonable(asdict(MatchedProtocol()))
_OPTIONS: dict[str, tuple[dict[str, Parser], dict[str, Any]]] = {
    "latency": (_LATENCY, _LATENCY_DEFAULTS),
    "matched": (_MATCHED, _MATCHED_DEFAULTS),
}
_COST: dict[str, Parser] = {"quick_cpu_s": _number, "full_cpu_s": _number, "note": _string}
_PAPER: dict[str, Parser] = {
    "source": _text,
    "metrics": _mapping(_text),
    "values": _mapping(_mapping(_text)),
}
_CLAIM: dict[str, Parser] = {
    "text": _text,
    "check": _choice(CHECKS),
    "policy": _text,
    "metric": _choice(METRICS),
    "than": _text,
}


def _build(path: Path, data: dict[str, Any]) -> ExperimentConfig:
    top = _Section(path, "", data, _TOP)
    name = top.read("name", _text, path.stem)
    if name != path.stem:
        raise top.fail("name", f"the file's stem {path.stem!r}", name)
    kind = top.read("kind", _choice(tuple(SECTIONS)), "sweep")
    for owner, section in SECTIONS.items():
        if owner == kind and section not in data:
            raise top.fail(section, f"a [{section}] table in a config of kind {kind!r}", _MISSING)
        if owner != kind and section in data:
            raise top.fail(
                section, f"no [{section}] table in a config of kind {kind!r}", data[section]
            )
    for section in ("paper", "claims"):
        if section in data and kind != "sweep":
            raise top.fail(section, f"no {section} in a config of kind {kind!r}", data[section])
    cost = _Section(path, "cost", data.get("cost", {}), _COST)
    costs = cost.read_all(_COST, {"note": ""}) if "cost" in data else {}
    common: dict[str, Any] = {
        "name": name,
        "title": top.read("title", _text, name),
        "reproduces": tuple(top.read("reproduces", _REPRODUCES, [])),
        "description": top.read("description", _string, ""),
        "kind": kind,
        "path": path,
        "quick_cpu_s": costs.get("quick_cpu_s"),
        "full_cpu_s": costs.get("full_cpu_s"),
        "cost_note": costs.get("note", ""),
    }
    quick = data.get("quick", {})
    if kind == "sweep":
        return _sweep(path, data, quick, common)
    return _options(path, kind, data[kind], quick, common)


def _sweep(
    path: Path, data: dict[str, Any], quick_data: Any, common: dict[str, Any]
) -> ExperimentConfig:
    section = _Section(path, "run", data["run"], _RUN)
    envs = _envs(section)
    run = section.read_all({k: v for k, v in _RUN.items() if k not in _ENV_KEYS}, _RUN_DEFAULTS)
    if max(run["checkpoints"], default=0) > run["T"]:
        raise section.fail("checkpoints", f"checkpoints <= T = {run['T']}", run["checkpoints"])
    quick_section = _Section(path, "quick", quick_data, _QUICK_RUN)
    quick = quick_section.read_all(_QUICK_RUN, None)
    quick_T = quick.get("T", run["T"])
    if max(quick.get("checkpoints", []), default=0) > quick_T:
        raise quick_section.fail(
            "checkpoints", f"checkpoints <= the quick T = {quick_T}", quick["checkpoints"]
        )
    config = ExperimentConfig(
        **common,
        envs=envs,
        policies=tuple(run["policies"]),
        T=run["T"],
        seeds=tuple(run["seeds"]),
        checkpoints=tuple(sorted(run["checkpoints"])),
        holdout_size=run["holdout_size"],
        options={},
        quick=quick,
        paper=_paper(path, data) if "paper" in data else None,
        claims=_claims(path, data.get("claims", [])),
    )
    _check_references(path, config)
    _check_policy_params(quick_section, config)
    return config


def _envs(section: _Section) -> tuple[str, ...]:
    """``[run]``'s environment, or its environments (each a distinct folder label,
    :func:`~deepbandits.experiments.compare.label_of`)."""
    given = [k for k in _ENV_KEYS if k in section.data]
    if len(given) != 1:
        got = section.data[given[1]] if given else _MISSING
        raise section.fail(given[1] if given else "env", "exactly one of 'env' and 'envs'", got)
    if given == ["env"]:
        return (section.read("env", _ENV),)
    envs = section.read("envs", _ENV_LIST)
    labels = [label_of(env) for env in envs]
    for i, label in enumerate(labels):
        if label in labels[:i]:
            raise section.fail(
                f"envs[{i}]",
                "environments with distinct folder labels",
                envs[i],
                f"{envs[labels.index(label)]!r} has the same label {label!r}",
            )
    return tuple(envs)


def _options(
    path: Path, kind: str, table: Any, quick_data: Any, common: dict[str, Any]
) -> ExperimentConfig:
    parsers, defaults = _OPTIONS[kind]
    options = _Section(path, kind, table, parsers).read_all(parsers, defaults)
    quick_section = _Section(path, "quick", quick_data, (kind,))
    quick = {}
    if kind in quick_section.data:
        sub = _Section(path, f"quick.{kind}", quick_section.data[kind], parsers)
        quick[kind] = sub.read_all(parsers, None)
    config = ExperimentConfig(
        **common,
        envs=(),
        policies=tuple(options["policies"]),
        T=None,
        seeds=(),
        checkpoints=(),
        holdout_size=_RUN_DEFAULTS["holdout_size"],
        options=options,
        quick=quick,
        paper=None,
        claims=(),
    )
    for where, cfg in ((kind, config), (f"quick.{kind}", config.scaled(True))):
        if kind == "matched":
            try:
                _protocol(cfg.options).check()
            except ValueError as e:
                raise ConfigError(
                    path,
                    where,
                    "settings MatchedProtocol.check() accepts",
                    "settings it refuses",
                    str(e),
                ) from e
        else:
            names = {*cfg.policies, *(parse_spec(p)[0] for p in cfg.policies)}
            for key in cfg.options["paper"]:
                if key not in names:
                    raise ConfigError(
                        path,
                        f"{where}.paper.{key}",
                        f"a policy of {where}.policies ({', '.join(cfg.policies)})",
                        repr(key),
                    )
    return config


def _paper(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    section = _Section(path, "paper", data["paper"], _PAPER)
    paper = section.read_all(_PAPER, {})
    for metric in paper["metrics"]:
        if metric not in PAPER_METRICS:
            raise section.fail(
                f"metrics.{metric}",
                f"a metric of the report's summary: one of {', '.join(PAPER_METRICS)}",
                metric,
            )
    for policy, values in paper["values"].items():
        for metric in values:
            if metric not in paper["metrics"]:
                raise section.fail(
                    f"values.{policy}.{metric}",
                    f"a metric of paper.metrics ({', '.join(paper['metrics'])})",
                    metric,
                )
    return paper


def _claims(path: Path, value: Any) -> tuple[Claim, ...]:
    if not isinstance(value, list):
        raise ConfigError(path, "claims", "an array of tables [[claims]]", _show(value))
    claims = []
    for i, item in enumerate(value):
        section = _Section(path, f"claims[{i}]", item, _CLAIM)
        claim = section.read_all(_CLAIM, {"metric": "final_regret", "than": None})
        against_best = CLAIM_CHECKS[claim["check"]][0]
        if not against_best and claim["than"] is None:
            raise section.fail(
                "than", f"the policy to compare with (check {claim['check']!r})", _MISSING
            )
        if against_best and claim["than"] is not None:
            raise section.fail("than", f"no 'than' with check {claim['check']!r}", claim["than"])
        claims.append(Claim(**claim))
    return tuple(claims)


def _check_references(path: Path, config: ExperimentConfig) -> None:
    """Claims and the paper's values name policies of the config; a claim compares two."""
    policies = config.policy_list()
    expected = f"a policy of run.policies ({', '.join(policies)})"
    for i, claim in enumerate(config.claims):
        for attr in ("policy", "than"):
            spec = getattr(claim, attr)
            if spec is not None and spec not in policies:
                raise ConfigError(path, f"claims[{i}].{attr}", expected, repr(spec))
        if claim.than == claim.policy:
            raise ConfigError(
                path, f"claims[{i}].than", "a policy other than 'policy'", repr(claim.than)
            )
    for spec in (config.paper or {}).get("values", {}):
        if spec not in policies:
            raise ConfigError(path, f"paper.values.{spec}", expected, repr(spec))


def _check_policy_params(section: _Section, config: ExperimentConfig) -> None:
    """Every key of ``[quick] policy_params`` is taken by a policy, and the quick
    specifications build and stay distinct."""
    params = config.quick.get("policy_params", {})
    accepted: set[str] = set()
    for spec in config.policy_list():
        accepted |= set(make_policy(parse_spec(spec)[0]).get_params())
    for key in params:
        if key not in accepted:
            raise section.fail(f"policy_params.{key}", "a parameter one of the policies takes", key)
    full, quick = config.policy_list(), config.scaled(True).policy_list()
    for i, spec in enumerate(quick):
        try:
            _build_policy(spec)
        except (DeepBanditsError, ValueError, TypeError) as e:
            raise section.fail(
                "policy_params", "parameters the policies accept", params, f"{spec}: {e}"
            ) from e
        if spec in quick[:i]:
            raise section.fail(
                "policy_params",
                "parameters that keep the policies distinct",
                params,
                f"{full[quick.index(spec)]!r} and {full[i]!r} both become {spec!r}",
            )
