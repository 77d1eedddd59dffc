"""Memory benchmark (not a test): ``python benchmarks/memory.py [--quick]``.

Memory of every registered policy over T = 10⁵ rounds of h1 (d = 20, K = 4), with and without a
cap on the neural policies' training history (``max_history``), extrapolated to 10⁶ rounds.
Prints a Markdown table and writes it to ``benchmarks/results/memory.md``.

Method. Each row is measured in a fresh Python process (one torch thread, Linux). It first plays
a warm-up run of the same policy (200 rounds, two trainings) and drops it: what that leaves
resident is the once-per-process set-up (torch's kernels and work buffers), reported apart.
Then it builds the environment and the policy, resets the kernel's peak-RSS counter
(``/proc/self/clear_refs``), takes the resident set size as the baseline, plays T rounds
(select, reward, update) and reads the resident set size (VmRSS) and its peak since the reset
(VmHWM) after every T/10 rounds. Resident memory counts numpy buffers and torch tensors alike,
including the float32 copy of the history that each training makes. glibc raises its mmap
threshold after a large block is freed, and then keeps later freed training copies as heap:
the worker fixes the threshold at its initial 128 KiB (``MALLOC_MMAP_THRESHOLD_``), so that
resident memory is what the policy holds, not what malloc keeps for reuse. Reported:

* peak: VmHWM − baseline after T rounds;
* growth per round: the least-squares slope of VmRSS over the second half of the run (six
  readings), the memory each round adds;
* at 10⁶ rounds: peak + growth per round × (10⁶ − T). The history's buffers double when full
  and both copies are alive for that moment, so the peak exceeds the steady size by up to one
  copy of the history (at T = 10⁵: 131,072 rows for 100,000; at 10⁶: 1,048,576 for 10⁶); the
  extrapolation inherits the first excess, not the second.

Training dominates the time of a run but not its memory (the network's size is fixed and a
training holds one float32 copy of the history), so the neural policies train cheaply here:
every T/20 rounds, the last included, for one minibatch step. The cap ``max_history=T/4`` is
reached early, so over the second half the history is a fixed block and the growth per round is
that of everything else. KernelUCB keeps at most its own ``max_history`` = 1000 points and plays
about 130 rounds a second, so it runs 3000 rounds (2000 with ``--quick``): its memory stops
growing at 1000. The default cap, 10⁵, is not reached within T = 10⁵ rounds, so its line at 10⁶
rounds is the uncapped run's peak at T (with ``--quick``, extrapolated to 10⁵ rounds).

Full run: 19 minutes of CPU on one core (24 minutes on the shared 2-core development machine);
``--quick`` (T = 10⁴): about three.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import torch

import deepbandits as db
from deepbandits._io import write_atomic
from deepbandits.experiments.runner import give_horizon
from deepbandits.networks.learner import DEFAULT_MAX_HISTORY

OUT = Path(__file__).parent / "results" / "memory.md"
EXTRAPOLATE_TO = 1_000_000
WARMUP = 200  # rounds of the warm-up run (two trainings) before the baseline
MMAP_THRESHOLD = 128 * 1024  # glibc's initial value, held fixed (see the module doc)
MARKS = 10  # memory is read after every T/10 rounds
MIB = 2**20


def memory_kib() -> tuple[int, int]:
    """(VmRSS, VmHWM) of this process in KiB."""
    fields = {}
    with open("/proc/self/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = int(value.split()[0])
    return fields["VmRSS"], fields["VmHWM"]


def reset_peak() -> None:
    """Set VmHWM to the current VmRSS (Linux ≥ 4.0)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def is_neural(name: str) -> bool:
    return "train_every" in db.make_policy(name).get_params()


def history_rows(policy: db.Policy) -> int:
    """Rounds kept over all the policy's training histories (0 without one)."""
    members = getattr(policy, "members_", None) or [getattr(policy, "learner_", None)]
    return sum(m.history.size for m in members if m is not None)


def play(policy: db.Policy, env: Any, T: int, marks: tuple[int, ...] = ()) -> dict[int, Any]:
    """Play ``T`` rounds; at each of ``marks``, the memory above the baseline (bytes) and the
    history rows kept."""
    reset_peak()
    base, _ = memory_kib()
    out = {}
    for t in range(1, T + 1):
        rnd = env.next_round()
        arm = policy.select(rnd.contexts)
        reward = env.reward(arm)
        policy.update(rnd.contexts, arm, reward, sigma2=rnd.sigma2, reward_range=rnd.reward_range)
        if t in marks:
            rss, hwm = memory_kib()
            out[t] = {"rss": 1024 * (rss - base), "peak": 1024 * (hwm - base)}
            out[t]["rows"] = history_rows(policy)
    return out


def measure(name: str, T: int, max_history: int | None) -> dict[str, Any]:
    """Memory of ``T`` rounds of h1 in this process, after a warm-up run of the same policy."""
    torch.set_num_threads(1)
    params: dict[str, Any] = {}
    if is_neural(name):
        every = max(1, T // 20)
        params = dict(train_start=0, warmup_every=0, train_every=every, train_steps=1)
        params["max_history"] = max_history
    before, _ = memory_kib()
    warm_params = {**params, "train_every": WARMUP // 2} if params else {}
    warm = db.make_policy(name, seed=1, **warm_params)
    give_horizon(warm, T)
    play(warm, db.make_env("h1", seed=1), WARMUP)
    del warm
    gc.collect()
    after, _ = memory_kib()
    env = db.make_env("h1", seed=0)
    policy = db.make_policy(name, seed=0, **params)
    give_horizon(policy, T)
    marks = play(policy, env, T, tuple(T * k // MARKS for k in range(1, MARKS + 1)))
    return {
        "T": T,
        "warmup": 1024 * (after - before),
        "marks": {str(k): v for k, v in marks.items()},
    }


def measure_in_subprocess(name: str, T: int, max_history: int | None) -> dict[str, Any]:
    """:func:`measure` in a fresh process whose malloc returns every large block to the system."""
    job = json.dumps({"name": name, "T": T, "max_history": max_history})
    out = subprocess.run(
        [sys.executable, __file__, "--worker", job],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "MALLOC_MMAP_THRESHOLD_": str(MMAP_THRESHOLD)},
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def summary(result: dict[str, Any], until: int) -> tuple[float, float, float]:
    """Peak at T (MiB), growth per round (bytes) and the peak extrapolated to ``until`` (MiB)."""
    T = result["T"]
    marks = {int(t): m for t, m in result["marks"].items()}
    second_half = sorted(t for t in marks if t >= T // 2)
    rss = [marks[t]["rss"] for t in second_half]
    per_round = float(np.polyfit(second_half, rss, 1)[0])
    full = marks[T]
    extrapolated = full["peak"] + max(per_round, 0.0) * max(until - T, 0)
    return full["peak"] / MIB, per_round, extrapolated / MIB


def policy_rows(name: str, T: int, kernel_T: int) -> list[str]:
    """The table's lines for one policy: measured runs, then the default cap extrapolated."""
    cap = T // 4
    if is_neural(name):
        runs = [("None", None, T), (f"{cap:,}", cap, T)]
    elif name == "kernel-ucb":
        runs = [("1,000 (its own window)", None, kernel_T)]
    else:
        runs = [("- (no history)", None, T)]
    rows, results = [], []
    for label, max_history, rounds in runs:
        result = measure_in_subprocess(name, rounds, max_history)
        results.append(result)
        peak, per_round, at_end = summary(result, EXTRAPOLATE_TO)
        kept = result["marks"][str(rounds)]["rows"]
        rows.append(
            f"| {name} | {label} | {rounds:,} | {result['warmup'] / MIB:.0f} | {peak:.1f} "
            f"| {per_round:,.0f} | {kept:,} | {at_end:,.1f} |"
        )
        print(rows[-1], flush=True)
    if is_neural(name):
        *_, at_default = summary(results[0], DEFAULT_MAX_HISTORY)
        rows.append(
            f"| {name} | {DEFAULT_MAX_HISTORY:,} (default) | - | - | - | 0 past the cap "
            f"| {DEFAULT_MAX_HISTORY:,} per network | {at_default:,.1f} |"
        )
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="T = 10⁴ instead of 10⁵")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        job = json.loads(args.worker)
        print(json.dumps(measure(job["name"], job["T"], job["max_history"])))
        return
    T, kernel_T = (10_000, 2000) if args.quick else (100_000, 3000)
    command = "python benchmarks/memory.py" + (" --quick" if args.quick else "")
    head = (
        f"Memory on h1 (d = 20, K = 4), T = {T:,} (KernelUCB {kernel_T:,}), measured "
        f"{date.today().isoformat()} with `{command}`"
        f" (torch {torch.__version__}, numpy {np.__version__}, one thread, a fresh process per "
        "row). Set-up: resident memory that a first short run of the policy leaves behind "
        "(torch's kernels and work buffers, once per process). Peak: the most resident memory "
        "above that during the run. Growth per round: resident memory added per round over the "
        f"second half (least-squares slope). At {EXTRAPOLATE_TO:,} rounds: peak + growth per "
        f"round × ({EXTRAPOLATE_TO:,} − T). The networks train every {max(1, T // 20):,} rounds "
        "for one step: the memory of any schedule, in far less time."
    )
    print(head + "\n", flush=True)
    rows = [
        "| policy | max_history | rounds | set-up (MiB) | peak (MiB) | growth per round (bytes) "
        f"| history rows kept | at {EXTRAPOLATE_TO:,} rounds (MiB) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    print("\n".join(rows), flush=True)
    for name in db.policy_names(configurations=False):
        rows += policy_rows(name, T, kernel_T)
    write_atomic(OUT, head + "\n\n" + "\n".join(rows) + "\n")
    print(f"\nwritten to {OUT}")


if __name__ == "__main__":
    main()
