"""The rounds a feature network trains on (Algorithm 1 trains on every round played so far).

:class:`History` keeps each round's context, reward, observation weight and head, as float64
numpy buffers that grow by doubling, or as a ring of the last ``max_history`` rounds.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from deepbandits._convert import as_numpy
from deepbandits.encoding import BlockContexts, Contexts
from deepbandits.errors import CheckpointError, InputValueError


class History:
    """The rounds a network trains on: every round played, or the last ``max_history`` of them.

    Each round is added as it is played (never only on training rounds). Below the cap the
    buffers grow by doubling, never beyond the cap, so the network trains on the whole history
    as in Algorithm 1. At the cap they stay one fixed block of ``max_history`` rows, a ring: each
    new round overwrites the oldest one (a sliding window, as KernelUCB's ``max_history``), in
    row ``seen % max_history``, so the ring's position is the count of rounds added. Nothing is
    drawn at random: a run that never exceeds the cap is the uncapped run, bit for bit, and one
    that does differs only by what the network trains on. Once the ring has turned, the rows are
    not in time order (training draws them uniformly, so order does not matter).

    Block-encoded contexts (:class:`~deepbandits.encoding.BlockContexts`) are kept as their
    non-zero block and its index: D + 1 numbers per round instead of K·D.
    """

    _FIELDS = ("rewards", "weights", "heads")

    def __init__(
        self,
        dim: int,
        *,
        max_history: int | None = None,
        capacity: int = 1024,
    ) -> None:
        self.dim = dim
        self.max_history = max_history
        self.size = 0
        self.seen = 0  # rounds added, kept or overwritten since: the ring's position
        self._allocate(capacity, None)

    def _allocate(self, capacity: int, n_blocks: int | None) -> None:
        """Empty buffers of ``capacity`` rows (at most ``max_history``); with ``n_blocks``, the
        contexts are blocks of dim/n_blocks numbers and their indices."""
        if n_blocks is not None and self.dim % n_blocks:
            raise InputValueError(
                f"{n_blocks} blocks do not divide the context dimension {self.dim}"
            )
        if self.max_history is not None:
            capacity = min(capacity, self.max_history)
        self.n_blocks = n_blocks
        width = self.dim if n_blocks is None else self.dim // n_blocks
        self.contexts = np.empty((capacity, width), dtype=np.float64)
        self.slots = np.empty(0 if n_blocks is None else capacity, dtype=np.int64)
        self.rewards = np.empty(capacity, dtype=np.float64)
        self.weights = np.empty(capacity, dtype=np.float64)
        self.heads = np.empty(capacity, dtype=np.int64)

    def _arrays(self) -> tuple[str, ...]:
        return ("contexts", *self._FIELDS, *(("slots",) if self.n_blocks is not None else ()))

    def _grow(self) -> None:
        """Double the buffers (up to ``max_history`` rows), keeping their rows."""
        new = 2 * len(self.rewards)
        if self.max_history is not None:
            new = min(new, self.max_history)
        for name in self._arrays():
            old = getattr(self, name)
            grown = np.empty((new, *old.shape[1:]), dtype=old.dtype)
            grown[: len(old)] = old
            setattr(self, name, grown)

    def _row(self) -> int:
        """The row the next round goes to: the end, or at the cap the oldest round's row."""
        self.seen += 1
        if self.max_history is None or self.size < self.max_history:
            if self.size == len(self.rewards):
                self._grow()
            self.size += 1
            return self.size - 1
        return (self.seen - 1) % self.max_history

    def append(self, context: Contexts, reward: float, weight: float, head: int) -> None:
        """Add one round; ``context`` is a 1-d array or a one-row ``BlockContexts``."""
        block = isinstance(context, BlockContexts)
        if block and self.size == 0 and self.n_blocks is None:
            self._allocate(len(self.rewards), context.n_blocks)
        if self.n_blocks is not None and not block:
            raise InputValueError(
                "this history holds block-encoded contexts; a dense context cannot be added"
            )
        if block and self.n_blocks is None:
            context, block = context.dense()[0], False
        i = self._row()
        if block:
            self.contexts[i] = context.blocks[0]
            self.slots[i] = context.slots[0]
        else:
            self.contexts[i] = context
        self.rewards[i] = reward
        self.weights[i] = weight
        self.heads[i] = head

    def view(self) -> tuple[Contexts, NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]]:
        """The rows kept, as views of the buffers (no copy): contexts, rewards, weights, heads."""
        n = self.size
        X: Contexts = self.contexts[:n]
        if self.n_blocks is not None:
            X = BlockContexts(self.contexts[:n], self.slots[:n], self.n_blocks)
        return X, self.rewards[:n], self.weights[:n], self.heads[:n]

    def state_dict(self) -> dict[str, Any]:
        """The rows kept, in buffer order, and the number of rounds added (the ring's position)."""
        n = self.size
        state: dict[str, Any] = {name: getattr(self, name)[:n].copy() for name in self._arrays()}
        state.update(dim=self.dim, seen=self.seen)
        if self.n_blocks is not None:
            state["n_blocks"] = self.n_blocks
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Replace the rows and the ring's position by those of ``state``; the cap stays.

        Raises :class:`~deepbandits.errors.CheckpointError`, and changes nothing, when ``state``
        holds more rows than ``max_history``, a window that has dropped rounds but is not full at
        this ``max_history``, rows of another context dimension or fields of different lengths.
        """
        n_blocks = None if state.get("n_blocks") is None else int(state["n_blocks"])
        names = ("contexts", *self._FIELDS, *(("slots",) if n_blocks is not None else ()))
        arrays = {
            name: as_numpy(state[name], np.int64 if name in ("heads", "slots") else np.float64)
            for name in names
        }
        n = len(arrays["contexts"])
        if n_blocks is not None and (n_blocks < 1 or self.dim % n_blocks):
            raise CheckpointError(
                f"the saved training history has {n_blocks} blocks, which do not divide this "
                f"policy's context dimension {self.dim}"
            )
        width = self.dim if n_blocks is None else self.dim // n_blocks
        seen = int(state.get("seen", n))
        expected = {name: (n, width) if name == "contexts" else (n,) for name in names}
        problems = [
            f"{name} has shape {a.shape}, expected {expected[name]}"
            for name, a in arrays.items()
            if a.shape != expected[name]
        ]
        if self.max_history is not None and n > self.max_history:
            problems.append(
                f"{n} rounds are more than this policy's max_history={self.max_history}"
            )
        if seen < n:
            problems.append(f"{seen} rounds added cannot leave {n} rows")
        elif seen > n and n != self.max_history:
            problems.append(
                f"{seen - n} of {seen} rounds were dropped from a window of {n}, but this "
                f"policy's max_history is {self.max_history}"
            )
        if problems:
            raise CheckpointError(
                f"the saved training history does not fit this policy (contexts of dimension "
                f"{self.dim}): {'; '.join(problems)}"
            )
        self._allocate(max(1024, n), n_blocks)
        for name, a in arrays.items():
            getattr(self, name)[:n] = a
        self.size, self.seen = n, seen
