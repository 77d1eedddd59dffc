"""Conversions between saved tensors and numpy arrays."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray


def as_numpy(value: Any, dtype: Any = np.float64) -> NDArray[Any]:
    """A saved tensor (or array, or list) back as a numpy array."""
    if isinstance(value, torch.Tensor):
        value = value.cpu().numpy()
    return np.asarray(value, dtype=dtype)
