"""An experiment as its config file says: one model per kind, told apart by ``kind``
(:data:`ExperimentConfig`), each made from the model of its file (:data:`ConfigFileOfAnyKind`).

Every kind's model has ``scaled(quick)`` (its ``--quick`` version) and ``overridden(seeds, T)``
(the seeds and T of one run of it, where the kind takes them); what differs is its own."""

from __future__ import annotations

from typing import Annotated, TypeAlias

from pydantic import Field

from deepbandits.experiments.config.latency import LatencyConfig, LatencyFile
from deepbandits.experiments.config.matched import MatchedConfig, MatchedFile
from deepbandits.experiments.config.sweep import SweepConfig, SweepFile

#: An experiment of any kind: a :class:`SweepConfig`, a :class:`LatencyConfig` or a
#: :class:`MatchedConfig` (``pydantic.TypeAdapter(ExperimentConfig)`` reads one back from its
#: ``model_dump()``).
ExperimentConfig: TypeAlias = Annotated[
    SweepConfig | LatencyConfig | MatchedConfig, Field(discriminator="kind")
]
#: A config file of any kind, told apart by its ``kind``
#: (:func:`~deepbandits.experiments.config.load_config` gives a file without one the kind
#: ``"sweep"``).
ConfigFileOfAnyKind: TypeAlias = Annotated[
    SweepFile | LatencyFile | MatchedFile, Field(discriminator="kind")
]

__all__ = ["ConfigFileOfAnyKind", "ExperimentConfig"]
