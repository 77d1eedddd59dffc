"""What every experiment has, whichever its kind: in its file (:class:`ConfigFile`: name, title,
description, cost) and once read (:class:`Experiment`); and the ``[quick.<kind>]`` table of a
kind whose table holds one function's settings (:func:`partial`, :func:`replaced`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, create_model, model_validator
from pydantic.fields import FieldInfo

from deepbandits.experiments.config.errors import bad
from deepbandits.experiments.config.fields import Seconds, String, Table, Text, TextList

TableT = TypeVar("TableT", bound=Table)


class CostTable(Table):
    """``[cost]``: expected CPU seconds on one core, and how they were obtained."""

    quick_cpu_s: Seconds
    full_cpu_s: Seconds
    note: String = ""


class ConfigFile(Table):
    """The keys every config file may have; a model per kind adds its ``kind`` and tables,
    and makes its :class:`Experiment` (``to_config``)."""

    name: Text | None = None
    title: Text | None = None
    reproduces: TextList = Field(default_factory=list)
    description: String = ""
    cost: CostTable | None = None

    @model_validator(mode="after")
    def _named_as_its_file(self, info: ValidationInfo) -> ConfigFile:
        path: Path = (info.context or {})["path"]
        if self.name is not None and self.name != path.stem:
            bad(f"the file's stem {path.stem!r}", at="name", got=self.name)
        return self

    def common(self, path: Path) -> dict[str, Any]:
        """The fields of :class:`Experiment` (the file's name, title, ..., cost)."""
        name = self.name or path.stem
        return {
            "name": name,
            "title": self.title or name,
            "reproduces": tuple(self.reproduces),
            "description": self.description,
            "path": path,
            "quick_cpu_s": None if self.cost is None else self.cost.quick_cpu_s,
            "full_cpu_s": None if self.cost is None else self.cost.full_cpu_s,
            "cost_note": "" if self.cost is None else self.cost.note,
        }


class Experiment(BaseModel):
    """What every experiment has, whichever its kind (a model per kind adds its settings).

    ``quick_cpu_s`` and ``full_cpu_s`` are the expected CPU seconds on one core (None when the
    file has no ``[cost]``), ``cost_note`` how they were obtained. ``model_dump(mode="json")``
    gives every field as JSON-able values, to save beside the results.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    title: str
    reproduces: tuple[str, ...] = ()
    description: str = ""
    path: Path
    quick_cpu_s: float | None = None
    full_cpu_s: float | None = None
    cost_note: str = ""


def partial(table: type[TableT]) -> type[Table]:
    """``table`` with every key optional and no defaults: a ``[quick.<kind>]`` table, whose
    keys replace those of the full one (:func:`replaced`)."""
    fields: dict[str, Any] = {
        name: (
            info.annotation,
            FieldInfo.merge_field_infos(info, default=None, default_factory=None),
        )
        for name, info in table.model_fields.items()
    }
    stem = table.__name__
    return create_model(f"Quick{stem}", __base__=Table, __module__=table.__module__, **fields)


def replaced(table: TableT, changes: Table | None) -> TableT:
    """``table`` with the keys that ``changes`` (a :func:`partial` table) gives replaced."""
    if changes is None:
        return table
    return table.model_copy(update=changes.model_dump(exclude_none=True))
