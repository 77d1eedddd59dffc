"""Kind ``"matched"``: the matched protocol (:class:`MatchedFile`). Every key of ``[matched]``
defaults to the field of :class:`~deepbandits.experiments.matched.MatchedProtocol`, where the
protocol's settings are written once."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from deepbandits.experiments.config.common import options_file
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


class MatchedFile(options_file("matched", MatchedTable)):  # type: ignore[misc]
    """A config file of kind ``"matched"``: ``[matched]``, and ``[quick.matched]`` replacing
    some of its keys."""

    def check_options(self, options: dict[str, Any], where: str) -> None:
        """The protocol of the options is one :meth:`MatchedProtocol.check` accepts."""
        try:
            protocol_of(options).check()
        except ValueError as e:
            expected = "settings MatchedProtocol.check() accepts"
            bad(expected, at=where, shown="settings it refuses", detail=str(e))
