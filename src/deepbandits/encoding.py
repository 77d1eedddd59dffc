"""Block (disjoint) encoding of a shared context into one context per arm (Section 5.2).

On the classification benchmarks a sample x ∈ ℝᴰ becomes K arm contexts x₁, …, x_K ∈ ℝᴷᴰ, where
x_k holds x in block k and zeros elsewhere. Every row then has K−1 zero blocks, so a network's
first layer W₁x_k only needs the D columns of block k: :func:`diagonal_blocks` recognises this
structure in an arbitrary context matrix so that the network can skip the zeros.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deepbandits._validation import check_int

MIN_BLOCK_FEATURES = 1024
"""Contexts with fewer features are multiplied densely: below it, detecting blocks costs more
than the zeros it saves."""


def block_encode(x: ArrayLike, n_arms: int) -> NDArray[np.float64]:
    """The ``[n_arms, n_arms·D]`` contexts of Section 5.2: row k holds ``x`` in block k."""
    n_arms = check_int(n_arms, "n_arms", minimum=1)
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"x must be a 1-d feature vector, got shape {x.shape}")
    D = x.shape[0]
    X = np.zeros((n_arms, n_arms * D))
    X.reshape(n_arms, n_arms, D)[np.arange(n_arms), np.arange(n_arms)] = x
    return X


def diagonal_blocks(X: NDArray[np.float64]) -> NDArray[np.float64] | None:
    """Block k of row k, ``[K, D]``, when ``X`` ``[K, K·D]`` is zero outside those blocks.

    Returns ``None`` when ``X`` is not block-diagonal (any non-zero outside row k's own block),
    when its width is not a multiple of its number of rows, or when it is narrower than
    :data:`MIN_BLOCK_FEATURES` (the dense product is then as cheap as the check).
    """
    K, d = X.shape
    if K < 2 or d % K or d < MIN_BLOCK_FEATURES:
        return None
    arms = np.arange(K)
    blocks = X.reshape(K, K, d // K)[arms, arms]
    if np.count_nonzero(X) != np.count_nonzero(blocks):
        return None
    return blocks
