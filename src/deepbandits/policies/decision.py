"""Decisions as values, their sizes and their state in a checkpoint.

A :class:`Decision` is what :meth:`~deepbandits.policies.Policy.decide` returns: an
immutable record of one choice (its id, the arm, the probability the policy had of choosing it,
every arm's mean and width, the model version) together with what learning from its reward needs
(the context of the arm played and the features the policy saw). The policy keeps the decisions
it made in a :class:`~deepbandits.policies.pending.PendingDecisions` table until their reward
arrives; a decision's size (:func:`decision_nbytes`) is what that table counts against its
bound in bytes, and :func:`decisions_state` is how a checkpoint stores it.

The propensity a decision carries is exact. For a deterministic index policy, ties among the
available arms (``mask``) with the top score are broken uniformly, and an exploration floor ε
plays a uniformly drawn available arm with probability ε, so that arm ``a`` has probability
``(1 − ε)·[a ∈ ties]/#ties + ε/#available``; :mod:`~deepbandits.policies.choice` computes it
(:func:`~deepbandits.policies.choice.greedy_propensities`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from deepbandits._convert import as_numpy
from deepbandits.encoding import BlockContexts

Array = NDArray[np.float64]


class FrozenDict(dict[str, Any]):
    """A dict that cannot change (a decision's ``extra``); it pickles and copies like a dict."""

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("a decision's extra values cannot change")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _refuse  # type: ignore[assignment]
    __ior__ = _refuse  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))


#: The ``extra`` of a decision or observation that has none (shared: it cannot change).
NO_EXTRA = FrozenDict()


class Decision(NamedTuple):
    """One choice of a policy: an immutable value (a named tuple; its arrays are read-only).

    Attributes
    ----------
    id : str
        Unique identifier, 32 hexadecimal digits of 128 random bits from the operating system
        (:func:`os.urandom`, not the policy's generator): the key a reward is learned by. One id
        tells nothing of any other (ids made of a prefix and a count gave every other decision's
        id away); two ids are equal with a probability of about n²/2¹²⁹ among n decisions.
    arm : int
        Index of the arm chosen among the rows of the contexts.
    propensity : float
        Probability that the policy chose this arm given the contexts and the mask (exact for
        index policies, a Monte Carlo estimate for NeuralTS; see each policy).
    mean, width : ndarray ``[K]``
        Every arm's estimated mean reward and exploration width at the time of the decision.
    model_version : int
        Rewards the policy had learned when it decided (its ``t_``).
    round : int
        Decisions the policy had made before this one.
    time : float
        Wall-clock time of the decision (seconds since the epoch).
    mask : ndarray of bool ``[K]`` or None
        The arms that were available (None: all).
    context : ndarray ``[d]`` or one-row BlockContexts
        Context of the arm played, as given.
    features : ndarray or None
        What the policy's head saw for the arm played: φ(x) of the ridge policies (the
        identity's x for LinUCB, the last layer of the network for the neural-linear family);
        None for policies that learn from the context itself.
    head : int
        The ridge head the observation goes to (per-arm and per-block layouts), else 0.
    extra : dict
        Policy-specific values the update needs (SAVE's layer and width).
    """

    id: str
    arm: int
    propensity: float
    mean: Array
    width: Array
    model_version: int
    round: int
    time: float
    mask: NDArray[np.bool_] | None
    context: Any
    features: Array | None = None
    head: int = 0
    extra: Mapping[str, Any] = NO_EXTRA

    def __repr__(self) -> str:
        return (
            f"Decision(id={self.id!r}, arm={self.arm}, propensity={self.propensity:.4g}, "
            f"model_version={self.model_version}, round={self.round})"
        )


def freeze(*arrays: Any) -> None:
    """Make a decision's arrays read-only (they are its own: computed or copied for it),
    block-encoded contexts included."""
    for array in arrays:
        if isinstance(array, np.ndarray):
            array.setflags(write=False)
        elif isinstance(array, BlockContexts):
            array.blocks.setflags(write=False)
            array.slots.setflags(write=False)


def array_bytes(value: Any) -> int:
    """Bytes of an array or of a BlockContexts' arrays; 0 for anything else (None, numbers)."""
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, BlockContexts):
        return value.blocks.nbytes + value.slots.nbytes
    return 0


def decision_nbytes(decision: Decision) -> int:
    """Bytes of a decision's arrays (what a pending table holds for it): means, widths, mask,
    context, features (once when they are the context) and any array among its extra values."""
    size = (
        decision.mean.nbytes
        + decision.width.nbytes
        + array_bytes(decision.mask)
        + array_bytes(decision.context)
    )
    if decision.features is not decision.context:
        size += array_bytes(decision.features)
    if decision.extra:
        size += sum(array_bytes(value) for value in decision.extra.values())
    return size


def decision_from_state(state: dict[str, Any]) -> Decision:
    """A decision from its fields as plain values and arrays (arrays may come back as tensors
    from a file): one decision of a log, or of a checkpoint written before the pending table was
    stored as columns (:func:`decisions_state`)."""

    def arr(value: Any, dtype: Any = np.float64) -> Any:
        return None if value is None else np.array(as_numpy(value, dtype))

    context = arr(state["context"])
    features = arr(state["features"])
    if state["block"] is not None:
        slot, n_blocks = state["block"]
        context = BlockContexts(context, [slot], n_blocks)
    elif features is not None and features.shape == context.shape:
        if np.array_equal(features, context):  # the identity's: one array, as when decided
            features = context
    decision = Decision(
        id=str(state["id"]),
        arm=int(state["arm"]),
        propensity=float(state["propensity"]),
        mean=arr(state["mean"]),
        width=arr(state["width"]),
        model_version=int(state["model_version"]),
        round=int(state["round"]),
        time=float(state["time"]),
        mask=arr(state["mask"], np.bool_),
        context=context,
        features=features,
        head=int(state["head"]),
        extra=FrozenDict(state["extra"]),
    )
    freeze(decision.mean, decision.width, decision.mask, decision.context, decision.features)
    return decision


# ---------------------------------------------------------------- the pending table as columns
# torch.save writes a record per tensor: 100,000 pending decisions of five arrays each (10 arms x
# 20 features) took 17 s to save and 35 s to load, and a service's SIGTERM waited for it. As
# columns (every decision's value of a field concatenated, with each one's shape) the same table
# is a dozen arrays. A ragged column holds ``values`` (the arrays raveled and concatenated),
# ``present`` (False where a decision has None), ``ndim`` and ``shape`` (padded to MAX_DIM).

#: Most dimensions an array of a decision has (a block context's ``[1, D]``).
MAX_DIM = 3


def pack(arrays: Sequence[Any], dtype: Any) -> dict[str, NDArray[Any]]:
    """A ragged column of arrays (None allowed) as four arrays (notes above)."""
    n = len(arrays)
    present = np.zeros(n, dtype=bool)
    ndim = np.zeros(n, dtype=np.int64)
    shape = np.zeros((n, MAX_DIM), dtype=np.int64)
    flat = []
    for i, value in enumerate(arrays):
        if value is None:
            continue
        array = np.asarray(value, dtype=dtype)
        present[i], ndim[i] = True, array.ndim
        shape[i, : array.ndim] = array.shape
        flat.append(array.ravel())
    values = np.concatenate(flat) if flat else np.zeros(0, dtype=dtype)
    return {"values": values, "present": present, "ndim": ndim, "shape": shape}


def unpack(column: dict[str, Any], dtype: Any) -> list[NDArray[Any] | None]:
    """Inverse of :func:`pack` (arrays may come back as tensors from a file): a read-only copy
    of each array, None where none was."""
    values = as_numpy(column["values"], dtype)
    present = as_numpy(column["present"], np.bool_)
    ndim = as_numpy(column["ndim"], np.int64)
    shape = as_numpy(column["shape"], np.int64)
    sizes = np.where(present, np.prod(np.where(np.arange(MAX_DIM) < ndim[:, None], shape, 1), 1), 0)
    ends = np.cumsum(sizes)
    out: list[NDArray[Any] | None] = []
    for i in range(len(present)):
        if not present[i]:
            out.append(None)
            continue
        array = values[ends[i] - sizes[i] : ends[i]].reshape(shape[i, : ndim[i]]).copy()
        array.flags.writeable = False
        out.append(array)
    return out


def decisions_state(decisions: Sequence[Decision]) -> dict[str, Any]:
    """``decisions`` as columns (notes above): what a checkpoint stores of the pending table.
    :func:`decisions_from_state` gives every field of every decision back as it was."""
    blocks = [isinstance(d.context, BlockContexts) for d in decisions]
    contexts = [
        d.context.blocks if b else d.context for d, b in zip(decisions, blocks, strict=True)
    ]
    block = np.full((len(decisions), 2), -1, dtype=np.int64)
    for i, (d, b) in enumerate(zip(decisions, blocks, strict=True)):
        if b:
            block[i] = int(d.context.slots[0]), int(d.context.n_blocks)
    return {
        "id": [d.id for d in decisions],
        "arm": np.array([d.arm for d in decisions], dtype=np.int64),
        "propensity": np.array([d.propensity for d in decisions], dtype=np.float64),
        "model_version": np.array([d.model_version for d in decisions], dtype=np.int64),
        "round": np.array([d.round for d in decisions], dtype=np.int64),
        "time": np.array([d.time for d in decisions], dtype=np.float64),
        "head": np.array([d.head for d in decisions], dtype=np.int64),
        "block": block,
        "mean": pack([d.mean for d in decisions], np.float64),
        "width": pack([d.width for d in decisions], np.float64),
        "mask": pack([d.mask for d in decisions], np.bool_),
        "context": pack(contexts, np.float64),
        "features": pack([d.features for d in decisions], np.float64),
        "extra": [
            {k: v.item() if isinstance(v, np.generic) else v for k, v in d.extra.items()}
            for d in decisions
        ],
    }


def decisions_from_state(state: dict[str, Any]) -> list[Decision]:
    """Inverse of :func:`decisions_state`."""
    columns = {
        name: unpack(state[name], np.bool_ if name == "mask" else np.float64)
        for name in ("mean", "width", "mask", "context", "features")
    }
    scalars = {
        name: as_numpy(state[name], dtype).tolist()
        for name, dtype in (
            ("arm", np.int64),
            ("propensity", np.float64),
            ("model_version", np.int64),
            ("round", np.int64),
            ("time", np.float64),
            ("head", np.int64),
        )
    }
    block = as_numpy(state["block"], np.int64)
    decisions = []
    for i, decision_id in enumerate(state["id"]):
        context, features = columns["context"][i], columns["features"][i]
        if block[i, 0] >= 0:
            context = BlockContexts(context, [int(block[i, 0])], int(block[i, 1]))
            freeze(context)
        elif features is not None and features.shape == context.shape:  # type: ignore[union-attr]
            if np.array_equal(features, context):  # the identity's: one array, as when decided
                features = context
        decisions.append(
            Decision(
                id=str(decision_id),
                arm=scalars["arm"][i],
                propensity=scalars["propensity"][i],
                mean=columns["mean"][i],
                width=columns["width"][i],
                model_version=scalars["model_version"][i],
                round=scalars["round"][i],
                time=scalars["time"][i],
                mask=columns["mask"][i],
                context=context,
                features=features,
                head=scalars["head"][i],
                extra=FrozenDict(state["extra"][i]),
            )
        )
    return decisions
