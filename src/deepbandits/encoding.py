"""Block (disjoint) encoding of a shared context into one context per arm (Section 5.2).

On the classification benchmarks (Beygelzimer & Langford 2009) a sample x ∈ ℝᴰ becomes K arm
contexts x₁, …, x_K ∈ ℝᴷᴰ, where x_k holds x in block k and zeros elsewhere. Every row has K−1
zero blocks: K = 10 arms of MNIST are 78,400 floats per round of which 7,840 are not zero.
:class:`BlockContexts` stores only the non-zero block of each row and the index of that block, so
that the policies that know the structure (the network's first layer, the linear policies) touch
only that block. Everywhere else it behaves as the dense matrix it stands for
(``np.asarray(X)`` builds it).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deepbandits._validation import MAX_ABS_INPUT, as_real_array, check_int
from deepbandits.errors import InputValueError


class BlockContexts:
    """Arm contexts of shape ``(n, n_blocks·D)`` stored as their one non-zero block each.

    Row i of the dense matrix holds ``blocks[i]`` in block ``slots[i]`` (columns
    ``slots[i]·D … slots[i]·D + D − 1``) and zeros elsewhere.

    Parameters
    ----------
    blocks : array ``[n, D]``
        The non-zero block of each row.
    slots : array of int ``[n]``, optional
        Which block each row occupies; default ``0, 1, …, n−1`` (one arm per block, the
        encoding of one round).
    n_blocks : int, optional
        Number of blocks; default ``n``.

    Indexing with an integer, a slice or an index array selects rows and keeps the block
    structure (``X[k]`` is a one-row :class:`BlockContexts`, unlike a numpy row).
    """

    ndim = 2

    def __init__(
        self, blocks: ArrayLike, slots: ArrayLike | None = None, n_blocks: int | None = None
    ) -> None:
        self.blocks = as_real_array(blocks, "blocks")
        if self.blocks.ndim != 2:
            raise InputValueError(
                f"blocks must be a 2-d array [n, D], but shape {self.blocks.shape} is given"
            )
        n = self.blocks.shape[0]
        self.n_blocks = check_int(n if n_blocks is None else n_blocks, "n_blocks", minimum=1)
        self.slots = (
            np.arange(n, dtype=np.int64) if slots is None else np.asarray(slots, dtype=np.int64)
        )
        if self.slots.shape != (n,):
            raise InputValueError(
                f"slots must have one entry per row ({n}), but shape {self.slots.shape} is given"
            )
        if n and (self.slots.min() < 0 or self.slots.max() >= self.n_blocks):
            raise InputValueError(
                f"slots must lie in 0..{self.n_blocks - 1}, got {self.slots.min()}.."
                f"{self.slots.max()}"
            )

    @property
    def block_dim(self) -> int:
        """Width D of one block."""
        return int(self.blocks.shape[1])

    @property
    def shape(self) -> tuple[int, int]:
        """Shape of the dense matrix: ``(n, n_blocks·D)``."""
        return self.blocks.shape[0], self.n_blocks * self.block_dim

    def __len__(self) -> int:
        return self.blocks.shape[0]

    def __repr__(self) -> str:
        return f"BlockContexts(shape={self.shape}, n_blocks={self.n_blocks})"

    def __getitem__(self, index: Any) -> BlockContexts:
        rows = np.arange(len(self))[index]
        rows = np.atleast_1d(rows)
        return BlockContexts(self.blocks[rows], self.slots[rows], self.n_blocks)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, BlockContexts)
            and self.n_blocks == other.n_blocks
            and np.array_equal(self.slots, other.slots)
            and np.array_equal(self.blocks, other.blocks)
        )

    __hash__ = None  # type: ignore[assignment]  # mutable arrays inside

    def copy(self) -> BlockContexts:
        return BlockContexts(self.blocks.copy(), self.slots.copy(), self.n_blocks)

    def dense(self) -> NDArray[np.float64]:
        """The ``(n, n_blocks·D)`` matrix this stands for."""
        n, D = self.blocks.shape
        out = np.zeros((n, self.n_blocks, D))
        out[np.arange(n), self.slots] = self.blocks
        return out.reshape(n, self.n_blocks * D)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> NDArray[Any]:
        dense = self.dense()
        return dense if dtype is None else dense.astype(dtype, copy=False)


Contexts = NDArray[np.float64] | BlockContexts
"""What a policy receives each round: a dense ``[K, d]`` array or its block encoding."""


def check_contexts(contexts: Any, n_features: int | None = None) -> Contexts:
    """Validate a round's arm contexts: real, finite values of shape ``(n_arms, n_features)``,
    none larger than :data:`~deepbandits._validation.MAX_ABS_INPUT` in magnitude.

    A :class:`BlockContexts` is checked through its blocks and returned as it is; anything else
    becomes a float64 numpy array. This is the one check of contexts on every path into a
    policy.
    """
    block = isinstance(contexts, BlockContexts)
    arr = contexts.blocks if block else as_real_array(contexts, "contexts")
    if arr.ndim != 2:
        raise InputValueError(
            f"contexts must be a 2-d array of shape (n_arms, n_features), but shape "
            f"{arr.shape} is given"
        )
    shape = contexts.shape if block else arr.shape
    if shape[0] == 0:
        raise InputValueError("contexts has 0 arms: at least one arm is needed to select")
    if n_features is not None and shape[1] != n_features:
        raise InputValueError(
            f"contexts must have {n_features} features per arm (the dimension this policy was "
            f"fitted with), but {shape[1]} are given"
        )
    if not np.abs(arr).max() <= MAX_ABS_INPUT:  # also False for NaN
        finite = np.isfinite(arr)
        bad = np.argwhere(~finite | (np.abs(np.where(finite, arr, 0.0)) > MAX_ABS_INPUT))[0]
        what = "NaN or inf" if not finite.all() else f"values above {MAX_ABS_INPUT:g} in size"
        raise InputValueError(
            f"contexts must be finite and at most {MAX_ABS_INPUT:g} in absolute value, but "
            f"they contain {what} (first at arm {bad[0]}, {'block ' if block else ''}feature "
            f"{bad[1]}: {arr[bad[0], bad[1]]}); rescale them"
        )
    return contexts if block else arr


def block_encode(x: ArrayLike, n_arms: int) -> BlockContexts:
    """The ``n_arms`` contexts of Section 5.2 for one sample ``x``: row k holds ``x`` in block k.

    ``block_encode(x, K).dense()`` is the ``[K, K·D]`` matrix of the dense encoding.
    """
    n_arms = check_int(n_arms, "n_arms", minimum=1)
    x = as_real_array(x, "x")
    if x.ndim != 1:
        raise InputValueError(f"x must be a 1-d feature vector, but shape {x.shape} is given")
    return BlockContexts(np.broadcast_to(x, (n_arms, x.shape[0])).copy())


def same_contexts(a: Contexts, b: Contexts) -> bool:
    """Whether two context matrices are equal in value and representation."""
    if isinstance(a, BlockContexts) or isinstance(b, BlockContexts):
        return a == b
    return a.shape == b.shape and bool(np.array_equal(a, b))
