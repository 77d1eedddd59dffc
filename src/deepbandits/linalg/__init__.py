"""Linear-algebra core: the weighted ridge state shared by every UCB policy."""

from deepbandits.linalg.rank_one import sherman_morrison_update
from deepbandits.linalg.ridge import RidgeState

__all__ = ["RidgeState", "sherman_morrison_update"]
