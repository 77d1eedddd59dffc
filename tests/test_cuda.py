"""Every neural policy on a CUDA device against the same policy on the CPU, through the public API.

Each policy is built by ``make_policy(name, device="cuda", ...)``, decides and learns (``decide``,
``learn``) over ``T`` rounds of h1 with a small network that trains several times, is saved
after ``SAVE_AT`` rounds and loaded again (``save``, ``load_policy``); the loaded copy must then
continue bit for bit as the policy it was saved from (same device, same state). The whole
trajectory is compared with the one on the CPU: the network starts from the same seeded weights
and trains on the same batches, so the two differ only by float32 rounding (another summation
order on the GPU, ~1e-7 relative per operation). Hence

* means and widths of every arm, predicted before each decision, agree within ``TOL`` (1e-4,
  relative above 1, absolute below). Measured on the CPU: contexts perturbed by 1e-7 (about
  float32 rounding) move them by at most 6e-7 over the whole run, by 1e-5 at most 3e-5, and by
  1e-3 by 2e-4 to 5e-2, which fails; 1e-4 is far below a reward's noise;
* the arms agree exactly over the rounds where the CPU trajectory has no near-tie. A near-tie is
  found without looking inside a policy: the CPU run is repeated with every context perturbed by
  ``PERTURBATION`` (1e-5 relative, a hundred times float32 rounding); the arms are compared up to
  the first round where that perturbed run plays another arm, and that horizon must reach past
  the second training so that the comparison covers trained networks.

Without a GPU the tests skip. ``DEEPBANDITS_CUDA_TEST_DEVICE=cpu`` runs the same bodies with
``"cpu"`` in place of ``"cuda"`` (cpu against cpu), which checks their logic anywhere.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

import deepbandits as db

DEVICE = os.environ.get("DEEPBANDITS_CUDA_TEST_DEVICE", "cuda")

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(
        DEVICE.startswith("cuda") and not torch.cuda.is_available(),
        reason="needs a CUDA device: torch.cuda.is_available() is False here",
    ),
]

T = 70
SAVE_AT = 45  # after the trainings at rounds 20, 30 and 40
NET = dict(hidden=16, train_start=20, train_every=10, warmup_every=10, train_steps=8)
FEATURES = {**NET, "feature_dim": 6}
NEURAL: dict[str, dict] = {
    "neural-ucb": NET,
    "neural-ts": NET,
    "neural-lingreedy": FEATURES,
    "neural-linucb": FEATURES,
    "neural-sigma2-linucb": FEATURES,
    "save-neural-linucb": {**FEATURES, "horizon": T},
    "bootstrapped-nn": {**NET, "n_models": 3},
}
TOL = 1e-4
PERTURBATION = 1e-5
#: the arms must be comparable beyond the second training
MIN_HORIZON = NET["train_start"] + 2 * NET["train_every"]


def make(name: str, device: str) -> db.Policy:
    return db.make_policy(name, device=device, seed=3, **NEURAL[name])


def env() -> db.Environment:
    return db.make_env("h1", d=5, n_arms=4, seed=0)


def step(policy: db.Policy, environment: db.Environment, perturbation: float, rng) -> dict:
    """One round: every arm's prediction, the decision, what learning it reports."""
    rnd = environment.next_round()
    X = rnd.contexts * (1.0 + perturbation * rng.uniform(-1.0, 1.0, rnd.contexts.shape))
    mean, width = policy.predict(X)
    decision = policy.decide(X)
    info = policy.learn(
        decision, environment.reward(decision.arm), sigma2=rnd.sigma2, reward_range=rnd.reward_range
    )
    return {"mean": mean, "width": width, "arm": decision.arm, "trained": info["train_seconds"] > 0}


def play(name: str, device: str, perturbation: float = 0.0) -> dict[str, np.ndarray]:
    """``T`` rounds of one policy on one device, rows stacked."""
    policy, environment, rng = make(name, device), env(), np.random.default_rng(11)
    rows = [step(policy, environment, perturbation, rng) for _ in range(T)]
    return {key: np.array([row[key] for row in rows]) for key in rows[0]}


def play_with_reload(name: str, device: str, path) -> dict[str, np.ndarray]:
    """``T`` rounds on ``device``, saved and loaded after ``SAVE_AT``: the policy and its loaded
    copy then decide and learn side by side and must stay identical."""
    policy, environment, rng = make(name, device), env(), np.random.default_rng(11)
    rows = [step(policy, environment, 0.0, rng) for _ in range(SAVE_AT)]
    assert any(row["trained"] for row in rows), f"{name} never trained before it was saved"
    policy.save(path)
    loaded = db.load_policy(path)
    assert type(loaded) is type(policy) and loaded.get_params() == policy.get_params()
    for _ in range(T - SAVE_AT):
        rnd = environment.next_round()
        (mean, width), (mean2, width2) = policy.predict(rnd.contexts), loaded.predict(rnd.contexts)
        assert np.array_equal(mean, mean2) and np.array_equal(width, width2), name
        decision, decision2 = policy.decide(rnd.contexts), loaded.decide(rnd.contexts)
        assert (decision.arm, decision.propensity) == (decision2.arm, decision2.propensity), name
        reward = environment.reward(decision.arm)
        kw = dict(sigma2=rnd.sigma2, reward_range=rnd.reward_range)
        info, info2 = policy.learn(decision, reward, **kw), loaded.learn(decision2, reward, **kw)
        assert info.keys() == info2.keys(), name
        kept = [k for k in info if "seconds" not in k]  # timings differ, the rest may not
        assert np.array_equal([info[k] for k in kept], [info2[k] for k in kept], equal_nan=True)
        rows.append({"mean": mean, "width": width, "arm": decision.arm, "trained": False})
    return {key: np.array([row[key] for row in rows]) for key in rows[0]}


def assert_close_to_cpu(name: str, got: dict, cpu: dict, perturbed: dict) -> int:
    """``got`` (another device) against the CPU run; returns the horizon of the arm comparison."""
    differ = np.flatnonzero(perturbed["arm"] != cpu["arm"])
    horizon = int(differ[0]) if differ.size else T
    assert horizon >= MIN_HORIZON, (
        f"{name}: the CPU trajectory has a near-tie at round {horizon} (a {PERTURBATION:g} "
        "perturbation of the contexts changes its arm there): choose another seed"
    )
    np.testing.assert_array_equal(got["arm"][:horizon], cpu["arm"][:horizon], err_msg=name)
    for key in ("mean", "width"):
        np.testing.assert_allclose(
            got[key][:horizon], cpu[key][:horizon], rtol=TOL, atol=TOL, err_msg=f"{name}/{key}"
        )
    return horizon


@pytest.mark.parametrize("name", NEURAL)
def test_a_policy_on_the_device_follows_the_cpu_and_reloads_identically(name, tmp_path):
    cpu, perturbed = play(name, "cpu"), play(name, "cpu", PERTURBATION)
    got = play_with_reload(name, DEVICE, tmp_path / f"{name}.pt")
    assert cpu["trained"].sum() >= 3, name
    assert_close_to_cpu(name, got, cpu, perturbed)
