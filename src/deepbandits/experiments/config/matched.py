"""Kind ``"matched"``: the matched protocol (:class:`MatchedFile`). Every key of ``[matched]``
defaults to the field of :class:`~deepbandits.experiments.matched.MatchedProtocol`, where the
protocol's settings are written once."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any, ClassVar

from pydantic import model_validator

from deepbandits.experiments.config.common import ConfigFile, partial
from deepbandits.experiments.config.errors import bad
from deepbandits.experiments.config.fields import (
    AnyTable,
    Count,
    DistinctTexts,
    EnvList,
    PolicyList,
    Seed,
    Seeds,
    Table,
    Text,
    integer,
    key,
    mapping,
)
from deepbandits.experiments.config.model import ExperimentConfig, jsonable, protocol_of
from deepbandits.experiments.matched import MatchedProtocol

#: The protocol's defaults, as a config file would write them.
DEFAULTS: dict[str, Any] = jsonable(asdict(MatchedProtocol()))
#: Rounds per run by environment.
Horizons = key("a table", mapping(integer(1)))


class MatchedTable(Table):
    """``[matched]``: the fields of :class:`~deepbandits.experiments.matched.MatchedProtocol`."""

    envs: EnvList = DEFAULTS["envs"]
    policies: PolicyList = DEFAULTS["policies"]
    reference: Text = DEFAULTS["reference"]
    T: Horizons = DEFAULTS["T"]
    default_T: Count = DEFAULTS["default_T"]
    tuning_seeds: Seeds = DEFAULTS["tuning_seeds"]
    eval_seeds: Seeds = DEFAULTS["eval_seeds"]
    n_trials: Count = DEFAULTS["n_trials"]
    search: DistinctTexts = DEFAULTS["search"]
    budget: AnyTable = DEFAULTS["budget"]
    sampler_seed: Seed = DEFAULTS["sampler_seed"]


#: ``[quick.matched]``: keys of ``[matched]`` replaced.
QuickMatchedTable = partial(MatchedTable, "QuickMatchedTable")


class QuickMatched(Table):
    """``[quick]`` of a matched protocol."""

    matched: QuickMatchedTable | None = None  # type: ignore[valid-type]


class MatchedFile(ConfigFile):
    """A config file of kind ``"matched"``."""

    KIND: ClassVar[str] = "matched"

    matched: MatchedTable
    quick: QuickMatched = QuickMatched()

    def options(self, quick: bool) -> dict[str, Any]:
        """The protocol's settings, with ``[quick.matched]``'s replaced when ``quick``."""
        options = jsonable(self.matched.model_dump())
        if quick and self.quick.matched is not None:
            options.update(jsonable(self.quick.matched.model_dump(exclude_none=True)))
        return options

    @model_validator(mode="after")
    def _protocol_checks(self) -> MatchedFile:
        for where, quick in (("matched", False), ("quick.matched", True)):
            try:
                protocol_of(self.options(quick)).check()
            except ValueError as e:
                expected = "settings MatchedProtocol.check() accepts"
                bad(expected, at=where, shown="settings it refuses", detail=str(e))
        return self

    def to_config(self, path: Path) -> ExperimentConfig:
        quick = self.quick.matched
        options = self.options(False)
        return ExperimentConfig(
            **self.common(path),
            envs=(),
            policies=tuple(options["policies"]),
            T=None,
            seeds=(),
            checkpoints=(),
            holdout_size=500,
            options=options,
            quick={}
            if quick is None
            else {"matched": jsonable(quick.model_dump(exclude_none=True))},
            paper=None,
            claims=(),
        )
