"""Kind ``"matched"``: the matched protocol (:class:`MatchedFile`). Every key of ``[matched]``
defaults to the field of :class:`~deepbandits.experiments.matched.MatchedProtocol`, where the
protocol's settings are written once."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, ClassVar

from pydantic import model_validator

from deepbandits.experiments.config.common import OptionsFile, partial
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
from deepbandits.experiments.config.model import jsonable, protocol_of
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


class MatchedFile(OptionsFile):
    """A config file of kind ``"matched"``."""

    KIND: ClassVar[str] = "matched"

    matched: MatchedTable
    quick: QuickMatched = QuickMatched()

    @model_validator(mode="after")
    def _protocol_checks(self) -> MatchedFile:
        for where, quick in (("matched", False), ("quick.matched", True)):
            try:
                protocol_of(self.options(quick)).check()
            except ValueError as e:
                expected = "settings MatchedProtocol.check() accepts"
                bad(expected, at=where, shown="settings it refuses", detail=str(e))
        return self
