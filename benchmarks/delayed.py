"""Regret when rewards arrive late, shuffled, or never (not a test):
``python benchmarks/delayed.py [--quick]``.

Neural-σ²-LinUCB (the environment's recommended settings) plays h1 (d = 20, K = 4) and, when
``DEEPBANDITS_DATA`` holds it, UCI shuttle (the paper's settings), through
:func:`deepbandits.experiments.delayed.run_delayed`: each reward is delivered up to ``delay``
rounds late, the rewards due at a round in random order, and a share ``missing`` never (those
decisions expire after ``reward_timeout = 2·delay + 10`` decisions). Prints a Markdown table of
the final regret, mean ± std over seeds, and its ratio to the undelayed run on the same seeds;
without ``--quick`` it also writes it to ``benchmarks/results/delayed.md``, which the manual
includes.
"""

from __future__ import annotations

import argparse
from datetime import date
from pathlib import Path

import numpy as np
import torch

import deepbandits as db
from deepbandits._io import write_atomic
from deepbandits.errors import DataNotFoundError
from deepbandits.experiments.delayed import run_delayed

OUT = Path(__file__).parent / "results" / "delayed.md"
#: (delay in rounds, share of rewards never delivered)
SETTINGS = [(0, 0.0), (20, 0.0), (200, 0.0), (20, 0.1)]


def final_regrets(
    env_name: str, T: int, seeds: list[int], delay: int, missing: float
) -> list[float]:
    out = []
    for seed in seeds:
        env = db.make_env(env_name, seed=seed)
        timeout = {"reward_timeout": 2 * delay + 10} if missing else {}
        policy = db.make_policy("neural-sigma2-linucb", env=env, seed=seed, **timeout)
        out.append(
            run_delayed(policy, env, T, delay=delay, missing=missing, seed=seed).final_regret
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="T = 600 and 2 seeds")
    args = parser.parse_args()
    torch.set_num_threads(1)
    seeds = [0, 1] if args.quick else [0, 1, 2]
    cases = [("h1", 600 if args.quick else 3000)]
    try:
        db.make_env("shuttle", seed=0)
        cases.append(("shuttle", 600 if args.quick else 5000))
    except DataNotFoundError:
        print("shuttle: not in DEEPBANDITS_DATA, skipped")
    print(f"Neural-σ²-LinUCB, seeds {seeds}; final regret mean ± std, ratio to no delay\n")
    table = [
        "| env | T | delay (rounds) | rewards lost | final regret | ratio to no delay |",
        "|---|---|---|---|---|---|",
    ]
    print("\n".join(table))
    for env_name, T in cases:
        base = None
        for delay, missing in SETTINGS:
            regrets = np.array(final_regrets(env_name, T, seeds, delay, missing))
            base = regrets.mean() if base is None else base
            table.append(
                f"| {env_name} | {T} | {delay} | {missing:.0%} | {regrets.mean():,.0f} ± "
                f"{regrets.std(ddof=1):,.0f} | {regrets.mean() / base:.2f} |"
            )
            print(table[-1], flush=True)
    if not args.quick:
        head = (
            f"`python benchmarks/delayed.py` on {date.today().isoformat()}: Neural-σ²-LinUCB, "
            f"seeds {', '.join(map(str, seeds))}; final regret, mean ± std over the seeds."
        )
        write_atomic(OUT, head + "\n\n" + "\n".join(table) + "\n")


if __name__ == "__main__":
    main()
