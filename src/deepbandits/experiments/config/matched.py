"""Kind ``"matched"``: the matched protocol: the file (:class:`MatchedFile`) and the experiment
(:class:`MatchedConfig`). A key of ``[matched]`` replaces the field of
:class:`~deepbandits.experiments.matched.MatchedProtocol` (where the protocol's settings are
written once), a key of ``[quick.matched]`` that of ``[matched]``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from deepbandits.errors import DeepBanditsError
from deepbandits.experiments.config.common import ConfigFile, Experiment
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
)
from deepbandits.experiments.matched import MatchedProtocol, matched_protocol


class MatchedTable(Table):
    """``[matched]`` (or ``[quick.matched]``): fields of
    :class:`~deepbandits.experiments.matched.MatchedProtocol` to replace."""

    envs: EnvList | None = None
    policies: PolicyList | None = None
    reference: Text | None = None
    T: Annotated[dict[str, Count], Field(description="a table")] | None = None
    default_T: Count | None = None
    tuning_seeds: Seeds | None = None
    eval_seeds: Seeds | None = None
    n_trials: Count | None = None
    search: DistinctTexts | None = None
    budget: AnyTable | None = None
    sampler_seed: Seed | None = None

    def protocol(self, base: MatchedProtocol) -> MatchedProtocol:
        """``base`` with the settings given here replaced."""
        given = self.model_dump(exclude_none=True)
        return replace(
            base, **{k: tuple(v) if isinstance(v, list) else v for k, v in given.items()}
        )


class QuickMatched(Table):
    """``[quick]`` of a matched config: ``[quick.matched]``, keys of ``[matched]`` replaced."""

    matched: MatchedTable | None = None


class MatchedFile(ConfigFile):
    """A config file of kind ``"matched"``."""

    kind: Literal["matched"] = "matched"
    matched: Annotated[
        MatchedTable, Field(description="a [matched] table in a config of kind 'matched'")
    ]
    quick: QuickMatched = QuickMatched()

    @model_validator(mode="after")
    def _protocols_accepted(self) -> MatchedFile:
        """The full and the quick protocol are ones that
        :meth:`~deepbandits.experiments.matched.MatchedProtocol.check` accepts."""
        for where, protocol in (("matched", self._full()), ("quick.matched", self._quick())):
            try:
                protocol.check()
            except DeepBanditsError as e:
                expected = "settings MatchedProtocol.check() accepts"
                bad(expected, at=where, shown="settings it refuses", detail=str(e))
        return self

    def _full(self) -> MatchedProtocol:
        return self.matched.protocol(MatchedProtocol())

    def _quick(self) -> MatchedProtocol:
        quick = self.quick.matched
        return self._full() if quick is None else quick.protocol(self._full())

    def to_config(self, path: Path) -> MatchedConfig:
        """The experiment of the file at ``path``."""
        quick = None if self.quick.matched is None else self._quick()
        return MatchedConfig(**self.common(path), protocol=self._full(), quick=quick)


class MatchedConfig(Experiment):
    """The matched protocol (kind ``"matched"``): ``protocol`` holds its settings, ``quick``
    those of ``--quick`` (None without ``[quick.matched]``)."""

    kind: Literal["matched"] = "matched"
    protocol: MatchedProtocol
    quick: MatchedProtocol | None = None

    def scaled(self, quick: bool) -> MatchedConfig:
        """The config with the protocol of ``--quick`` (``quick=True``), else itself."""
        if not quick or self.quick is None:
            return self
        return self.model_copy(update={"protocol": self.quick})

    def with_protocol(self, changes: Mapping[str, Any]) -> MatchedConfig:
        """The config with settings of its protocol replaced (the keywords of
        :func:`~deepbandits.experiments.matched.matched_protocol`: ``envs``, ``n_trials``,
        ``eval_seeds``, ``tuning_seeds``, ``T``, ...), checked."""
        protocol = matched_protocol(base=self.protocol, **changes)
        return self.model_copy(update={"protocol": protocol})

    def overridden(self, seeds: Sequence[int] | None, T: int | None) -> MatchedConfig:
        """The protocol's evaluation seeds and every environment's T replaced (None: kept)."""
        changes = {"eval_seeds": seeds, "T": T}
        return self.with_protocol({k: v for k, v in changes.items() if v is not None})
