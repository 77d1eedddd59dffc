"""What every part of a policy shares: parameters and learned state kept apart.

A part (a feature map, a head, a variance source, an exploration rule, a trainer) is a small
object with one job. As in scikit-learn, its constructor stores its parameters unchanged under
their own names (:meth:`Part.get_params` reads them back from the signature) and its class may
declare a :class:`~deepbandits.policies.params.Spec` per parameter, checked by
:meth:`Part.validate`; what it learns gets names ending in ``_`` and is written by
:meth:`Part.state_dict` and read back by :meth:`Part.load_state_dict`, as in PyTorch. A policy is
the union of its parts: its parameters reach a part as ``part__param`` and its state is theirs.

A part with several parameters declares them as annotated class attributes and is decorated by
:func:`part`, which writes that constructor (a dataclass's; learned state is set up in
``__post_init__``). A part needs no base class: any object with ``get_params``/``set_params``,
``validate``, ``state_dict``/``load_state_dict`` and the methods of its role (see each role's
protocol) fits. This class only saves writing them.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from deepbandits.errors import InputValueError
from deepbandits.policies.params import Spec, check_param

P = TypeVar("P", bound=type)


def part(cls: P) -> P:
    """The constructor of a part from its annotated parameters, as a dataclass: ``__init__``
    stores each under its own name, in order, with its default (then ``__post_init__``, if
    defined, sets up the learned state); the repr and identity stay :class:`Part`'s."""
    return dataclass(repr=False, eq=False)(cls)  # type: ignore[no-any-return]


class Part:
    """Parameters from ``__init__``, checked by :attr:`specs`; learned state separate."""

    #: The type and range of each parameter (those without a spec are checked by
    #: :meth:`_check`).
    specs: ClassVar[dict[str, Spec]] = {}

    @classmethod
    def param_names(cls) -> list[str]:
        """The constructor's parameters, in order."""
        signature = inspect.signature(cls.__init__)
        kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        return [n for n, p in signature.parameters.items() if n != "self" and p.kind in kinds]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The parameters as given (after validation, a pair is a tuple); a part has no parts
        of its own, so ``deep`` (scikit-learn's keyword) changes nothing."""
        return {name: getattr(self, name) for name in self.param_names()}

    def set_params(self, **params: Any) -> Part:
        """Change parameters; a value that does not validate changes nothing."""
        known = self.param_names()
        for key in params:
            if key not in known:
                raise InputValueError(
                    f"{type(self).__name__} has no parameter {key!r}; parameters: "
                    f"{', '.join(known) or 'none'}"
                )
        old = self.get_params()
        for key, value in params.items():
            setattr(self, key, value)
        try:
            self.validate()
        except BaseException:
            for key, value in old.items():
                setattr(self, key, value)
            self.validate()
            raise
        return self

    def validate(self) -> None:
        """Check every parameter against its spec, then the rules that tie them together."""
        for key, spec in self.specs.items():
            setattr(self, key, check_param(key, spec, getattr(self, key)))
        self._check()

    def _check(self) -> None:
        """Rules between parameters, and what they define (no learned state)."""
        return None

    def state_dict(self) -> dict[str, Any]:
        """Learned state (arrays and plain values)."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` wrote."""
        return None

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"
