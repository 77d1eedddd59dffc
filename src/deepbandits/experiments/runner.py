"""Play a policy against an environment and record every round (Section 3's protocol).

The per-round record (:data:`COLUMNS`) is returned as a DataFrame and saved as CSV or Parquet
(:data:`~deepbandits.experiments.storage.FORMATS`) next to a JSON file holding the exact
configuration (policy and environment parameters, T, seed, versions); how a run is stored, and
when a stored run counts as finished, is :mod:`deepbandits.experiments.storage`.
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from deepbandits._threads import pinned_threads
from deepbandits._validation import check_int, check_seed
from deepbandits._version import __version__
from deepbandits.envs.base import Environment, Holdout
from deepbandits.errors import InputTypeError, InputValueError

# ``NAME as NAME``: the names of a stored run stay importable from here, where they were defined
from deepbandits.experiments.storage import FORMATS as FORMATS
from deepbandits.experiments.storage import RunResult
from deepbandits.experiments.storage import UnfinishedRunError as UnfinishedRunError
from deepbandits.experiments.storage import load_finished as load_finished
from deepbandits.experiments.storage import run_files as run_files
from deepbandits.experiments.storage import saved_format as saved_format
from deepbandits.experiments.storage import table_path as table_path
from deepbandits.metrics.diagnostics import mean_gap
from deepbandits.policies.policy import Policy

__all__ = [
    "COLUMNS",
    "FORMATS",
    "HOLDOUT_COLUMNS",
    "RunResult",
    "UnfinishedRunError",
    "check_checkpoints",
    "give_horizon",
    "holdout_forecasts",
    "load_finished",
    "run",
    "run_files",
    "saved_format",
    "table_path",
]

#: Columns of a run's record, one row per round.
COLUMNS: dict[str, str] = {
    "t": "round, 1-based",
    "arm": "index of the arm played",
    "best_arm": "index of an arm with the largest expected reward max_a h(x_t,a) (the lowest)",
    "reward": "observed reward r_t",
    "expected_reward": "h(x_t,a_t), the expected reward of the arm played",
    "regret": "pseudo-regret max_a h(x_t,a) - h(x_t,a_t) of the round",
    "cum_regret": "cumulative pseudo-regret up to and including round t",
    "sigma2_oracle": "the environment's true noise variance Var(r_t)",
    "sigma2_used": "sigma-bar^2_t, the variance that weighted the ridge update (1 when unweighted)",
    "sigma2_hat": "Eq. 13 estimate (b - mu)(mu - a) before flooring; NaN when not estimated",
    "mean": "predicted mean theta^T phi(x_t,a_t) of the arm played, before the update",
    "width": "exploration width ||phi(x_t,a_t)||_{A^-1} of the arm played, before the update",
    "mean_gap": "largest predicted mean over the available arms minus that of the arm played, "
    "before the update: 0 for a greedy choice, > 0 when the width (or a draw) chose another arm",
    "time_select": "seconds spent in decide()",
    "time_update": "seconds spent in learn(), network training excluded",
    "time_train": "seconds spent training the network in this round's learn()",
}


#: Columns of a run's hold-out forecasts (``<stem>.holdout.csv``, or ``.parquet``), one row per
#: checkpoint, hold-out round and arm.
HOLDOUT_COLUMNS: dict[str, str] = {
    "checkpoint": "rounds played when the forecasts were made (0: before the first round)",
    "index": "hold-out round i",
    "arm": "arm a",
    "mean": "the policy's predicted mean for (x_i, a)",
    "width": "its exploration width (forecast standard deviation) for (x_i, a)",
    "reward": "realised hold-out reward r_{i,a}",
    "expected_reward": "h(x_{i,a})",
}


def holdout_forecasts(policy: Policy, holdout: Holdout, t: int) -> pd.DataFrame:
    """The policy's mean and width for every arm of every hold-out round (no state changes)."""
    n, K = holdout.expected_rewards.shape
    pred = [policy.predict(X) for X in holdout.contexts]
    return pd.DataFrame(
        {
            "checkpoint": np.full(n * K, t, dtype=np.int64),
            "index": np.repeat(np.arange(n), K),
            "arm": np.tile(np.arange(K), n),
            "mean": np.concatenate([m for m, _ in pred]),
            "width": np.concatenate([w for _, w in pred]),
            "reward": holdout.rewards.ravel(),
            "expected_reward": holdout.expected_rewards.ravel(),
        }
    )


def check_checkpoints(checkpoints: Sequence[int], T: int) -> list[int]:
    """The checkpoints sorted and without repeats; each an integer in ``0..T``."""
    if isinstance(checkpoints, str) or not isinstance(checkpoints, Sequence | np.ndarray):
        raise InputTypeError(
            f"checkpoints must be a sequence of integers, but {checkpoints!r} is given"
        )
    points = sorted({check_int(c, "checkpoint", minimum=0) for c in checkpoints})
    if points and points[-1] > T:
        raise InputValueError(f"checkpoint {points[-1]} is after the last round T={T}")
    return points


def give_horizon(policy: Policy, T: int) -> None:
    """Set the policy's ``horizon`` parameter to ``T`` when it has one and it was not given.

    Horizon-dependent settings (σ² schedules ``"linear:1:0"``, SAVE's layers) then follow the
    run's length; a horizon given explicitly is kept.
    """
    if "horizon" in policy.get_params() and policy.get_params()["horizon"] is None:
        policy.set_params(horizon=T)


def run(
    policy: Policy | str,
    env: Environment,
    T: int,
    seed: int | None = None,
    *,
    progress: bool = False,
    checkpoints: Sequence[int] = (),
    holdout_size: int = 500,
    threads: int | None = 1,
    callback: Callable[[int, float], None] | None = None,
    callback_every: int = 100,
) -> RunResult:
    """Play ``T`` rounds of ``policy`` on ``env`` and record each (see :data:`COLUMNS`).

    ``policy`` is a :class:`~deepbandits.policies.Policy` (used as it is) or a policy
    specification ``"NAME[:key=value,...]"``, built by
    :func:`~deepbandits.policies.make_policy` with ``env=env``, so it gets the environment's
    recommended settings exactly as on the command line. With ``seed``, both are reset first
    (``env.reset(seed)``, ``policy.reset(seed)``), so one seed fixes the whole trajectory. A
    fresh policy with an unset ``horizon`` gets ``horizon=T`` (:func:`give_horizon`).

    A policy that has already decided or learned (warm-started by
    :func:`~deepbandits.ope.learn_log`, loaded from a checkpoint, or run before) is never
    reset: the run continues from what it learned, and ``seed`` seeds only its decisions'
    generator (and resets the environment), so the same warm state and seed give the same
    trajectory. To start such a policy afresh, call ``policy.reset()`` first. The
    environment's oracle σ²ₜ is passed to ``update`` each round, and so is its declared reward
    range unless the policy was given one.

    ``threads`` (default 1) pins torch's and numpy's thread pools for the duration of the run,
    as the command line does (:func:`pinned_threads`); ``None`` leaves them alone.
    ``callback(t, cum_regret)`` is called after every ``callback_every`` rounds (and after the
    last); an exception it raises (e.g. a tuner's "prune this trial") ends the run and
    propagates.

    With ``checkpoints`` (numbers of rounds played, e.g. the paper's 0, 2000, 5000, 7500), the
    policy's forecasts on ``env.holdout(holdout_size)`` are recorded at each of them
    (:data:`HOLDOUT_COLUMNS`), for the hold-out calibration of Eq. calib2. Predicting changes no
    state, so the trajectory is the same with or without checkpoints.

    Raises
    ------
    InputTypeError
        For a ``policy`` that is neither a Policy nor a specification string, an ``env`` that
        is not an :class:`~deepbandits.envs.Environment`, a ``callback`` that cannot be called,
        or a ``T``, ``seed``, ``threads``, ``callback_every``, ``holdout_size`` or checkpoint
        that is not an integer.
    InputValueError
        For a value out of range (``T``, ``threads``, ``callback_every``, ``holdout_size``
        below 1, a negative seed or checkpoint, a checkpoint after ``T``). Every argument is
        checked before the policy or the environment is touched.
    """
    T = check_int(T, "T", minimum=1)
    seed = check_seed(seed)
    every = check_int(callback_every, "callback_every", minimum=1)
    points = check_checkpoints(checkpoints, T)
    if points:
        holdout_size = check_int(holdout_size, "holdout_size", minimum=1)
    if threads is not None:
        threads = check_int(threads, "threads", minimum=1)
    if callback is not None and not callable(callback):
        raise InputTypeError(
            f"callback must be a function of (t, cum_regret) or None, but a "
            f"{type(callback).__name__} is given"
        )
    if not isinstance(env, Environment):
        raise InputTypeError(
            "env must be a deepbandits Environment (e.g. deepbandits.make_env('h1')), but a "
            f"{type(env).__name__} is given"
        )
    if isinstance(policy, str):
        from deepbandits.policies import make_policy
        from deepbandits.specs import parse_spec

        name, params = parse_spec(policy)
        policy = make_policy(name, env=env, **params)
    elif not isinstance(policy, Policy):
        raise InputTypeError(
            "policy must be a deepbandits Policy object or a policy specification string such "
            f"as 'neural-sigma2-linucb', but a {type(policy).__name__} is given"
        )
    warm = policy.n_features_in_ is not None  # it has decided or learned: keep what it knows
    if not warm:
        give_horizon(policy, T)
    if seed is not None:
        env.reset(seed)
        if warm:
            policy.set_random_state(np.random.default_rng(seed).bit_generator.state)
        else:
            policy.reset(seed)
    holdout = env.holdout(holdout_size) if points else None
    forecasts: list[pd.DataFrame] = []
    pass_range = policy.get_params().get("reward_range") is None
    out = {name: np.empty(T) for name in COLUMNS}
    out["arm"] = np.empty(T, dtype=np.int64)
    out["best_arm"] = np.empty(T, dtype=np.int64)
    started = datetime.now(UTC).isoformat()
    wall = time.perf_counter()
    cum = 0.0
    with pinned_threads(threads):
        for i in tqdm(range(T), disable=not progress, desc=type(policy).__name__, leave=False):
            if holdout is not None and i in points:
                forecasts.append(holdout_forecasts(policy, holdout, i))
            rnd = env.next_round()
            t0 = time.perf_counter()
            decision = policy.decide(rnd.contexts)
            t1 = time.perf_counter()
            arm = decision.arm
            reward = env.reward(arm)
            t2 = time.perf_counter()
            info = policy.learn(
                decision,
                reward,
                sigma2=rnd.sigma2,
                reward_range=rnd.reward_range if pass_range else None,
            )
            t3 = time.perf_counter()
            expected = rnd.expected_rewards
            regret = float(expected.max() - expected[arm])
            cum += regret
            train = info.train_seconds
            out["t"][i] = i + 1
            out["arm"][i] = arm
            out["best_arm"][i] = int(np.argmax(expected))
            out["reward"][i] = reward
            out["expected_reward"][i] = expected[arm]
            out["regret"][i] = regret
            out["cum_regret"][i] = cum
            out["sigma2_oracle"][i] = rnd.sigma2
            out["sigma2_used"][i] = info.sigma2
            out["sigma2_hat"][i] = info.sigma2_hat
            out["mean"][i] = decision.mean[arm]
            out["width"][i] = decision.width[arm]
            out["mean_gap"][i] = mean_gap(decision.mean, arm, decision.mask)
            out["time_select"][i] = t1 - t0
            out["time_update"][i] = t3 - t2 - train
            out["time_train"][i] = train
            if callback is not None and ((i + 1) % every == 0 or i + 1 == T):
                callback(i + 1, cum)
        if holdout is not None and T in points:
            forecasts.append(holdout_forecasts(policy, holdout, T))
    records = pd.DataFrame(out)
    records["t"] = records["t"].astype(np.int64)
    config = {
        "library": "deepbandits",
        "version": __version__,
        "policy": {"class": type(policy).__name__, "params": policy.get_params()},
        "env": {
            "class": type(env).__name__,
            "params": env.get_params(),
            "variance_bound": env.variance_bound(),
        },
        "T": T,
        "checkpoints": points,
        "holdout_size": holdout_size if points else None,
        "seed": seed,
        "started": started,
        "wall_seconds": time.perf_counter() - wall,
        "final_regret": float(cum),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": torch.__version__,
        "columns": COLUMNS,
    }
    return RunResult(
        records, config, pd.concat(forecasts, ignore_index=True) if forecasts else None
    )
