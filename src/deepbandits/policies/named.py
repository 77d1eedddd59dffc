"""The class of a registry name: its keywords are its parameters.

``make_policy("neural-sigma2-linucb", alpha=0.1)`` and ``NeuralSigma2LinUCB(alpha=0.1)`` build the
same policy: an instance of the class :func:`named_class` makes from the name's
:class:`~deepbandits.policies.registry.Recipe`. The class extends the one the recipe composes
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
from typing import TYPE_CHECKING, Any, ClassVar

from deepbandits.errors import InputValueError
from deepbandits.policies.params import render_spec

if TYPE_CHECKING:
    from deepbandits.policies.policy import Policy
    from deepbandits.policies.registry import Recipe


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
