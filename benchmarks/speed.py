"""Speed benchmark (not a test): ``make bench`` or ``python benchmarks/speed.py [--quick]``.

Prints a Markdown table:

* rounds per second of decide + learn for each registered policy on h1 (d=20, K=4), network
  training excluded (the runner times training separately), and of decide_batch + learn_batch
  with B = 1000 requests per call (network training switched off for that column);
* seconds per network update (train_steps minibatch steps on the whole history) for the neural
  family;
* total wall time of a full T=10000 h1 run of Neural-σ²-LinUCB with its default parameters and
  with the paper's schedule (Appendix B);
* the per-round path next to busy processes: select + update rounds/s of Neural-LinUCB
  (network never trained) and LinUCB called directly (no ``db.run``, which pins threads), on
  h1's shape, on a quiet machine and with 1 and 3 CPU-bound competitor processes per core, each
  policy with its default ``threads=1`` and with ``threads=None`` (torch's own pool, the
  behaviour before issue 47); the share of its quiet speed each keeps (target >= 40 % with one
  busy competitor per core);
* the paper's latency experiment (Table latency): seconds for 100 rounds of arm selection and for
  the network updates of those rounds (H = 10, so 10 updates) on an MNIST-shaped problem: K = 10
  arms, block-encoded contexts of d = 784·10, m = 100. The paper's text says n = 1000 steps per
  update; its code (Appendix B) trains one epoch over the history, which for t <= 100 is at most
  2 minibatches of 64. Both are timed; the selection time is that of the one-epoch run.

Without ``--quick`` the output is also written to ``benchmarks/results/speed.md`` (the manual
includes that file).

Targets on 2 CPU cores: >= 5,000 rounds/s for the LinUCB family, >= 5,000 rounds/s of
decide + learn for Neural-σ²-LinUCB (issue 17), >= 1,000 rounds/s for the rest of the
neural-linear family, full T=10000 run <= 60 s; latency of arm selection >= 10x below the paper's
RTX A5000 figure for the neural-linear family (0.43 s) and >= 5x below it for NeuralUCB-diag
(6.42 s).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import time
from pathlib import Path

import numpy as np
import torch

import deepbandits as db
from _output import Output
from deepbandits.experiments.latency import measure_latency, mnist_shaped_rounds
from deepbandits.experiments.runner import give_horizon

OUT = Path(__file__).parent / "results" / "speed.md"


def rounds_per_second(name: str, T: int, **params: object) -> tuple[float, float]:
    env = db.make_env("h1", seed=0)
    policy = db.make_policy(name, seed=0, **params)
    rec = db.run(policy, env, T).records
    per_round = rec["time_select"] + rec["time_update"]
    trained = rec["time_train"][rec["time_train"] > 0]
    return T / per_round.sum(), float(trained.mean()) if len(trained) else float("nan")


#: Settings that switch network training off (for the batch column: only decide and learn)
NO_TRAINING = {"train_start": 10**9, "train_every": 10**9, "warmup_every": 0}


def batch_rounds_per_second(name: str, T: int, B: int = 1000, **params: object) -> float:
    """Rounds per second of ``decide_batch`` + ``learn_batch`` on h1, ``B`` requests a call."""
    env = db.make_env("h1", seed=0)
    cls = db.policies.POLICIES[name]
    off = {k: v for k, v in NO_TRAINING.items() if k in cls.param_specs}
    policy = db.make_policy(name, seed=0, **off, **params)
    give_horizon(policy, T)
    rounds = [env.next_round() for _ in range(T)]
    X = np.stack([r.contexts for r in rounds])
    ranges = [r.reward_range for r in rounds]
    start = time.perf_counter()
    for i in range(0, T, B):
        decisions = policy.decide_batch(X[i : i + B])
        rewards = [float(rounds[i + j].expected_rewards[d.arm]) for j, d in enumerate(decisions)]
        policy.learn_batch(decisions, rewards, reward_ranges=ranges[i : i + B])
    return T / (time.perf_counter() - start)


def untrained_rate(name: str, T: int) -> float:
    """Decide + learn per second of a neural policy whose network never trains (and whose
    prior stays at λ): the cost of deciding and learning alone, best of 3 passes of T rounds,
    all decisions of a pass, then all their rewards."""
    env = db.make_env("h1", seed=0)
    policy = db.make_policy(name, seed=0, **NO_TRAINING, lam_warmup=False)
    rounds = [env.next_round() for _ in range(T)]
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        decisions = [policy.decide(r.contexts) for r in rounds]
        for d, r in zip(decisions, rounds, strict=True):
            policy.learn(d, float(r.expected_rewards[d.arm]), reward_range=r.reward_range)
        best = min(best, time.perf_counter() - start)
    return T / best


def select_update_rate(policy: db.Policy, contexts: list[np.ndarray], n: int) -> float:
    """Rounds per second of ``select`` + ``update`` of ``policy`` over ``n`` rounds."""
    start = time.perf_counter()
    for i in range(n):
        X = contexts[i % len(contexts)]
        policy.update(X, policy.select(X), 0.5)
    return n / (time.perf_counter() - start)


def spin(stop: multiprocessing.synchronize.Event) -> None:
    """A CPU-bound competitor: count until told to stop."""
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x += 1


#: Policies of the contention rows, with what keeps their network from training.
CONTENDED = {
    "neural-linucb": {"train_start": 10**6, "warmup_every": 0},
    "linucb": {},
}


def contention_rows(n: int, repeats: int = 5) -> list[tuple[str, object, float, float, float]]:
    """(policy, threads, quiet rounds/s, with 1 and with 3 busy competitors per core): median
    of ``repeats`` passes of ``n`` rounds. The loads take turns within each repeat (quiet, 1,
    3, quiet, ...), so a machine whose speed drifts during the run (a shared virtual machine)
    shifts every load alike instead of the ratio between them."""
    contexts = [np.random.default_rng(i).normal(size=(4, 20)) for i in range(200)]
    policies = {
        (name, threads): db.make_policy(name, seed=0, threads=threads, **params)
        for name, params in CONTENDED.items()
        for threads in (1, None)
    }
    for policy in policies.values():
        select_update_rate(policy, contexts, 200)  # build the state, warm torch up
    loads = (0, 1, 3)
    rates = {(key, load): [] for key in policies for load in loads}
    context = multiprocessing.get_context("fork")
    for _ in range(repeats):
        for per_core in loads:
            stop = context.Event()
            busy = [
                context.Process(target=spin, args=(stop,), daemon=True)
                for _ in range(per_core * (os.cpu_count() or 1))
            ]
            for process in busy:
                process.start()
            time.sleep(0.3 if busy else 0.0)
            for key, policy in policies.items():
                rates[(key, per_core)].append(select_update_rate(policy, contexts, n))
            stop.set()
            for process in busy:
                process.join()
    return [
        (name, threads, *(float(np.median(rates[((name, threads), load)])) for load in loads))
        for name, threads in policies
    ]


def full_run(schedule: str, T: int) -> tuple[float, float, int]:
    env = db.make_env("h1", seed=0)
    policy = db.make_policy("neural-sigma2-linucb", seed=0, train_schedule=schedule)
    start = time.perf_counter()
    result = db.run(policy, env, T)
    return time.perf_counter() - start, result.final_regret, policy.n_trainings_


#: Table latency of the paper (RTX A5000): (arm selection s, network update s) per 100 rounds
PAPER_LATENCY = {
    "neural-linucb": (0.43, 1.86),
    "neural-sigma2-linucb": (0.43, 1.86),
    "neural-ucb": (6.42, 2.28),
    "neural-ts": (7.27, 2.62),
}
#: One epoch over the history at t <= 100 with minibatches of 64: what the paper's code trains.
EPOCH_STEPS = 2


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="shorter runs (T=3000) for a smoke check"
    )
    args = parser.parse_args()
    torch.set_num_threads(2)
    T_rate = 3000 if args.quick else 5000
    T_full = 3000 if args.quick else 10000
    emit = Output("speed.py")

    emit(f"torch {torch.__version__}, numpy {np.__version__}, threads {torch.get_num_threads()}\n")
    rounds_per_second("neural-linucb", 500)  # warm-up: torch's first calls are slow
    emit(
        "| policy | decide+learn rounds/s (training excluded) | decide_batch+learn_batch "
        "rounds/s (B=1000, no training) | seconds per network update |"
    )
    emit("|---|---|---|---|")
    cases = [(name, {}, T_rate) for name in db.policy_names(configurations=False)]
    cases += [(name, {"mode": "full"}, T_rate // 5) for name in ("neural-ucb", "neural-ts")]
    for name, params, T in cases:
        rate, train = rounds_per_second(name, T, **params)
        batch = batch_rounds_per_second(name, T, **params)
        train_txt = f"{train:.3f}" if np.isfinite(train) else "-"
        label = name + "".join(f":{k}={v}" for k, v in params.items())
        emit(f"| {label} | {rate:,.0f} | {batch:,.0f} | {train_txt} |", flush=True)
    rate = untrained_rate("neural-sigma2-linucb", 2000)
    emit(
        f"\nNeural-σ²-LinUCB decide + learn, network never trained (prior fixed at λ), h1: "
        f"{rate:,.0f} rounds/s (target >= 5,000)"
    )
    emit(
        "\nThe per-round path next to CPU-bound processes (select + update called directly, "
        "h1's shape d=20, K=4, Neural-LinUCB's network never trained): rounds/s, and the share "
        "of the quiet speed kept; threads=1 is the default, threads=None torch's own pool\n"
    )
    emit(
        "| policy | threads | quiet | 1 busy per core | kept | 3 busy per core | kept |\n"
        "|---|---|---|---|---|---|---|"
    )
    for name, threads, quiet, one, three in contention_rows(300 if args.quick else 1000):
        emit(
            f"| {name} | {threads} | {quiet:,.0f} | {one:,.0f} | {one / quiet:.0%} | "
            f"{three:,.0f} | {three / quiet:.0%} |",
            flush=True,
        )
    head = f"Neural-σ²-LinUCB, h1, T={T_full}"
    emit(f"\n| {head} | wall time (s) | trainings | final regret (seed 0) |")
    emit("|---|---|---|---|")
    for schedule in ("default", "paper"):
        wall, regret, n = full_run(schedule, T_full)
        emit(f"| train_schedule={schedule} | {wall:.1f} | {n} | {regret:.0f} |", flush=True)

    steps = 100 if args.quick else 1000
    rounds = mnist_shaped_rounds(100)
    emit(
        "\nLatency, MNIST-shaped (d=7840 block-encoded, K=10, m=100, H=10), 100 rounds: arm "
        "selection, and the 10 network updates with n=1 epoch of the history (<= 2 minibatches, "
        f"as the paper's code) and with n={steps} steps (as its text)\n"
    )
    emit(
        "| policy | arm selection (s) | paper (s) | speed-up | update, 1 epoch (s) | speed-up "
        f"| update, n={steps} (s) | paper (s) |"
    )
    emit("|---|---|---|---|---|---|---|---|")
    for name, (paper_sel, paper_upd) in PAPER_LATENCY.items():
        sel, epoch = measure_latency(name, rounds, EPOCH_STEPS)
        _, upd = measure_latency(name, rounds, steps)
        emit(
            f"| {name} | {sel:.3f} | {paper_sel} | {paper_sel / sel:.0f}x | {epoch:.3f} | "
            f"{paper_upd / epoch:.0f}x | {upd:.2f} | {paper_upd} |",
            flush=True,
        )
    if not args.quick:
        emit.save(OUT, f"{os.cpu_count()} CPU cores ({platform.machine()})")


if __name__ == "__main__":
    main()
