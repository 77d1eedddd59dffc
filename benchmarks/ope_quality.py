"""How right the off-policy estimates are, measured (not a test):
``python benchmarks/ope_quality.py [--part simulated|warm|replay|obd-policies|all] [--quick]``.

* ``simulated``: 300 logs of 300 rounds of ``linear`` (d = 5, K = 4, noise 0.3), logged by the
  softmax of a weak model; the evaluation policy is the softmax of 3·h. The truth is the value
  over the context distribution (from 200,000 contexts). Per estimator: mean error ± its standard
  error, RMSE, and how often the 95 % interval (400 resamples) covers the truth. DM and the DR
  family use q̂ = 0.5·h (a wrong model: DR stays unbiased, DM does not), and DR also a
  cross-fitted ridge on 1,000-round ε-greedy logs (noise 0.1), against IPS.
* ``warm``: regret over the first 1,000 live rounds of LinUCB (shared θ, and per arm) cold,
  warm-started on a 2,000-round ε-greedy log (ε = 0.2) without weights, and with clipped IPS
  weights, on ``linear`` and on ``h1`` (where LinUCB is misspecified); mean ± std over 5 seeds.
* ``replay``: LinUCB's cumulative regret at rounds 100/200/300, played online and replayed on
  uniform and ε-greedy (ε = 0.5) logs of 9,600 rounds; mean ± standard error over 16 seeds.
* ``obd-policies``: LinUCB (per arm), Neural-LinUCB and Neural-σ²-LinUCB learn the first half
  of OBD's random log (campaign all; arm contexts = user features, affinities, item
  features) and are evaluated on the second half by IPS, DM and DR (ESS) and by replay, beside
  the random policy's click rate on that half and BTS's on its own log.

Writes ``benchmarks/results/ope_quality.md`` (not with ``--quick``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

import deepbandits as db
from deepbandits._io import write_atomic
from deepbandits.ope import evaluate
from deepbandits.ope.replay import replay
from deepbandits.ope.simulate import logging_distribution, simulate_log, true_value
from deepbandits.ope.warm import learn_log

OUT = Path(__file__).parent / "results" / "ope_quality.md"
SMALL_NET = dict(hidden=32, feature_dim=16, train_start=200, train_every=500, train_steps=50)


def env(seed: int, fn: str = "linear", noise: float = 0.3) -> db.Environment:
    return db.make_env(fn, d=5, n_arms=4, noise="fixed", noise_std=noise, seed=seed)


def target(expected: np.ndarray) -> np.ndarray:
    return logging_distribution(3.0 * expected, "softmax", 0.0, 1.0)


def simulated(quick: bool) -> list[str]:
    n_logs = 60 if quick else 300
    big = simulate_log(env(0), 200_000, logging="uniform", seed=10_000)
    truth = true_value(target(big.expected_rewards), big.expected_rewards)
    names = ["ips", "snips", "dm", "dr", "sndr", "switch-dr", "dr-os"]
    err = {k: [] for k in names}
    cov = {k: 0 for k in names}
    for seed in range(n_logs):
        sim = simulate_log(env(0), 300, logging="softmax", seed=seed)
        res = evaluate(
            sim.log,
            target(sim.expected_rewards),
            q_hat=0.5 * sim.expected_rewards,
            n_bootstrap=400,
            seed=seed,
            truth=truth,
            warn=False,
        )
        for row in res.table.itertuples():
            err[row.estimator].append(row.estimate - truth)
            cov[row.estimator] += bool(row.covered)
    out = [
        f"Simulated logs ({n_logs} logs of 300 rounds, truth {truth:.4f}); q̂ = 0.5·h",
        "",
        "| estimator | mean error ± SE | RMSE | 95 % interval covers |",
        "| --- | --- | --- | --- |",
    ]
    for k in names:
        e = np.array(err[k])
        out.append(
            f"| {k} | {e.mean():+.4f} ± {e.std(ddof=1) / np.sqrt(len(e)):.4f} | "
            f"{np.sqrt((e**2).mean()):.4f} | {cov[k] / n_logs:.1%} |"
        )
    ips, dr = [], []
    for seed in range(10 if quick else 40):
        sim = simulate_log(
            env(0, noise=0.1), 1000, logging="epsilon-greedy", epsilon=0.3, seed=seed
        )
        pi = target(sim.expected_rewards)
        v = true_value(pi, sim.expected_rewards)
        res = evaluate(sim.log, pi, estimators=["ips", "dr"], reward_model="ridge", n_bootstrap=0)
        ips.append(res.estimate("ips") - v)
        dr.append(res.estimate("dr") - v)
    rmse = [np.sqrt(np.mean(np.square(x))) for x in (ips, dr)]
    out += [
        "",
        f"ε-greedy logs of 1,000 rounds, cross-fitted ridge q̂ (well specified): RMSE of IPS "
        f"{rmse[0]:.4f}, of DR {rmse[1]:.4f} ({len(ips)} logs).",
    ]
    return out


def play(policy: db.Policy, environment: db.Environment, rounds: int) -> np.ndarray:
    regret = []
    for _ in range(rounds):
        rnd = environment.next_round()
        arm = policy.select(rnd.contexts)
        policy.update(rnd.contexts, arm, environment.reward(arm))
        regret.append(rnd.expected_rewards.max() - rnd.expected_rewards[arm])
    return np.cumsum(regret)


def warm(quick: bool) -> list[str]:
    out = [
        "Warm start: regret over the first 1,000 live rounds (mean ± std, 5 seeds)",
        "",
        "| environment | policy | cold | warm | warm, IPS weights (clip 20) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for fn in ("linear", "h1"):
        for spec in ({}, {"per_arm": True}):
            cells = []
            for kind in ("cold", None, "ips"):
                regret = []
                for s in range(2 if quick else 5):
                    e = env(s, fn)
                    sim = simulate_log(e, 2000, logging="epsilon-greedy", epsilon=0.2, seed=s)
                    policy = db.make_policy("linucb", seed=s, **spec)
                    if kind != "cold":
                        learn_log(policy, sim.log, weights=kind)
                    regret.append(play(policy, e, 1000)[-1])
                cells.append(f"{np.mean(regret):.1f} ± {np.std(regret):.1f}")
            name = "LinUCB per arm" if spec else "LinUCB"
            out.append(f"| {fn} | {name} | {' | '.join(cells)} |")
    return out


def replay_part(quick: bool) -> list[str]:
    seeds, T = (4 if quick else 16), 300
    online = np.array(
        [play(db.make_policy("linucb", seed=s), env(s + 100), T) for s in range(seeds)]
    )  # the same problem instances (θ) as the logs below
    out = [
        f"Replay against online play: LinUCB's cumulative regret (mean ± SE, {seeds} seeds)",
        "",
        "| | round 100 | round 200 | round 300 |",
        "| --- | --- | --- | --- |",
    ]

    def row(name: str, curves: np.ndarray) -> str:
        se = curves.std(axis=0, ddof=1) / np.sqrt(len(curves))
        cells = [f"{curves[:, t].mean():.2f} ± {se[t]:.2f}" for t in (99, 199, 299)]
        return f"| {name} | {' | '.join(cells)} |"

    out.append(row("online", online))
    for logging in ("uniform", "epsilon-greedy"):
        curves = []
        for s in range(seeds):
            sim = simulate_log(env(s), 32 * T, logging=logging, epsilon=0.5, seed=s + 100)
            res = replay(
                db.make_policy("linucb", seed=s),
                sim.log,
                max_accepted=T,
                expected_rewards=sim.expected_rewards,
                seed=s,
            )
            curves.append(res.cumulative_regret())
        out.append(row(f"replay, {logging} log", np.array(curves)))
    return out


def obd_policies(quick: bool, data_dir: Path | None) -> list[str]:
    log = db.load_logged("obd", behavior="random", campaign="all", data_dir=data_dir)
    bts = db.load_logged("obd", behavior="bts", campaign="all", data_dir=data_dir)
    if quick:
        log = log.subset(np.arange(2000))
    train, test = log.split(0.5, seed=None)
    out = [
        f"OBD campaign all: policies learn the first {len(train)} rounds of the random log, "
        f"evaluated on the last {len(test)}. Random policy's click rate there: "
        f"{test.rewards.mean():.4f}; BTS's on its own log: {bts.rewards.mean():.4f}.",
        "",
        "| policy | IPS [95 %] | DM | DR [95 %] | ESS | replay (accepted rounds) | seconds |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    specs = {
        "LinUCB (per arm)": ("linucb", {"per_arm": True}),
        "Neural-LinUCB": ("neural-linucb", SMALL_NET),
        "Neural-σ²-LinUCB": ("neural-sigma2-linucb", {**SMALL_NET, "reward_range": (0.0, 1.0)}),
    }
    for label, (name, kw) in specs.items():
        start = time.perf_counter()
        policy = db.make_policy(name, seed=0, **kw)
        learn_log(policy, train)
        res = evaluate(test, policy, estimators=["ips", "dm", "dr"], n_bootstrap=1000, warn=False)
        t = res.table.set_index("estimator")
        fresh = db.make_policy(name, seed=0, **kw)
        rep = replay(fresh, test, seed=0)
        out.append(
            f"| {label} | {t.loc['ips', 'estimate']:.4f} [{t.loc['ips', 'lower']:.4f}, "
            f"{t.loc['ips', 'upper']:.4f}] | {t.loc['dm', 'estimate']:.4f} | "
            f"{t.loc['dr', 'estimate']:.4f} [{t.loc['dr', 'lower']:.4f}, "
            f"{t.loc['dr', 'upper']:.4f}] | {res.support.ess:.0f} | {rep.value:.4f} "
            f"({rep.n_accepted}) | {time.perf_counter() - start:.0f} |"
        )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parts = ("simulated", "warm", "replay", "obd-policies")
    parser.add_argument("--part", choices=(*parts, "all"), default="all")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--data-dir", type=Path, default=None, help="holds obd/")
    args = parser.parse_args()
    chosen = parts if args.part == "all" else (args.part,)
    sections = []
    for part in chosen:
        start = time.perf_counter()
        if part == "simulated":
            lines = simulated(args.quick)
        elif part == "warm":
            lines = warm(args.quick)
        elif part == "replay":
            lines = replay_part(args.quick)
        else:
            lines = obd_policies(args.quick, args.data_dir)
        lines.append(f"\n({time.perf_counter() - start:.0f} s)")
        sections.append("\n".join(lines))
        print(sections[-1] + "\n", flush=True)
    if not args.quick and args.part == "all":
        command = " ".join([os.path.relpath(sys.executable), *sys.argv])
        head = f"# Off-policy evaluation, measured\n\n`{command}`\n"
        write_atomic(OUT, head + "\n" + "\n\n".join(sections) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
