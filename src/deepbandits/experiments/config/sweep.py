"""Kind ``"sweep"``: policies × seeds on one or several environments, with the paper's numbers
and its claims (:class:`SweepFile`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import model_validator

from deepbandits.errors import DeepBanditsError
from deepbandits.experiments.compare import label_of
from deepbandits.experiments.config.common import ConfigFile
from deepbandits.experiments.config.errors import MISSING, Expect, bad
from deepbandits.experiments.config.fields import (
    ALL,
    AnyTable,
    Count,
    EnvList,
    EnvSpec,
    PolicyListOrAll,
    Seeds,
    Table,
    Text,
    TextTable,
    build_policy,
    choice,
    integer,
    items,
    key,
    mapping,
    text,
)
from deepbandits.experiments.config.model import Claim, ExperimentConfig, with_policy_params
from deepbandits.experiments.report.paper import CHECKS as CLAIM_CHECKS
from deepbandits.experiments.report.tables import METRICS as SUMMARY_METRICS
from deepbandits.experiments.report.tables import RUN_METRICS
from deepbandits.policies import distinct_policy_names, make_policy
from deepbandits.specs import parse_spec

#: Checks a claim can make (:data:`deepbandits.experiments.report.paper.CHECKS`).
CHECKS = tuple(CLAIM_CHECKS)
#: Metrics a claim may name: the columns of the report's per-run table
#: (:data:`deepbandits.experiments.report.tables.RUN_METRICS`).
METRICS = RUN_METRICS
#: Metrics the paper's numbers may name: those of the report's summary over seeds
#: (:data:`deepbandits.experiments.report.tables.METRICS`), beside which they are printed.
PAPER_METRICS = tuple(k for k, _ in SUMMARY_METRICS)
#: The paper's values: policy -> metric -> text.
PaperValues = key("a table", mapping(mapping(text)))
#: What a claim checks.
Check = key(f"one of {', '.join(map(repr, CHECKS))}", choice(CHECKS))
#: The per-run metric a claim compares.
Metric = key(f"one of {', '.join(map(repr, METRICS))}", choice(METRICS))

Checkpoints = key("a list", items(integer(0), distinct=True, empty=True))


class RunTable(Table):
    """``[run]``: exactly one of ``env`` and ``envs`` (each a distinct folder label)."""

    env: EnvSpec = None
    envs: EnvList = None
    policies: PolicyListOrAll
    T: Count
    seeds: Seeds
    checkpoints: Checkpoints = ()
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
                first = self.envs[labels.index(label)]
                detail = f"{first!r} has the same label {label!r}"
                expected = "environments with distinct folder labels"
                bad(expected, at=f"envs[{i}]", got=self.envs[i], detail=detail)
        if max(self.checkpoints, default=0) > self.T:
            bad(f"checkpoints <= T = {self.T}", at="checkpoints", got=self.checkpoints)
        return self


class QuickRun(Table):
    """``[quick]`` of a sweep: what ``--quick`` replaces."""

    T: Count = None
    seeds: Seeds = None
    checkpoints: Checkpoints = None
    policy_params: AnyTable = None


class PaperTable(Table):
    """``[paper]``: the paper's printed numbers, printed beside the report's summary."""

    source: Text
    metrics: TextTable
    values: PaperValues
    #: published algorithms the config does not run (a record's holder, named as its source
    #: names it): their values are printed beside the measured policies
    others: Annotated[tuple[str, ...], Expect("an array of names")] = ()

    @model_validator(mode="after")
    def _check(self) -> PaperTable:
        for metric in self.metrics:
            if metric not in PAPER_METRICS:
                expected = f"a metric of the report's summary: one of {', '.join(PAPER_METRICS)}"
                bad(expected, at=f"metrics.{metric}", got=metric)
        for policy, values in self.values.items():
            for metric in values:
                if metric not in self.metrics:
                    expected = f"a metric of paper.metrics ({', '.join(self.metrics)})"
                    bad(expected, at=f"values.{policy}.{metric}", got=metric)
        return self


class ClaimTable(Table):
    """``[[claims]]``: see :class:`~deepbandits.experiments.config.model.Claim`."""

    text: Text
    check: Check
    policy: Text
    metric: Metric = "final_regret"
    than: Text = None

    @model_validator(mode="after")
    def _check(self) -> ClaimTable:
        against_best = CLAIM_CHECKS[self.check][0]
        if not against_best and self.than is None:
            bad(f"the policy to compare with (check {self.check!r})", at="than", got=MISSING)
        if against_best and self.than is not None:
            bad(f"no 'than' with check {self.check!r}", at="than", got=self.than)
        return self


class SweepFile(ConfigFile):
    """A config file of kind ``"sweep"``."""

    KIND: ClassVar[str] = "sweep"

    run: RunTable
    quick: QuickRun = QuickRun()
    paper: PaperTable | None = None
    claims: Annotated[tuple[ClaimTable, ...], Expect("an array of tables [[claims]]")] = ()

    def policy_list(self) -> list[str]:
        specs = self.run.policies
        return distinct_policy_names() if specs == [ALL] else list(specs)

    @model_validator(mode="after")
    def _check_references(self) -> SweepFile:
        """Claims and the paper's values name policies of the config; a claim compares two;
        the quick checkpoints fit the quick T; the quick policy parameters are taken and keep
        the policies distinct."""
        policies = self.policy_list()
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
            except (DeepBanditsError, ValueError, TypeError) as e:
                expected = "parameters the policies accept"
                bad(expected, at="quick.policy_params", got=params, detail=f"{spec}: {e}")
            if spec in quick[:i]:
                detail = f"{full[quick.index(spec)]!r} and {full[i]!r} both become {spec!r}"
                expected = "parameters that keep the policies distinct"
                bad(expected, at="quick.policy_params", got=params, detail=detail)

    def to_config(self, path: Path) -> ExperimentConfig:
        run = self.run
        paper: dict[str, Any] | None = None if self.paper is None else self.paper.model_dump()
        return ExperimentConfig(
            **self.common(path),
            envs=(run.env,) if run.env is not None else tuple(run.envs),
            policies=tuple(run.policies),
            T=run.T,
            seeds=tuple(run.seeds),
            checkpoints=tuple(sorted(run.checkpoints)),
            holdout_size=run.holdout_size,
            options={},
            quick=self.quick.model_dump(exclude_none=True),
            paper=paper,
            claims=tuple(Claim(**c.model_dump()) for c in self.claims),
        )
