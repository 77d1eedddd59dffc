"""Kind ``"sweep"``: policies × seeds on one or several environments, with the paper's numbers
and its claims: the file (:class:`SweepFile`) and the experiment (:class:`SweepConfig`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from deepbandits._validation import check_int
from deepbandits.errors import DeepBanditsError
from deepbandits.experiments.compare import label_of
from deepbandits.experiments.config.common import ConfigFile, Experiment
from deepbandits.experiments.config.errors import MISSING, bad
from deepbandits.experiments.config.fields import (
    AnyTable,
    Checkpoints,
    Count,
    EnvList,
    EnvSpec,
    PolicyListOrAll,
    Seeds,
    Table,
    Text,
    TextTable,
    build_policy,
    policy_list,
)
from deepbandits.experiments.report.paper import CHECKS as CLAIM_CHECKS
from deepbandits.experiments.report.tables import METRICS as SUMMARY_METRICS
from deepbandits.experiments.report.tables import RUN_METRICS
from deepbandits.policies import make_policy
from deepbandits.specs import parse_spec, with_params

#: Checks a claim can make (:data:`deepbandits.experiments.report.paper.CHECKS`).
CHECKS = tuple(CLAIM_CHECKS)
#: Metrics a claim may name: the columns of the report's per-run table
#: (:data:`deepbandits.experiments.report.tables.RUN_METRICS`).
METRICS = RUN_METRICS
#: Metrics the paper's numbers may name: those of the report's summary over seeds
#: (:data:`deepbandits.experiments.report.tables.METRICS`), beside which they are printed.
PAPER_METRICS = tuple(k for k, _ in SUMMARY_METRICS)
PaperMetric = Annotated[
    Literal[PAPER_METRICS],  # type: ignore[valid-type]
    Field(description=f"a metric of the report's summary: one of {', '.join(PAPER_METRICS)}"),
]


class RunTable(Table):
    """``[run]``: exactly one of ``env`` and ``envs`` (each a distinct folder label)."""

    env: EnvSpec | None = None
    envs: EnvList | None = None
    policies: PolicyListOrAll
    T: Count
    seeds: Seeds
    checkpoints: Checkpoints = Field(default_factory=list)
    holdout_size: Count = 500

    @model_validator(mode="after")
    def _check(self) -> RunTable:
        given = [k for k in ("env", "envs") if getattr(self, k) is not None]
        if len(given) != 1:
            got = self.envs if given else MISSING
            bad("exactly one of 'env' and 'envs'", at=given[1] if given else "env", got=got)
        labels = [label_of(e) for e in self.envs or ()]
        for i, label in enumerate(labels):
            if label in labels[:i]:
                first = self.envs[labels.index(label)]  # type: ignore[index]
                detail = f"{first!r} has the same label {label!r}"
                expected = "environments with distinct folder labels"
                bad(expected, at=f"envs[{i}]", got=self.envs[i], detail=detail)  # type: ignore[index]
        if max(self.checkpoints, default=0) > self.T:
            bad(f"checkpoints <= T = {self.T}", at="checkpoints", got=self.checkpoints)
        return self


class QuickRun(Table):
    """``[quick]`` of a sweep: what ``--quick`` replaces (:meth:`SweepConfig.scaled`)."""

    T: Count | None = None
    seeds: Seeds | None = None
    checkpoints: Checkpoints | None = None
    policy_params: AnyTable | None = None


class PaperTable(Table):
    """``[paper]``: the paper's printed numbers, printed beside the report's summary."""

    source: Text
    metrics: dict[PaperMetric, Text]
    #: policy -> metric -> text
    values: Annotated[dict[str, TextTable], Field(description="a table")]
    #: published algorithms the config does not run (a record's holder, named as its source
    #: names it): their values are printed beside the measured policies
    others: Annotated[list[Text], Field(default_factory=list, description="an array of names")]

    @model_validator(mode="after")
    def _check(self) -> PaperTable:
        for policy, values in self.values.items():
            for metric in values:
                if metric not in self.metrics:
                    expected = f"a metric of paper.metrics ({', '.join(self.metrics)})"
                    bad(expected, at=f"values.{policy}.{metric}", got=metric)
        return self


class Claim(Table):
    """What the paper's text says of a figure (``[[claims]]``), as a check on the measured
    per-run table.

    ``"lowest"`` (``"highest"``): ``policy``'s mean ``metric`` over seeds is the lowest
    (highest) of all policies; ``"below"`` (``"above"``): ``policy``'s mean is below (above)
    ``than``'s.
    """

    text: Text
    check: Literal[CHECKS]  # type: ignore[valid-type]
    policy: Text
    metric: Literal[METRICS] = "final_regret"  # type: ignore[valid-type]
    than: Text | None = None

    @model_validator(mode="after")
    def _check(self) -> Claim:
        against_best = CLAIM_CHECKS[self.check][0]
        if not against_best and self.than is None:
            bad(f"the policy to compare with (check {self.check!r})", at="than", got=MISSING)
        if against_best and self.than is not None:
            bad(f"no 'than' with check {self.check!r}", at="than", got=self.than)
        return self


class SweepFile(ConfigFile):
    """A config file of kind ``"sweep"``."""

    kind: Literal["sweep"] = "sweep"
    run: Annotated[RunTable, Field(description="a [run] table in a config of kind 'sweep'")]
    quick: QuickRun = QuickRun()
    paper: PaperTable | None = None
    claims: Annotated[
        list[Claim], Field(default_factory=list, description="an array of tables [[claims]]")
    ]

    @model_validator(mode="after")
    def _check_references(self) -> SweepFile:
        """Claims and the paper's values name policies of the config; a claim compares two;
        the quick checkpoints fit the quick T; the quick policy parameters are taken and keep
        the policies distinct."""
        policies = policy_list(self.run.policies)
        expected = f"a policy of run.policies ({', '.join(policies)})"
        for i, claim in enumerate(self.claims):
            for attr in ("policy", "than"):
                spec = getattr(claim, attr)
                if spec is not None and spec not in policies:
                    bad(expected, at=f"claims[{i}].{attr}", shown=repr(spec))
            if claim.than == claim.policy:
                bad("a policy other than 'policy'", at=f"claims[{i}].than", shown=repr(claim.than))
        others = self.paper.others if self.paper is not None else ()
        for spec in self.paper.values if self.paper is not None else {}:
            if spec not in policies and spec not in others:
                bad(f"{expected} or of paper.others", at=f"paper.values.{spec}", shown=repr(spec))
        quick_T = self.quick.T or self.run.T
        if max(self.quick.checkpoints or (), default=0) > quick_T:
            expected = f"checkpoints <= the quick T = {quick_T}"
            bad(expected, at="quick.checkpoints", got=self.quick.checkpoints)
        self._check_policy_params(policies)
        return self

    def _check_policy_params(self, full: list[str]) -> None:
        params = self.quick.policy_params or {}
        accepted: set[str] = set()
        for spec in full:
            accepted |= set(make_policy(parse_spec(spec)[0]).get_params())
        for name in params:
            if name not in accepted:
                bad(
                    "a parameter one of the policies takes",
                    at=f"quick.policy_params.{name}",
                    got=name,
                )
        quick = [with_policy_params(spec, params) for spec in full]
        for i, spec in enumerate(quick):
            try:
                build_policy(spec)
            except DeepBanditsError as e:
                expected = "parameters the policies accept"
                bad(expected, at="quick.policy_params", got=params, detail=f"{spec}: {e}")
            if spec in quick[:i]:
                detail = f"{full[quick.index(spec)]!r} and {full[i]!r} both become {spec!r}"
                expected = "parameters that keep the policies distinct"
                bad(expected, at="quick.policy_params", got=params, detail=detail)

    def to_config(self, path: Path) -> SweepConfig:
        """The experiment of the file at ``path``."""
        run = self.run
        return SweepConfig(
            **self.common(path),
            envs=(run.env,) if run.env is not None else tuple(run.envs or ()),
            policies=tuple(run.policies),
            T=run.T,
            seeds=tuple(run.seeds),
            checkpoints=tuple(sorted(run.checkpoints)),
            holdout_size=run.holdout_size,
            quick=None if self.quick == QuickRun() else self.quick,
            paper=None if self.paper is None else self.paper.model_dump(),
            claims=tuple(self.claims),
        )


class SweepConfig(Experiment):
    """A sweep (kind ``"sweep"``): ``policies`` × ``seeds`` on each of ``envs``, as ``[run]``
    says (``[run]``'s ``env``, or its ``envs``: one comparison each, the claims checked in
    each), with the paper's printed numbers (``paper``: ``{"source", "metrics", "values",
    "others"}``, as ``paper_reference.json``) and its ``claims``; ``quick`` is the ``[quick]``
    table (None without one; :meth:`scaled`)."""

    kind: Literal["sweep"] = "sweep"
    envs: tuple[str, ...]
    policies: tuple[str, ...]
    T: int
    seeds: tuple[int, ...]
    checkpoints: tuple[int, ...] = ()
    holdout_size: int = 500
    quick: QuickRun | None = None
    paper: dict[str, Any] | None = None
    claims: tuple[Claim, ...] = ()

    @property
    def env(self) -> str:
        """The first of ``envs``, for callers of one environment."""
        return self.envs[0]

    def policy_list(self) -> list[str]:
        """The policy specifications to run: ``["all"]`` expanded to every distinct
        registered policy (:func:`~deepbandits.policies.distinct_policy_names`)."""
        return policy_list(self.policies)

    def scaled(self, quick: bool) -> SweepConfig:
        """The config with its ``[quick]`` changes applied (``quick=True``), else itself.

        ``T``, ``seeds`` and ``checkpoints`` replaced (without quick checkpoints, those after
        the quick ``T`` are dropped); each ``policy_params`` key set in every policy that takes
        it (:meth:`~deepbandits.policies.Policy.get_params`), replacing the value its
        specification gives; claims and the paper's values follow the renamed specifications.
        """
        if not quick or self.quick is None:
            return self
        T = self.quick.T or self.T
        if self.quick.checkpoints is not None:
            checkpoints = tuple(sorted(self.quick.checkpoints))
        else:
            checkpoints = tuple(c for c in self.checkpoints if c <= T)
        params = self.quick.policy_params or {}
        names = self.policy_list() if params else list(self.policies)
        renamed = {spec: with_policy_params(spec, params) for spec in names}
        paper = self.paper
        if paper is not None:
            paper = {**paper, "values": {renamed.get(k, k): v for k, v in paper["values"].items()}}
        claims = tuple(
            c.model_copy(
                update={
                    "policy": renamed.get(c.policy, c.policy),
                    "than": None if c.than is None else renamed.get(c.than, c.than),
                }
            )
            for c in self.claims
        )
        return self.model_copy(
            update={
                "T": T,
                "seeds": tuple(self.quick.seeds or self.seeds),
                "checkpoints": checkpoints,
                "policies": tuple(renamed.values()),
                "paper": paper,
                "claims": claims,
            }
        )

    def overridden(self, seeds: Sequence[int] | None, T: int | None) -> SweepConfig:
        """The sweep with ``seeds`` and ``T`` replaced (None: kept); checkpoints after ``T``
        dropped."""
        config = self
        if seeds is not None:
            checked = tuple(check_int(s, "seed", minimum=0) for s in seeds)
            config = config.model_copy(update={"seeds": checked})
        if T is not None:
            T = check_int(T, "T", minimum=1)
            kept = tuple(c for c in config.checkpoints if c <= T)
            config = config.model_copy(update={"T": T, "checkpoints": kept})
        return config


def with_policy_params(spec: str, params: Mapping[str, Any]) -> str:
    """``spec`` with the keys of ``params`` that its policy takes set (replacing its own)."""
    name, given = parse_spec(spec)
    accepted = make_policy(name).get_params()
    taken = {k: v for k, v in params.items() if k in accepted}
    return with_params(name, {**given, **taken}) if taken else spec
