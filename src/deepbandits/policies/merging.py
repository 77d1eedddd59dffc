"""Merging replicas: adding what another copy of a policy learned (ridge statistics are sums)."""

from __future__ import annotations

from typing import Any

from deepbandits.errors import InputTypeError, InputValueError
from deepbandits.policies.core import PolicyCore
from deepbandits.policies.transaction import atomic_whole


def _comparable(policy: PolicyCore) -> dict[str, Any]:
    """The parameters two replicas must share (all but the seed, the device and the threads)."""
    params = policy.get_params(deep=True)
    return {
        k: v
        for k, v in params.items()
        if k.rsplit("__", 1)[-1] not in ("seed", "device", "threads") and k not in policy.parts
    }


class Merging(PolicyCore):
    """Merging replicas of a policy."""

    def merge(self, other: PolicyCore, base: PolicyCore | None = None) -> PolicyCore:
        """Add what another replica learned to this policy, and return this policy.

        Ridge statistics are sums: a replica's observations are ``A − λI`` and ``b`` (those
        since ``base``, the state both replicas started from, when given), so two replicas that
        each learned part of a stream and are merged equal one policy that learned it all. The
        replicas must be the same class with the same parameters and see the same features
        (the same network weights for the neural-linear family; its head is merged, its
        training history extended). Policies whose statistics are not sums refuse.
        """
        for name, replica in (("other", other), ("base", base)):
            if replica is not None and type(replica) is not type(self):
                raise InputTypeError(
                    f"merge needs {name} to be a {type(self).__name__}, but a "
                    f"{type(replica).__name__} is given"
                )
        mine = _comparable(self)
        for name, replica in (("other", other), ("base", base)):
            if replica is None:
                continue
            theirs = _comparable(replica)
            if mine != theirs:
                differ = sorted(k for k in mine if mine[k] != theirs.get(k))
                raise InputValueError(
                    f"merge needs replicas with the same parameters; {name}'s "
                    f"{', '.join(differ)} differ"
                )
        if other.n_features_in_ is None:
            return self
        since = base if base is not None and base.n_features_in_ is not None else None
        for name, dim in (
            ("this policy", self.n_features_in_),
            ("base", getattr(since, "n_features_in_", None)),
        ):
            if dim is not None and dim != other.n_features_in_:
                raise InputValueError(
                    f"merge needs replicas of the same context dimension, but other has "
                    f"{other.n_features_in_} and {name} {dim}"
                )
        if since is not None and not since.t_ <= min(other.t_, self.t_):
            raise InputValueError(
                f"base has learned {since.t_} rewards, more than other ({other.t_}) or this "
                f"self ({self.t_}): it must be the state both replicas started from"
            )
        with atomic_whole(self):
            if self.n_features_in_ is None:
                self._check(other._initial_contexts())
            self._merge(other, since)
        self.t_ += other.t_ - (since.t_ if since is not None else 0)
        return self
