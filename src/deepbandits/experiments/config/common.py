"""What every config file has, whichever its kind: its name, title, description, cost, and no
table of another kind (:class:`ConfigFile`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from pydantic import ValidationInfo, create_model, model_validator

from deepbandits.experiments.config.errors import MISSING, bad
from deepbandits.experiments.config.fields import (
    Number,
    String,
    Table,
    Text,
    TextList,
)
from deepbandits.experiments.config.model import ExperimentConfig, jsonable

#: Kinds of experiment, and the table each one needs.
SECTIONS: dict[str, str] = {"sweep": "run", "latency": "latency", "matched": "matched"}


class CostTable(Table):
    """``[cost]``: expected CPU seconds on one core, and how they were obtained."""

    quick_cpu_s: Number
    full_cpu_s: Number
    note: String = ""


class ConfigFile(Table):
    """The keys every config file may have; a subclass per kind adds its tables."""

    #: The kind of the subclass.
    KIND: ClassVar[str] = ""

    name: Text = None
    title: Text = None
    reproduces: TextList = ()
    description: String = ""
    kind: String = "sweep"
    cost: CostTable | None = None

    @model_validator(mode="before")
    @classmethod
    def _own_tables_only(cls, data: Any) -> Any:
        """No table of another kind, and the paper's numbers and claims only in a sweep."""
        if not isinstance(data, dict):
            return data
        for owner, section in SECTIONS.items():
            if owner == cls.KIND and section not in data:
                bad(
                    f"a [{section}] table in a config of kind {cls.KIND!r}", at=section, got=MISSING
                )
            if owner != cls.KIND and section in data:
                expected = f"no [{section}] table in a config of kind {cls.KIND!r}"
                bad(expected, at=section, got=data[section])
        for section in ("paper", "claims"):
            if section in data and cls.KIND != "sweep":
                bad(f"no {section} in a config of kind {cls.KIND!r}", at=section, got=data[section])
        return data

    @model_validator(mode="after")
    def _named_as_its_file(self, info: ValidationInfo) -> ConfigFile:
        path: Path = (info.context or {})["path"]
        if self.name is not None and self.name != path.stem:
            bad(f"the file's stem {path.stem!r}", at="name", got=self.name)
        return self

    def common(self, path: Path) -> dict[str, Any]:
        """The fields of :class:`~deepbandits.experiments.config.model.ExperimentConfig` that
        every kind has."""
        name = self.name or path.stem
        return {
            "name": name,
            "title": self.title or name,
            "reproduces": tuple(self.reproduces),
            "description": self.description,
            "kind": self.KIND,
            "path": path,
            "quick_cpu_s": None if self.cost is None else self.cost.quick_cpu_s,
            "full_cpu_s": None if self.cost is None else self.cost.full_cpu_s,
            "cost_note": "" if self.cost is None else self.cost.note,
        }


class OptionsFile(ConfigFile):
    """A kind whose table (``[latency]``, ``[matched]``: named as the kind) holds the options
    of one function, and whose ``[quick.<kind>]`` replaces some of them. Its model is made by
    :func:`options_file`; a kind's checks across keys are its :meth:`check_options`."""

    @model_validator(mode="after")
    def _options_accepted(self) -> OptionsFile:
        """:meth:`check_options` of the full options and of the quick ones."""
        for where, quick in ((self.KIND, False), (f"quick.{self.KIND}", True)):
            self.check_options(self.options(quick), where)
        return self

    def check_options(self, options: dict[str, Any], where: str) -> None:
        """Refuse (:func:`~deepbandits.experiments.config.errors.bad`, at ``where``) options
        whose keys do not go together; every set of valid keys goes together here."""

    def options(self, quick: bool) -> dict[str, Any]:
        """The options of the kind's table, with ``[quick.<kind>]``'s replaced when
        ``quick``."""
        options = jsonable(getattr(self, self.KIND).model_dump())
        replaced = getattr(self.quick, self.KIND)
        if quick and replaced is not None:
            options.update(jsonable(replaced.model_dump(exclude_none=True)))
        return options

    def to_config(self, path: Path) -> ExperimentConfig:
        """The :class:`~deepbandits.experiments.config.model.ExperimentConfig` of the file."""
        replaced = getattr(self.quick, self.KIND)
        options = self.options(False)
        quick = (
            {}
            if replaced is None
            else {self.KIND: jsonable(replaced.model_dump(exclude_unset=True))}
        )
        return ExperimentConfig(
            **self.common(path),
            envs=(),
            policies=tuple(options["policies"]),
            T=None,
            seeds=(),
            checkpoints=(),
            holdout_size=500,
            options=options,
            quick=quick,
            paper=None,
            claims=(),
        )


def partial(table: type[Table], name: str) -> type[Table]:
    """``table`` with every key optional and no defaults: a ``[quick.<kind>]`` table, whose
    keys replace those of the full one."""
    fields: dict[str, Any] = {
        field: (info.rebuild_annotation(), None) for field, info in table.model_fields.items()
    }
    return create_model(name, __base__=Table, **fields)


def options_file(kind: str, table: type[Table]) -> type[OptionsFile]:
    """The model of a config file of kind ``kind``: its table ``[kind]`` is ``table`` (named
    ``<Stem>Table``), and ``[quick]`` holds ``[quick.<kind>]`` (``Quick<Stem>``), whose keys
    replace those of ``[kind]`` (``Quick<Stem>Table``, :func:`partial`). A kind subclasses it,
    adding its :meth:`~OptionsFile.check_options`."""
    stem = table.__name__.removesuffix("Table")
    replaced = partial(table, f"Quick{stem}Table")
    quick: type[Table] = create_model(
        f"Quick{stem}",
        __base__=Table,
        __module__=table.__module__,
        __doc__=f"``[quick]`` of a config of kind {kind!r}.",
        **{kind: (replaced | None, None)},  # type: ignore[dict-item]
    )
    model = create_model(
        f"{stem}OptionsFile",
        __base__=OptionsFile,
        __module__=table.__module__,
        __doc__=f"A config file of kind {kind!r}.",
        **{kind: (table, ...), "quick": (quick, quick())},  # type: ignore[dict-item]
    )
    model.KIND = kind
    return model
