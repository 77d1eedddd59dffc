"""Kind ``"latency"``: the paper's Table latency, measured afresh
(:func:`~deepbandits.experiments.latency.run_latency`): the file (:class:`LatencyFile`) and the
experiment (:class:`LatencyConfig`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, model_validator

from deepbandits.errors import InputValueError
from deepbandits.experiments.config.common import ConfigFile, Experiment, partial, replaced
from deepbandits.experiments.config.errors import bad
from deepbandits.experiments.config.fields import Count, PolicyList, Seconds, Table, distinct_list
from deepbandits.specs import parse_spec

#: Minibatch steps per update, each measured.
Steps = distinct_list(Count, "a non-empty list of distinct items")
#: The paper's (arm selection, update) seconds of a policy.
Timing = Annotated[
    list[Seconds],
    Field(min_length=2, max_length=2, description="[arm selection seconds, update seconds]"),
]


class LatencyTable(Table):
    """``[latency]``: :func:`~deepbandits.experiments.latency.run_latency`'s settings."""

    policies: PolicyList
    rounds: Count = 100
    train_every: Count = 10
    steps: Steps = Field(default_factory=lambda: [2, 1000])
    feature_dim: Count = 64
    repeats: Count = 3
    threads: Count = 1
    paper: Annotated[dict[str, Timing], Field(default_factory=dict, description="a table")]


QuickLatencyTable = partial(LatencyTable)


class QuickLatency(Table):
    """``[quick]`` of a latency config: ``[quick.latency]``, keys of ``[latency]`` replaced."""

    latency: QuickLatencyTable | None = None  # type: ignore[valid-type]


class LatencyFile(ConfigFile):
    """A config file of kind ``"latency"``."""

    kind: Literal["latency"] = "latency"
    latency: Annotated[
        LatencyTable, Field(description="a [latency] table in a config of kind 'latency'")
    ]
    quick: QuickLatency = QuickLatency()

    @model_validator(mode="after")
    def _paper_of_policies_run(self) -> LatencyFile:
        """Every policy of ``paper`` is one of ``policies`` (by specification or name), in the
        full settings and in the quick ones."""
        for where, table in (("latency", self.latency), ("quick.latency", self._quick())):
            names = {*table.policies, *(parse_spec(p)[0] for p in table.policies)}
            for name in table.paper:
                if name not in names:
                    expected = f"a policy of {where}.policies ({', '.join(table.policies)})"
                    bad(expected, at=f"{where}.paper.{name}", shown=repr(name))
        return self

    def _quick(self) -> LatencyTable:
        return replaced(self.latency, self.quick.latency)

    def to_config(self, path: Path) -> LatencyConfig:
        """The experiment of the file at ``path``."""
        quick = None if self.quick.latency is None else self._quick()
        return LatencyConfig(**self.common(path), latency=self.latency, quick=quick)


class LatencyConfig(Experiment):
    """A latency experiment (kind ``"latency"``): ``latency`` holds
    :func:`~deepbandits.experiments.latency.run_latency`'s settings, ``quick`` those of
    ``--quick`` (None without ``[quick.latency]``)."""

    kind: Literal["latency"] = "latency"
    latency: LatencyTable
    quick: LatencyTable | None = None

    def scaled(self, quick: bool) -> LatencyConfig:
        """The config with the settings of ``--quick`` (``quick=True``), else itself."""
        if not quick or self.quick is None:
            return self
        return self.model_copy(update={"latency": self.quick})

    def overridden(self, seeds: Sequence[int] | None, T: int | None) -> LatencyConfig:
        """Refused: a latency experiment takes neither seeds nor T."""
        raise InputValueError(
            f"seeds and T override a sweep's or a matched protocol's settings; {self.name!r} "
            "is a latency experiment (set rounds and repeats in its config instead)"
        )
