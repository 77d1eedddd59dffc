"""Kind ``"latency"``: the paper's Table latency, measured afresh
(:func:`~deepbandits.experiments.latency.run_latency`; :class:`LatencyFile`)."""

from __future__ import annotations

from typing import Any

from deepbandits.experiments.config.common import options_file
from deepbandits.experiments.config.errors import bad
from deepbandits.experiments.config.fields import (
    Count,
    PolicyList,
    Table,
    integer,
    items,
    key,
    mapping,
    pair,
)
from deepbandits.specs import parse_spec

#: Minibatch steps per update, each measured.
Steps = key("a non-empty list", items(integer(1), distinct=True))
#: The paper's (arm selection, update) seconds by policy.
Timings = key("a table", mapping(pair))


class LatencyTable(Table):
    """``[latency]``: :func:`~deepbandits.experiments.latency.run_latency`'s options."""

    policies: PolicyList
    rounds: Count = 100
    train_every: Count = 10
    steps: Steps = (2, 1000)
    feature_dim: Count = 64
    repeats: Count = 3
    threads: Count = 1
    paper: Timings = {}  # noqa: RUF012 (pydantic copies a default)


class LatencyFile(options_file("latency", LatencyTable)):  # type: ignore[misc]
    """A config file of kind ``"latency"``: ``[latency]``, and ``[quick.latency]`` replacing
    some of its keys."""

    def check_options(self, options: dict[str, Any], where: str) -> None:
        """Every policy of ``paper`` is one of ``policies`` (by specification or name)."""
        names = {*options["policies"], *(parse_spec(p)[0] for p in options["policies"])}
        for name in options["paper"]:
            if name not in names:
                expected = f"a policy of {where}.policies ({', '.join(options['policies'])})"
                bad(expected, at=f"{where}.paper.{name}", shown=repr(name))
