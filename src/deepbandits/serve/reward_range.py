"""What a served policy needs of the reward range: whether it lacks one it needs (Eq. 13's
bound, ``variance='range'``), the specification that gives it one, and the advice a reward
without one gets."""

from __future__ import annotations

from deepbandits.policies import Policy
from deepbandits.policies.parts.variance import RangeBound


def lacks_reward_range(policy: Policy) -> bool:
    """Whether ``policy`` bounds each reward's σ² by the reward range [a, b] (``variance=
    'range'``, Eq. 13) and was built without one: every reward must then bring its own."""
    return (
        isinstance(policy.parts.get("variance"), RangeBound)
        and policy.get_params().get("reward_range") is None
    )


def with_reward_range(spec: str, bounds: str = "[a,b]") -> str:
    """The policy specification ``spec`` with ``reward_range=bounds`` added."""
    spec = spec.strip()
    return f"{spec}{',' if ':' in spec else ':'}reward_range={bounds}"


def no_reward_range(spec: str) -> str:
    """Why a reward without a range is refused by a service whose policy (of specification or
    name ``spec``) :func:`lacks_reward_range`, and the two ways to give one."""
    return (
        f"this service's policy, {spec.strip()}, bounds each reward's variance by the reward "
        "range [a, b] (variance='range') and was built without one, so a reward needs its own: "
        'send "reward_range": [a, b] with it in POST /v1/reward (ServiceClient.learn(..., '
        "reward_range=(a, b))), or serve the policy with its range in a new state folder "
        f"(deepbandits serve --policy '{with_reward_range(spec)}')"
    )
