"""Neural feature maps and the loops that train them."""

from deepbandits.networks.history import History
from deepbandits.networks.mlp import MLP
from deepbandits.networks.training import train_feature_map

__all__ = ["MLP", "History", "train_feature_map"]
