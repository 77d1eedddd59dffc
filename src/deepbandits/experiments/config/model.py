"""An experiment as its config file says (:class:`ExperimentConfig`), whichever its kind, and
its quick version (:meth:`ExperimentConfig.scaled`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, is_dataclass, replace
from pathlib import Path
from typing import Any

from deepbandits.errors import InputValueError
from deepbandits.experiments.config.fields import ALL
from deepbandits.experiments.matched import MatchedProtocol
from deepbandits.policies import distinct_policy_names, make_policy
from deepbandits.specs import parse_spec, with_params


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
        renamed = {spec: with_policy_params(spec, params) for spec in names}
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
        return protocol_of(self.options)

    def to_dict(self) -> dict[str, Any]:
        """Every field as JSON-able values (lists, dicts, strings, numbers, None), to save
        beside the results."""
        return {f.name: jsonable(getattr(self, f.name)) for f in fields(self)}


def with_policy_params(spec: str, params: Mapping[str, Any]) -> str:
    """``spec`` with the keys of ``params`` that its policy takes set (replacing its own)."""
    name, given = parse_spec(spec)
    accepted = make_policy(name).get_params()
    taken = {k: v for k, v in params.items() if k in accepted}
    return with_params(name, {**given, **taken}) if taken else spec


def protocol_of(options: Mapping[str, Any]) -> MatchedProtocol:
    fixed = {k: tuple(v) if isinstance(v, list) else v for k, v in options.items()}
    return MatchedProtocol(**fixed)


def jsonable(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return jsonable(asdict(value))
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


__all__ = ["Claim", "ExperimentConfig", "jsonable", "protocol_of", "with_policy_params"]
