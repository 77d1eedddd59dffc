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
* ``embeddings``: MIPS against IPS where actions have embeddings (Saito & Joachims 2022): K = 200
  actions in 10 categories, d = 5, the reward depends on the action only through its category
  (no direct effect), logs of 2,000 rounds by a softmax-linear policy of the context; the
  evaluation policy a sharper one. 200 logs (40 quick); per estimator mean error ± SE, RMSE,
  coverage of the 95 % interval (200 resamples).
* ``unknown-propensities``: the same kind of logs with K = 5 and the propensities withheld:
  IPS and DR on propensities estimated by a cross-fitted logistic regression
  (:func:`~deepbandits.ope.with_estimated_propensities`) and balanced IPW (logistic and
  gradient-boosted classifiers), beside IPS and DR on the true propensities. 100 logs (20
  quick).
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
    names = [
        "ips",
        "snips",
        "dm",
        "dr",
        "sndr",
        "switch-dr",
        "dr-os",
        "sg-ips:lam=0.1",
        "sg-dr:lam=0.1",
        "switch-dr-slope",
        "dr-os-slope",
        "sg-ips-slope",
        "sg-dr-slope",
    ]
    err = {k: [] for k in names}
    cov = {k: 0 for k in names}
    for seed in range(n_logs):
        sim = simulate_log(env(0), 300, logging="softmax", seed=seed)
        res = evaluate(
            sim.log,
            target(sim.expected_rewards),
            estimators=names,
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


def softmax(z: np.ndarray) -> np.ndarray:
    z = np.exp(z - z.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def category_world(K: int, n: int, seed: int) -> dict[str, np.ndarray]:
    """Contexts, a logging policy and a target that depend on them, and mean rewards that
    depend on an action only through its category (10 categories, or one per action if K <
    10)."""
    rng = np.random.default_rng(seed)
    d, n_cat = 5, min(10, K)
    X = rng.standard_normal((n, d))
    category = np.arange(K) % n_cat
    mean = (1 / (1 + np.exp(-X @ rng.standard_normal((d, n_cat)))))[:, category]
    logging = softmax(0.5 * X @ rng.standard_normal((d, K)))
    target_dist = softmax(1.5 * X @ rng.standard_normal((d, K)))
    return {"X": X, "category": category, "mean": mean, "logging": logging, "target": target_dist}


def draw_log(w: dict[str, np.ndarray], seed: int) -> db.ope.LoggedBandit:
    rng = np.random.default_rng(seed)
    n, K = w["logging"].shape
    a = np.minimum((w["logging"].cumsum(axis=1) < rng.random(n)[:, None]).sum(axis=1), K - 1)
    r = (rng.random(n) < w["mean"][np.arange(n), a]).astype(np.float64)
    return db.ope.make_log(
        w["X"],
        a,
        r,
        w["logging"][np.arange(n), a],
        n_actions=K,
        action_features=w["category"][:, None].astype(np.float64),
        logging_dist=w["logging"],
    )


def error_table(errors: dict[str, list[float]], covered: dict[str, int], n_logs: int) -> list[str]:
    out = [
        "| estimator | mean error ± SE | RMSE | 95 % interval covers |",
        "| --- | --- | --- | --- |",
    ]
    for k, e in errors.items():
        e = np.asarray(e)
        out.append(
            f"| {k} | {e.mean():+.4f} ± {e.std(ddof=1) / np.sqrt(len(e)):.4f} | "
            f"{np.sqrt((e**2).mean()):.4f} | {covered[k] / n_logs:.1%} |"
        )
    return out


def collect(rows: list[tuple[str, object]], errors: dict, covered: dict, truth: float) -> None:
    for label, table in rows:
        row = table.iloc[0]  # type: ignore[attr-defined]
        errors.setdefault(label, []).append(row["estimate"] - truth)
        covered[label] = covered.get(label, 0) + bool(row["lower"] <= truth <= row["upper"])


def embeddings(quick: bool) -> list[str]:
    n_logs = 40 if quick else 200
    w = category_world(200, 2000, seed=1)
    truth = float((w["target"] * w["mean"]).sum(axis=1).mean())
    errors: dict[str, list[float]] = {}
    covered: dict[str, int] = {}
    for seed in range(n_logs):
        log = draw_log(w, 100 + seed)
        res = evaluate(
            log,
            w["target"],
            estimators=["ips", "snips", "mips", "snmips"],
            n_bootstrap=200,
            seed=seed,
            warn=False,
        )
        collect(
            [(k, res.table[res.table["estimator"] == k]) for k in res.table["estimator"]],
            errors,
            covered,
            truth,
        )
    return [
        f"Actions with embeddings: K = 200 actions in 10 categories, {n_logs} logs of 2,000 "
        f"rounds, truth {truth:.4f} (the logged contexts' value)",
        "",
        *error_table(errors, covered, n_logs),
    ]


def unknown_propensities(quick: bool) -> list[str]:
    n_logs = 20 if quick else 100
    w = category_world(5, 2000, seed=2)
    truth = float((w["target"] * w["mean"]).sum(axis=1).mean())
    errors: dict[str, list[float]] = {}
    covered: dict[str, int] = {}
    for seed in range(n_logs):
        log = draw_log(w, 500 + seed)
        log = db.ope.make_log(log.contexts, log.actions, log.rewards, log.propensities)
        q = 0.5 * w["mean"]  # a wrong model, so that DR leans on its weights
        opts = dict(n_bootstrap=200, seed=seed, warn=False)
        true_p = evaluate(log, w["target"], estimators=["ips", "dr"], q_hat=q, **opts).table
        estimated = db.ope.with_estimated_propensities(log, seed=seed)
        est_p = evaluate(estimated, w["target"], estimators=["ips", "dr"], q_hat=q, **opts).table
        balanced = evaluate(
            log,
            w["target"],
            estimators=[
                db.ope.BalancedIPS(model="logistic", seed=seed),
                db.ope.BalancedIPS(seed=seed),
            ],
            **opts,
        ).table
        rows = [
            ("IPS, true propensities", true_p.iloc[[0]]),
            ("DR, true propensities", true_p.iloc[[1]]),
            ("IPS, estimated propensities", est_p.iloc[[0]]),
            ("DR, estimated propensities", est_p.iloc[[1]]),
            ("balanced IPW, logistic", balanced.iloc[[0]]),
            ("balanced IPW, gradient boosting", balanced.iloc[[1]]),
        ]
        collect(rows, errors, covered, truth)
    return [
        f"Propensities withheld: K = 5, {n_logs} logs of 2,000 rounds, truth {truth:.4f}; DR's "
        "q̂ = 0.5·h (wrong)",
        "",
        *error_table(errors, covered, n_logs),
    ]


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
    parts = ("simulated", "embeddings", "unknown-propensities", "warm", "replay", "obd-policies")
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
        elif part == "embeddings":
            lines = embeddings(args.quick)
        elif part == "unknown-propensities":
            lines = unknown_propensities(args.quick)
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
