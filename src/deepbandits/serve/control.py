"""The control group of a service: which requests it decides, and the policy that decides them.

A request belongs to the control group when the seeded hash of its decision id falls below the
control share (:func:`in_control`): the ids are 128 random bits, so the group is a random
``share`` of the traffic, independent of the contexts, and anyone holding the seed recomputes
any decision's group from its id (``deepbandits export-log`` writes it too).

The control (``--control SPEC``) is

* ``uniform``: every available arm with the same probability (propensity 1/n), the
  classic holdout;
* ``arm=K``: arm ``K`` every time it is available (propensity 1), uniform play among the
  available arms when it is not;
* any library policy's specification (``linucb:alpha=1``) or a file written by
  ``policy.save`` (the previous model, say): it decides its share of requests, learns from their
  rewards, and is compared with the served policy on equal terms.

Every control is a policy of the library (uniform play is LinUCB at ε = 1, whose decisions are
uniform over the available arms whatever it learns), so it keeps its decisions pending, logs
its propensities and is checkpointed like the served policy.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import numpy as np

from deepbandits.errors import InputValueError
from deepbandits.policies import Policy, load_policy, make_policy
from deepbandits.specs import parse_spec

#: Default share of requests decided by the control.
SHARE = 0.05
#: The library policy that plays uniformly over the available arms.
UNIFORM = "linucb:epsilon=1"


def control_draw(decision_id: str, seed: int) -> float:
    """A number in [0, 1) fixed by ``seed`` and ``decision_id`` (the first 8 bytes of their
    BLAKE2b hash): uniform over random ids, the same on every machine and run."""
    digest = hashlib.blake2b(f"{seed}:{decision_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64


def in_control(decision_id: str, seed: int, share: float) -> bool:
    """Whether decision ``decision_id`` belongs to the control group (module notes)."""
    return share > 0 and control_draw(decision_id, seed) < share


def check_share(share: Any) -> float:
    """``share`` as a float in [0, 0.5]; an :class:`~deepbandits.errors.InputValueError`
    naming it otherwise."""
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 <= share <= 0.5:
        raise InputValueError(
            f"control share must be a number in [0, 0.5] (0.05: 5 % of requests), but "
            f"{share!r} is given"
        )
    return float(share)


def fixed_arm(spec: str) -> int | None:
    """The arm of an ``arm=K`` control, None for another control."""
    if not spec.startswith("arm="):
        return None
    text = spec[4:]
    if not text.isdigit():
        raise InputValueError(f"control 'arm=K' needs an arm index K >= 0, but {spec!r} is given")
    return int(text)


def make_control(spec: str, seed: int) -> Policy:
    """The library policy of control ``spec`` (module notes), seeded by ``seed`` unless the
    specification names a seed; a specification that is neither a control, a policy nor a
    file raises :class:`~deepbandits.errors.InputValueError` naming it."""
    if not isinstance(spec, str) or not spec:
        raise InputValueError(
            f"control must be 'uniform', 'arm=K', a policy specification or a saved policy's "
            f"file, but {spec!r} is given"
        )
    if spec == "uniform" or fixed_arm(spec) is not None:
        spec = UNIFORM
    if Path(spec).suffix == ".pt" or os.sep in spec:
        return load_policy(spec)
    return seeded_policy(spec, seed, "control")


def seeded_policy(spec: str, seed: int, role: str) -> Policy:
    """The library policy of ``spec``, seeded by ``seed`` unless the specification names a
    seed; a mistake raises :class:`~deepbandits.errors.InputValueError` naming the ``role``
    (control, challenger) and the specification."""
    name, params = parse_spec(spec)
    params.setdefault("seed", seed)
    try:
        return make_policy(name, **params)
    except InputValueError as exc:
        raise InputValueError(f"{role} {spec!r}: {exc}") from None


def control_mask(mask: Any, n_arms: int, arm: int | None) -> Any:
    """The mask an ``arm=K`` control decides with: only ``K`` when it is available, else the
    request's own mask (uniform play among the available arms)."""
    if arm is None or arm >= n_arms:
        return mask
    if mask is not None and not np.asarray(mask, dtype=bool)[arm]:
        return mask
    only = np.zeros(n_arms, dtype=bool)
    only[arm] = True
    return only
