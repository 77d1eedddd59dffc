import numpy as np
import pytest
import torch


@pytest.fixture(autouse=True)
def _single_thread():
    torch.set_num_threads(1)


def play(policy, env, T):
    """Arms chosen by ``policy`` over ``T`` rounds of ``env`` (the runner without timing)."""
    arms = []
    for _ in range(T):
        rnd = env.next_round()
        arm = policy.select(rnd.contexts)
        policy.update(
            rnd.contexts, arm, env.reward(arm), sigma2=rnd.sigma2, reward_range=rnd.reward_range
        )
        arms.append(arm)
    return np.array(arms)


# small neural settings that train several times within a few hundred rounds
SMALL_NET = dict(
    hidden=16, feature_dim=8, train_start=60, train_every=20, warmup_every=20, train_steps=15
)

# the same for policies whose network outputs the reward itself (no feature_dim)
SMALL_REWARD_NET = {k: v for k, v in SMALL_NET.items() if k != "feature_dim"}

# one small configuration of every policy family (and of its main variants)
POLICY_CASES = [
    ("linucb", {}),
    ("linucb", {"per_arm": True}),
    ("sigma2-linucb", {"variance": "oracle"}),
    ("neural-linucb", SMALL_NET),
    ("neural-sigma2-linucb", {**SMALL_NET, "loss": "mle", "alpha": "theory"}),
    ("neural-sigma2-linucb", {**SMALL_NET, "refit_on_update": True, "optimizer": "adam"}),
    ("mle-var", SMALL_NET),
    ("heuristic-10", {**SMALL_NET, "horizon": 400}),
    ("neural-ucb", SMALL_REWARD_NET),
    ("neural-ucb", {**SMALL_REWARD_NET, "mode": "full"}),
    ("neural-ts", SMALL_REWARD_NET),
    ("save-neural-linucb", {**SMALL_NET, "horizon": 400}),
    ("kernel-ucb", {"max_history": 60}),
    ("bootstrapped-nn", {**SMALL_REWARD_NET, "n_models": 3}),
]
