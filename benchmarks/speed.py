"""Speed benchmark (not a test): ``make bench`` or ``python benchmarks/speed.py [--quick]``.

Prints a Markdown table:

* rounds per second of select + update for each registered policy on h1 (d=20, K=4), network
  training excluded (the runner times training separately);
* seconds per network update (train_steps minibatch steps on the whole history) for the neural
  family;
* total wall time of a full T=10000 h1 run of Neural-σ²-LinUCB with its default parameters and
  with the paper's schedule (Appendix B).

Targets on 2 CPU cores: >= 5,000 rounds/s for the LinUCB family, >= 1,000 rounds/s for the
neural-linear family, full T=10000 run <= 60 s.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

import deepbandits as db


def rounds_per_second(name: str, T: int) -> tuple[float, float]:
    env = db.make_env("h1", seed=0)
    policy = db.make_policy(name, seed=0)
    rec = db.run(policy, env, T).records
    per_round = rec["time_select"] + rec["time_update"]
    trained = rec["time_train"][rec["time_train"] > 0]
    return T / per_round.sum(), float(trained.mean()) if len(trained) else float("nan")


def full_run(schedule: str, T: int) -> tuple[float, float, int]:
    env = db.make_env("h1", seed=0)
    policy = db.make_policy("neural-sigma2-linucb", seed=0, train_schedule=schedule)
    start = time.perf_counter()
    result = db.run(policy, env, T)
    return time.perf_counter() - start, result.final_regret, policy.n_trainings_


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
    print(f"torch {torch.__version__}, numpy {np.__version__}, threads {torch.get_num_threads()}\n")
    rounds_per_second("neural-linucb", 500)  # warm-up: torch's first calls are slow
    print("| policy | select+update rounds/s (training excluded) | seconds per network update |")
    print("|---|---|---|")
    for name in db.policy_names():
        rate, train = rounds_per_second(name, T_rate)
        train_txt = f"{train:.3f}" if np.isfinite(train) else "-"
        print(f"| {name} | {rate:,.0f} | {train_txt} |", flush=True)
    head = f"Neural-σ²-LinUCB, h1, T={T_full}"
    print(f"\n| {head} | wall time (s) | trainings | final regret (seed 0) |")
    print("|---|---|---|---|")
    for schedule in ("default", "paper"):
        wall, regret, n = full_run(schedule, T_full)
        print(f"| schedule={schedule} | {wall:.1f} | {n} | {regret:.0f} |", flush=True)


if __name__ == "__main__":
    main()
