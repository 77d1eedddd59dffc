"""All or nothing: the one mechanism that makes a failing public call change nothing.

Inputs are validated before learned statistics change, so what a failing call may have touched
is small: the context dimension fixed by a first call (and the parts it initialised), the reward
counter, and the generator when something drew from it before the failure (a batch, whose later
requests may fail after earlier ones drew; or a policy that samples before its checks).
:func:`atomic` records those and puts them back if the block raises; ``read_only`` also puts them
back when it succeeds, so that a call that only reads (``predict``) leaves a fresh policy fresh.
:func:`atomic_whole` records every attribute (merging, loading), for calls that replace state.
``tests/test_robustness.py`` checks the whole ``state_dict`` after each failing call.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from deepbandits.policies.policy import Policy


@contextmanager
def atomic(policy: Policy, *, rng: bool = False, read_only: bool = False) -> Iterator[None]:
    """Undo the block's changes to the dimension, the counter and (with ``rng``, or for a
    sampling policy) the generator if it raises; with ``read_only``, undo them anyway."""
    generator = policy._rng.bit_generator
    kept = (
        policy.n_features_in_,
        policy.t_,
        generator.state if rng or read_only or policy._samples else None,
    )
    try:
        yield
    except BaseException:
        _restore(policy, kept)
        raise
    if read_only:
        _restore(policy, kept)


def _restore(policy: Policy, kept: tuple[object, ...]) -> None:
    dim, t, state = kept
    policy.n_features_in_ = dim  # type: ignore[assignment]
    policy.t_ = t  # type: ignore[assignment]
    if state is not None:
        policy._rng.bit_generator.state = state


@contextmanager
def atomic_whole(policy: Policy) -> Iterator[None]:
    """Undo every change to the policy's attributes and parts if the block raises."""
    before = dict(policy.__dict__)
    parts = copy.deepcopy(policy.parts)
    try:
        yield
    except BaseException:
        policy.__dict__.clear()
        policy.__dict__.update(before)
        policy.parts = parts
        raise
