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

from deepbandits._validation import check_int


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
        self.blocks = np.asarray(blocks, dtype=np.float64)
        if self.blocks.ndim != 2:
            raise ValueError(f"blocks must be a 2-d array [n, D], got shape {self.blocks.shape}")
        n = self.blocks.shape[0]
        self.n_blocks = check_int(n if n_blocks is None else n_blocks, "n_blocks", minimum=1)
        self.slots = (
            np.arange(n, dtype=np.int64) if slots is None else np.asarray(slots, dtype=np.int64)
        )
        if self.slots.shape != (n,):
            raise ValueError(f"slots must have one entry per row ({n}), got {self.slots.shape}")
        if n and (self.slots.min() < 0 or self.slots.max() >= self.n_blocks):
            raise ValueError(
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

    def is_one_per_block(self) -> bool:
        """Whether row k occupies block k for every k (the encoding of a single round)."""
        return len(self) == self.n_blocks and bool(
            np.array_equal(self.slots, np.arange(self.n_blocks))
        )

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


def block_encode(x: ArrayLike, n_arms: int) -> BlockContexts:
    """The ``n_arms`` contexts of Section 5.2 for one sample ``x``: row k holds ``x`` in block k.

    ``block_encode(x, K).dense()`` is the ``[K, K·D]`` matrix of the dense encoding.
    """
    n_arms = check_int(n_arms, "n_arms", minimum=1)
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"x must be a 1-d feature vector, got shape {x.shape}")
    return BlockContexts(np.broadcast_to(x, (n_arms, x.shape[0])).copy())


def same_contexts(a: Contexts, b: Contexts) -> bool:
    """Whether two context matrices are equal in value and representation."""
    if isinstance(a, BlockContexts) or isinstance(b, BlockContexts):
        return a == b
    return a.shape == b.shape and bool(np.array_equal(a, b))
