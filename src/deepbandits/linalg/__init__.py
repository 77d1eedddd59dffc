"""Linear-algebra core: the weighted ridge state shared by every UCB policy."""

from deepbandits.linalg.ridge import RidgeState, sherman_morrison_update

__all__ = ["RidgeState", "sherman_morrison_update"]
