"""The scale of the contexts a service has decided on, and the check that refuses a request far
outside it.

A ridge policy's exploration width of an arm is ``√(xᵀ A⁻¹ x)``. One context some ten orders of
magnitude larger than every earlier one, learned with its reward, puts a huge ``x xᵀ`` into
``A``: the widths of every later, ordinary context are then zero to float64's precision, for
good, and the policy stops exploring without an error or a note (as a probe found with contexts
1e10 times the earlier ones, still inside the bound every number is checked against). Such a
request is almost always a unit or encoding mistake upstream, so the service refuses it (422)
before the policy sees it, naming the ratio, and changes nothing; a deliberate change of scale
is a new state folder (or a larger ``max_context_ratio``).

:class:`ContextScale` keeps the largest absolute value of any context decided on; the first
request sets it, and a request whose largest value exceeds it ``max_ratio`` times is refused.
The largest value is kept in every checkpoint's sidecar and grows again while the log replays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from deepbandits.errors import InputValueError

#: Default of ``max_context_ratio``: a request may reach a million times the largest value seen.
MAX_CONTEXT_RATIO = 1e6


def largest_value(contexts: Any) -> float | None:
    """The largest absolute value of ``contexts``: a float array, or a list of requests' arrays
    (a batch of several shapes); None where they are not numbers or not finite (the policy's
    own check then names what is wrong with them)."""
    if isinstance(contexts, list):
        values = [largest_value(_floats(x)) for x in contexts]
        return None if not values or None in values else max(values)  # type: ignore[type-var]
    if not isinstance(contexts, np.ndarray) or contexts.size == 0 or contexts.dtype.kind != "f":
        return None
    largest = max(float(contexts.max()), -float(contexts.min()))  # no |x| array made
    return largest if np.isfinite(largest) else None


def _floats(contexts: Any) -> Any:
    """One request's contexts as a float array where they convert (else as they are)."""
    if isinstance(contexts, np.ndarray):
        return contexts
    try:
        return np.asarray(contexts, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        return contexts


class ContextScale:
    """The largest absolute context value seen, and the check of new requests (module notes).

    Parameters
    ----------
    max_ratio : float or None
        How many times the largest value seen a request may reach; None: no check.
    largest : float, default=0.0
        The largest value seen so far (0: none yet).
    """

    def __init__(self, max_ratio: float | None, largest: float = 0.0) -> None:
        if max_ratio is not None and (
            isinstance(max_ratio, bool)
            or not isinstance(max_ratio, int | float)
            or not max_ratio > 1
            or not np.isfinite(max_ratio)
        ):
            raise InputValueError(
                f"max_context_ratio must be a finite number > 1 or None, but {max_ratio!r} is given"
            )
        self.max_ratio = max_ratio
        self.largest = float(largest)

    def check(self, contexts: Any) -> float | None:
        """The request's largest value; raises :class:`~deepbandits.errors.InputValueError`
        when it is more than ``max_ratio`` times the largest seen (nothing changes)."""
        value = largest_value(contexts)
        if value is None or self.max_ratio is None or self.largest == 0.0:
            return value
        if value > self.max_ratio * self.largest:
            raise InputValueError(
                f"contexts must stay within {self.max_ratio:g} times the largest absolute value "
                f"this service has decided on ({self.largest:.3g}), but they reach {value:.3g} "
                f"({value / self.largest:.3g} times it): learned, such a context would shrink "
                "every later exploration width to zero. Check the features' units and "
                "scaling, or serve the new scale from a new state folder "
                "(--max-context-ratio sets the bound)"
            )
        return value

    def seen(self, value: float | None) -> None:
        """Record a request's largest value (after it was decided)."""
        if value is not None and value > self.largest:
            self.largest = value
