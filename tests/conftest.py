import numpy as np
import pytest
import torch


@pytest.fixture(autouse=True)
def _single_thread():
    torch.set_num_threads(1)


@pytest.fixture(scope="module")
def ray_serve():
    """A Ray instance with Serve's proxy on a loopback port, for a test module's services
    (``serve_support.RayServe``)."""
    from serve_support import RayServe

    harness = RayServe()
    try:
        yield harness
    finally:
        harness.close()


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
    ("linucb", {"intercept": True}),
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


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "cuda: runs policies on a CUDA device (skipped where torch.cuda.is_available() is False)",
    )


#: Floats recorded in ``tests/data`` on another machine are compared at this relative tolerance.
#: The recording and the comparison may run different OpenBLAS kernels (OpenBLAS picks one per
#: CPU: Haswell, SkylakeX, ...; ``OPENBLAS_CORETYPE`` forces one), which sum in other orders: the
#: recorded trajectories and checkpoints then differ by up to 6e-11 relative (KernelUCB with the
#: linear kernel, whose Gram matrix is ill-conditioned), the other policies by up to 1.1e-11 (σ̂²
#: of σ²-LinUCB on the dynamic-range bandit), measured with the Haswell, SkylakeX, Sandybridge,
#: Nehalem and Katmai kernels. 1e-9 leaves a margin of 15x over the worst case and still catches
#: any change of an algorithm (a change of 1e-8 in one value fails).
RECORDED_RTOL = 1e-9
#: Where a recorded value is ~0 (|value| < RECORDED_ATOL / RECORDED_RTOL = 1e-2) the tolerance is
#: absolute: such values are sums of O(1) terms that cancel (a predicted mean near 0, a σ² estimate
#: near the edge of the reward range), so their rounding error is that of the O(1) terms, not a
#: fraction of the value. The largest absolute difference measured is 4e-12 (on values of order 1,
#: 6e-16 on values below 1e-3); 1e-11 bounds it and is far below any difference a policy can make.
RECORDED_ATOL = 1e-11


#: Floats that went through a torch network (float32) are compared at this fraction of the
#: largest magnitude in their array. torch picks its float32 kernels per CPU (MKL and oneDNN
#: dispatch on AVX2 / AVX-512 / AVX-512-FP16 ...), which sum in other orders: one float32 ulp
#: (1.2e-7 relative) per forward pass, amplified by every training step that follows. Measured
#: on an AVX-512-FP16 Xeon against the recordings: up to 1.1e-4 of the array's scale after 160
#: rounds with eight trainings (the ``oracle-mse`` trajectory's means), 4e-6 after 30 rounds
#: (checkpoints); the arms, the rewards and the regret still agreed exactly. 1e-3 leaves a
#: margin of 9x; the arms, compared exactly, are what catches a changed algorithm there.
NETWORK_SCALE_TOL = 1e-3


def assert_matches_recording(got, recorded, what: str, network: bool = False) -> None:
    """``got`` against an array recorded on another machine: integers, booleans and strings (arms,
    counts) exactly; floats at :data:`RECORDED_RTOL` / :data:`RECORDED_ATOL`, or, for a policy
    with a network (``network=True``), within :data:`NETWORK_SCALE_TOL` of the array's largest
    magnitude; NaN where NaN."""
    got, recorded = np.asarray(got), np.asarray(recorded)
    assert got.shape == recorded.shape, f"{what}: shape {got.shape} != recorded {recorded.shape}"
    if recorded.dtype.kind in "fc":
        assert got.dtype.kind in "fc", f"{what}: {got.dtype}, recorded {recorded.dtype}"
        rtol, atol = RECORDED_RTOL, RECORDED_ATOL
        finite = recorded[np.isfinite(recorded)]
        if network and finite.size:
            rtol, atol = 0.0, NETWORK_SCALE_TOL * float(np.abs(finite).max())
        np.testing.assert_allclose(
            got, recorded, rtol=rtol, atol=atol, equal_nan=True, err_msg=what
        )
    else:
        assert got.dtype.kind == recorded.dtype.kind, f"{what}: {got.dtype} vs {recorded.dtype}"
        np.testing.assert_array_equal(got, recorded, err_msg=what)
