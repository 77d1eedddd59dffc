"""A registry name: its :class:`Recipe`, and the class whose parameters are its keywords.

``make_policy("neural-sigma2-linucb", alpha=0.1)`` and ``NeuralSigma2LinUCB(alpha=0.1)`` build the
same policy: an instance of the class :func:`named_class` makes from the name's
:class:`Recipe`. The class extends the one the recipe composes
(:class:`~deepbandits.policies.ridge_ucb.RidgeUCB` for the ridge family), and its constructor
takes the recipe's keywords, checks them and hands the composition they describe to that class.
So there is one parameter world, scikit-learn's: ``get_params`` returns the keywords as given,
``type(p)(**p.get_params(deep=False))`` (and ``sklearn.base.clone``) builds an equal policy that
has learned nothing, ``set_params`` takes any key ``get_params`` returns, and ``repr`` is a call a
user can paste back.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from deepbandits._validation import check_unknown_keys
from deepbandits.errors import InputTypeError, InputValueError
from deepbandits.policies.params import (
    COMMON_SPECS,
    DECISION_DEFAULTS,
    Spec,
    check_param,
    check_search_space,
    render_spec,
)
from deepbandits.policies.policy import Policy
from deepbandits.policies.space import Param


@dataclass(frozen=True)
class Recipe:
    """A registry name: its keywords (type, range, meaning, default), the values it fixes
    (a variant's defining values) or forbids, the hyperparameters ``deepbandits tune``
    searches, and how the keywords become a policy: the class they compose (``base``) and
    ``compose``, which turns the checked keywords into that class's constructor arguments
    (None: the keywords are the class's own).

    :attr:`policy_class` is the class whose constructor takes the keywords
    (:func:`named_class`, named ``class_name``; ``base`` itself when
    the keywords are its own and nothing is fixed): ``LinUCB(alpha=0.1)`` is
    ``make_policy("linucb", alpha=0.1)``.
    """

    name: str
    doc: str
    specs: dict[str, Spec]
    defaults: dict[str, Any]
    base: type[Policy]
    compose: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    search_space: dict[str, Param] = field(default_factory=dict)
    fixed: dict[str, Any] = field(default_factory=dict)
    forbidden: dict[str, Any] = field(default_factory=dict)
    class_name: str | None = None
    policy_class: type[Policy] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not (isinstance(self.base, type) and issubclass(self.base, Policy)):
            raise InputTypeError(f"base must be a Policy class, but {self.base!r} is given")
        specs = {**COMMON_SPECS, **self.specs}
        for key, value in self.forbidden.items():
            spec = specs[key]
            if spec.kind == "choice":
                choices = tuple(c for c in spec.choices if c != value)
                specs[key] = Spec(spec.kind, spec.doc, choices=choices, optional=spec.optional)
        object.__setattr__(self, "specs", specs)
        check_search_space(self.name, specs, self.search_space)
        own = self.compose is None and not self.fixed and not self.forbidden
        if own and self.class_name is None:  # the class takes these keywords itself
            cls = self.base
            if "_registry_name" not in vars(cls):
                cls._registry_name = self.name
        else:
            cls = named_class(self, self.class_name)
        object.__setattr__(self, "policy_class", cls)

    @property
    def param_specs(self) -> dict[str, Spec]:
        """The spec of every keyword (as a policy class declared them)."""
        return self.specs

    @property
    def fixed_params(self) -> dict[str, Any]:
        return self.fixed

    def keywords(self, params: dict[str, Any]) -> dict[str, Any]:
        """Every keyword, in the order of :attr:`specs`: as given in ``params``, else its
        default (a fixed keyword its fixed value)."""
        given = {**DECISION_DEFAULTS, "seed": None, **self.defaults, **params, **self.fixed}
        return {key: given[key] for key in self.specs}

    def arguments(self, params: dict[str, Any]) -> dict[str, Any]:
        """The constructor arguments of :attr:`base` that the keywords ``params`` describe
        (the rest take their defaults), after checking every keyword."""
        check_unknown_keys(params, self.specs, self.name)
        for key, value in self.fixed.items():
            given = params.get(key, value)
            if isinstance(given, bool) != isinstance(value, bool) or given != value:
                raise InputValueError(
                    f"{self.name} fixes {key}={value!r}, but {params[key]!r} is given"
                )
        for key, value in self.forbidden.items():
            if params.get(key) == value:
                raise InputValueError(f"{self.name} does not allow {key}={value!r}")
        p = {key: check_param(key, self.specs[key], v) for key, v in self.keywords(params).items()}
        options = {k: p.pop(k) for k in COMMON_SPECS}
        return {**(p if self.compose is None else self.compose(p)), **options}

    def __repr__(self) -> str:
        return f"Recipe({self.name!r})"


class NamedPolicy:
    """What a registry name's class adds to the class it extends: keyword parameters.

    Its constructor takes the recipe's keywords (checked: unknown keys, types and ranges, the
    values a variant fixes or forbids) and builds the composition they describe; the keywords,
    as given and with the defaults filled in, are what :meth:`get_params` returns.
    """

    recipe: ClassVar[Recipe]
    _given: dict[str, Any]

    def __init__(self, **params: Any) -> None:
        recipe = type(self).recipe
        super().__init__(**recipe.arguments(params))  # type: ignore[call-arg]
        self._given = recipe.keywords(params)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The keywords, as given (defaults filled in). Its parts are built from them, so
        ``deep`` adds nothing: every parameter is a keyword."""
        return dict(self._given)

    def _defaults(self) -> dict[str, Any]:
        return type(self).recipe.keywords({})


def class_name(name: str) -> str:
    """``"quadratic-ucb"`` → ``"QuadraticUcb"``: the class name of a registry name that does
    not give one."""
    return "".join(word[:1].upper() + word[1:] for word in re.split(r"[^0-9A-Za-z]+", name))


def named_class(recipe: Recipe, name: str | None = None) -> type[Policy]:
    """The class of ``recipe``: a subclass of ``recipe.base`` whose constructor takes the
    recipe's keywords (named ``name``, else after the registry name)."""
    name = name or class_name(recipe.name)
    if not name.isidentifier():
        raise InputValueError(f"class_name must be a Python identifier, but {name!r} is given")
    defaults = recipe.keywords({})
    signature = inspect.Signature(
        [
            inspect.Parameter(key, inspect.Parameter.KEYWORD_ONLY, default=value)
            for key, value in defaults.items()
        ]
    )
    namespace = {
        "recipe": recipe,
        "_registry_name": recipe.name,
        "__doc__": _docstring(recipe, defaults),
        "__module__": "deepbandits.policies",
        "__qualname__": name,
        "__signature__": signature,
    }
    cls = type(name, (NamedPolicy, recipe.base), namespace)
    cls.param_specs = dict(recipe.specs)
    return cls  # type: ignore[return-value]


def _docstring(recipe: Recipe, defaults: dict[str, Any]) -> str:
    """The class's docstring: the recipe's summary and a numpydoc list of its keywords."""
    lines = [
        f"{recipe.doc}.",
        "",
        f"The registry name ``{recipe.name}``.",
        "",
        "Parameters",
        "-" * 10,
    ]
    for key, default in defaults.items():
        spec = recipe.specs[key]
        kind = "fixed" if key in recipe.fixed else render_spec(spec)
        lines += [f"{key} : {kind}, default={default!r}", f"    {spec.doc}"]
    return "\n".join(lines)
