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
    from deepbandits.policies.core import PolicyCore


class atomic:
    """Undo the block's changes to the dimension, the counter and (with ``rng``, or for a
    sampling policy) the generator if it raises; with ``read_only``, undo them anyway.

    A class rather than a generator-based context manager: it runs on every decision and
    reward, where contextlib's overhead would be a tenth of the time of a LinUCB round.
    """

    __slots__ = ("_block_dim", "_dim", "_policy", "_read_only", "_state", "_t")

    def __init__(self, policy: PolicyCore, *, rng: bool = False, read_only: bool = False) -> None:
        self._policy = policy
        self._read_only = read_only
        self._dim = policy.n_features_in_
        self._block_dim = policy.block_dim_
        self._t = policy.t_
        keep = rng or read_only or policy._samples
        self._state = policy._rng.bit_generator.state if keep else None

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        if kind is not None or self._read_only:
            policy = self._policy
            policy.n_features_in_ = self._dim
            policy.block_dim_ = self._block_dim
            policy.t_ = self._t
            if self._state is not None:
                policy._rng.bit_generator.state = self._state


@contextmanager
def atomic_whole(policy: PolicyCore) -> Iterator[None]:
    """Undo every change to the policy's attributes and parts if the block raises."""
    before = dict(policy.__dict__)
    parts = copy.deepcopy(policy.parts)
    try:
        yield
    except BaseException:
        policy.__dict__.clear()
        policy.__dict__.update(before)
        policy.__dict__["_parts"] = parts
        raise
