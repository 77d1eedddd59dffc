"""Input checks shared by every public entry point.

Each helper returns a cleaned value or raises one of the library's errors
(:class:`~deepbandits.errors.InputTypeError` for a value of the wrong type,
:class:`~deepbandits.errors.InputValueError` for one out of range) with a message that names the
argument, what was expected and what was given, so a bad call fails at the API boundary and never
deep inside numpy or torch. Numbers are numbers: a string, a bool or a complex value is refused
where a real number is expected, never converted.

This module imports nothing else from the package, so every module may use it.
"""

from __future__ import annotations

import difflib
import math
import numbers
from collections.abc import Iterable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from deepbandits.errors import InputTypeError, InputValueError

#: Largest magnitude accepted for a context entry or a reward: the square of such a value stays
#: finite in float32 (the networks; 3.4e38), and products of a few of them stay finite in the
#: float64 ridge statistics, so one value can never turn a policy's state into inf or NaN.
MAX_ABS_INPUT = 1e18


_FLOAT64 = np.dtype(np.float64)


def as_real_array(values: Any, name: str) -> NDArray[np.float64]:
    """``values`` as a float64 array, refusing what is not real numbers.

    Booleans, integers and floats are converted; strings, bytes, complex numbers and objects
    that are not real numbers raise :class:`~deepbandits.errors.InputTypeError` (numpy would turn
    ``"1.5"`` into 1.5, or drop an imaginary part, without a word).
    """
    if type(values) is np.ndarray and values.dtype is _FLOAT64:  # already what is wanted
        return values
    try:
        raw = np.asarray(values)
    except (TypeError, ValueError, RuntimeError) as exc:  # ragged lists, CUDA tensors, ...
        raise InputTypeError(
            f"{name} must be an array of real numbers, but {type(values).__name__} is given ({exc})"
        ) from exc
    if raw.dtype.kind == "O" and all(
        isinstance(v, numbers.Real) and not isinstance(v, bool) for v in raw.flat
    ):
        try:
            raw = raw.astype(np.float64)
        except OverflowError:  # an integer like 10**400 (JSON has no bound on them)
            huge = next(v for v in raw.flat if not _fits_float(v))
            raise _out_of_range(name, huge) from None
    if raw.dtype.kind not in "biuf":
        raise InputTypeError(
            f"{name} must be an array of real numbers, but an array of {raw.dtype} "
            f"({type(values).__name__}) is given"
        )
    return raw.astype(np.float64, copy=False)


def check_arm(arm: Any, n_arms: int) -> int:
    """Validate an arm index against the number of arms offered this round."""
    if isinstance(arm, bool) or not isinstance(arm, int | np.integer):
        raise InputTypeError(f"arm must be an integer index, got {arm!r}")
    if not 0 <= int(arm) < n_arms:
        raise InputValueError(
            f"arm index {arm} is out of range for {n_arms} arms (valid: 0..{n_arms - 1})"
        )
    return int(arm)


def check_real(value: Any, name: str) -> float:
    """A real number as a float: ints, floats, numpy scalars and 0-d arrays or tensors.

    Strings, bools, complex numbers and arrays of more than one value are refused with
    :class:`~deepbandits.errors.InputTypeError`.
    """
    if getattr(value, "ndim", None) == 0 and hasattr(value, "item"):
        value = value.item()  # a 0-d numpy array or torch tensor
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise InputTypeError(
            f"{name} must be a real number, but {value!r} ({type(value).__name__}) is given"
        )
    try:
        return float(value)
    except OverflowError:  # an integer like 10**400 (JSON has no bound on them)
        raise _out_of_range(name, value) from None


def _fits_float(value: numbers.Real) -> bool:
    try:
        float(value)
    except OverflowError:
        return False
    return True


def _out_of_range(name: str, value: numbers.Real) -> InputValueError:
    """The error for a real number beyond float64's range (which ``float`` cannot convert)."""
    if isinstance(value, int):
        # its digits, not the number: Python refuses to print an int of over 4,300 digits
        given = f"an integer of about {int(value.bit_length() * math.log10(2)) + 1} digits"
    else:
        given = f"a {type(value).__name__} of greater magnitude"
    return InputValueError(
        f"{name} must be within float64's range (magnitude at most {np.finfo(np.float64).max:.4g})"
        f", but {given} is given"
    )


def check_finite_scalar(value: Any, name: str, *, bound: float | None = None) -> float:
    """Validate a finite real scalar (a reward, a variance, ...), at most ``bound`` in size."""
    out = check_real(value, name)
    if not math.isfinite(out):
        raise InputValueError(f"{name} must be finite, but {out} is given")
    if bound is not None and abs(out) > bound:
        raise InputValueError(
            f"{name} must be at most {bound:g} in absolute value, but {out:g} is given; rescale it"
        )
    return out


def check_bool(value: Any, name: str) -> bool:
    """Validate a flag: ``True`` or ``False`` (numpy bools included), nothing else."""
    if not isinstance(value, bool | np.bool_):
        raise InputTypeError(f"{name} must be True or False, but {value!r} is given")
    return bool(value)


def check_positive(
    value: Any, name: str, *, allow_zero: bool = False, bound: float | None = None
) -> float:
    """Validate a positive (or non-negative) finite scalar, at most ``bound``."""
    out = check_finite_scalar(value, name, bound=bound)
    if out < 0 or (out == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise InputValueError(f"{name} must be {bound}, but {value!r} is given")
    return out


def check_int(value: Any, name: str, *, minimum: int = 0) -> int:
    """Validate an integer parameter with a lower bound."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise InputTypeError(
            f"{name} must be an integer, but {value!r} ({type(value).__name__}) is given"
        )
    if value < minimum:
        raise InputValueError(f"{name} must be >= {minimum}, but {value!r} is given")
    return int(value)


def check_seed(seed: Any, name: str = "seed") -> int | None:
    """Validate a seed: ``None`` or an integer ``>= 0`` (what numpy and torch accept)."""
    if seed is None:
        return None
    seed = check_int(seed, name, minimum=0)
    if seed >= 2**63:
        raise InputValueError(f"{name} must be < 2**63, but {seed} is given")
    return seed


def check_choice(value: Any, name: str, choices: Iterable[str]) -> str:
    """Validate a string option against its allowed values; a near miss is named (difflib's
    closest match, "did you mean 'linucb'?")."""
    options = tuple(choices)
    if not isinstance(value, str) or value not in options:
        close = difflib.get_close_matches(value, options, n=1) if isinstance(value, str) else []
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise InputValueError(
            f"unknown {name} {value!r}; expected one of {', '.join(map(repr, options))}{hint}"
        )
    return str(value)


def check_reward_range(reward_range: Any) -> tuple[float, float]:
    """Validate a reward range ``(a, b)`` with ``a < b``, both finite."""
    if isinstance(reward_range, str | bytes | dict) or not hasattr(reward_range, "__len__"):
        raise InputTypeError(f"reward_range must be a pair (a, b), but {reward_range!r} is given")
    if len(reward_range) != 2:
        raise InputValueError(f"reward_range must be a pair (a, b), but {reward_range!r} is given")
    a, b = reward_range
    a = check_finite_scalar(a, "reward_range lower bound a", bound=MAX_ABS_INPUT)
    b = check_finite_scalar(b, "reward_range upper bound b", bound=MAX_ABS_INPUT)
    if not a < b:
        raise InputValueError(f"reward_range needs a < b, but a={a}, b={b} is given")
    return a, b


def check_unknown_keys(given: Iterable[str], allowed: Iterable[str], what: str) -> None:
    """Reject unknown keyword names with a message listing the valid ones."""
    allowed_set = set(allowed)
    unknown = sorted(set(given) - allowed_set)
    if unknown:
        close = {k: difflib.get_close_matches(k, allowed_set, n=1) for k in unknown}
        hints = [f"{m[0]!r} for {k!r}" for k, m in close.items() if m]
        hint = f" (did you mean {', '.join(hints)}?)" if hints else ""
        raise InputValueError(
            f"unknown option(s) {', '.join(map(repr, unknown))} for {what}{hint}; "
            f"valid options: {', '.join(sorted(allowed_set))}"
        )
