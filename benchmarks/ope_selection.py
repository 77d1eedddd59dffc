"""Which estimator to trust, measured on simulated logs whose truth is known (issue 48; not a
test): ``python benchmarks/ope_selection.py [--quick]``.

24 configurations vary one or two things of a base (``linear`` reward function, d = 5, K = 4
arms, noise 0.5, 1,000 rounds logged by the softmax of a weak model at temperature 1, the
evaluation policy far from it, a good reward model): the reward function (h1, h2, h3), the
noise, the number of arms, the logging policy (uniform, ε-greedy, softmax and its temperature),
the log size, the reward model (exact q̂ = h, good: h plus noise of 0.2 of its spread, wrong: h
of the arms shuffled, or a cross-fitted ridge regression) and the evaluation policy (far: the
softmax of 4·h standardised; near: of h standardised). Each is run on ``--seeds`` logs (20;
seeds 0..); the truth is the evaluation policy's value over the context distribution (from
100,000 contexts, with the reward function of the log's seed: an environment draws θ, or
h2's matrix A, when it is reset), so that every estimator, DM with the exact model too, errs
by the sampling of the log's contexts at least.

Every registered estimator (``candidates="all"``: IPS, SNIPS, DM, DR, SNDR, Switch-DR, DRos and
the SLOPE-tuned Switch-DR, DRos, SG-IPS, SG-DR) is a candidate; per configuration the RMSE of
each over the logs, and of the estimator :func:`deepbandits.ope.select_estimator` chooses on
each log by the bounded-bias MSE (``mse``, the default), by cross-validation (``cv``) and by
SLOPE (``slope``), and the ratio of the chosen one's
RMSE to the best candidate's in hindsight (the least RMSE of the configuration).

The defaults of ``mse`` (z, the reference) and of ``cv`` (``train_fraction``, the reference,
the one-standard-error rule) were compared on other seeds (``--tune``: seeds 1000.., 10 logs
per configuration), reported in the same file.

Writes ``benchmarks/results/ope_selection.md`` and ``ope_selection.csv`` (not with
``--quick``).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

import deepbandits as db
from deepbandits._io import write_atomic
from deepbandits.ope import select_estimator
from deepbandits.ope.simulate import logging_distribution, simulate_log, true_value

sys.path.insert(0, str(Path(__file__).parent))
from _output import Output

RESULTS = Path(__file__).parent / "results"
BASE = dict(
    fn="linear",
    noise=0.5,
    arms=4,
    logging="softmax",
    epsilon=0.1,
    temperature=1.0,
    n=1000,
    model="good",
    target="far",
)
#: Name and what differs from BASE.
CONFIGS: tuple[tuple[str, dict], ...] = (
    ("base", {}),
    ("h1", {"fn": "h1"}),
    ("h2", {"fn": "h2"}),
    ("h3", {"fn": "h3"}),
    ("noise 0.1", {"noise": 0.1}),
    ("noise 1.0", {"noise": 1.0}),
    ("10 arms", {"arms": 10}),
    ("uniform", {"logging": "uniform"}),
    ("ε-greedy 0.1", {"logging": "epsilon-greedy", "epsilon": 0.1}),
    ("ε-greedy 0.3", {"logging": "epsilon-greedy", "epsilon": 0.3}),
    ("softmax T=0.5", {"temperature": 0.5}),
    ("softmax T=2", {"temperature": 2.0}),
    ("300 rounds", {"n": 300}),
    ("3,000 rounds", {"n": 3000}),
    ("exact model", {"model": "exact"}),
    ("wrong model", {"model": "wrong"}),
    ("ridge model", {"model": "ridge"}),
    ("near policy", {"target": "near"}),
    ("uniform, wrong model", {"logging": "uniform", "model": "wrong"}),
    ("ε-greedy 0.1, wrong model", {"logging": "epsilon-greedy", "model": "wrong"}),
    ("ε-greedy 0.1, exact model", {"logging": "epsilon-greedy", "model": "exact"}),
    ("10 arms, uniform, ridge", {"arms": 10, "logging": "uniform", "model": "ridge"}),
    ("h1, 300 rounds, near", {"fn": "h1", "n": 300, "target": "near"}),
    ("noise 1.0, 300 rounds, near", {"noise": 1.0, "n": 300, "target": "near"}),
)
QUICK = ("base", "uniform, wrong model", "exact model", "ε-greedy 0.1", "h1", "near policy")
#: The variants compared on the tuning seeds (the first of each method: its defaults).
TUNING: dict[str, dict] = {
    "mse, z=2, reference ips": {"method": "mse"},
    "mse, z=1": {"method": "mse", "z": 1.0},
    "mse, z=3": {"method": "mse", "z": 3.0},
    "mse, z=0": {"method": "mse", "z": 0.0},
    "mse, reference dr": {"method": "mse", "reference": "dr"},
    "cv, train_fraction=0.5, reference ips": {"method": "cv"},
    "cv, train_fraction=0.3": {"method": "cv", "train_fraction": 0.3},
    "cv, train_fraction=0.7": {"method": "cv", "train_fraction": 0.7},
    "cv, one-standard-error rule": {"method": "cv", "one_standard_error": True},
    "cv, reference dr": {"method": "cv", "reference": "dr"},
}
TUNING_SEEDS = range(1000, 1010)


def environment(config: dict) -> db.Environment:
    return db.make_env(
        config["fn"], d=5, n_arms=config["arms"], noise="fixed", noise_std=config["noise"], seed=0
    )


def evaluation_policy(h: np.ndarray, scale: tuple[float, float], target: str) -> np.ndarray:
    """π(· | x) of every round from h standardised by the population's ``scale`` (mean, std):
    the softmax of 4·h (far) or of h (near)."""
    z = (h - scale[0]) / scale[1]
    return logging_distribution((4.0 if target == "far" else 1.0) * z, "softmax", 0.0, 1.0)


@functools.cache
def population_contexts(fn: str, arms: int) -> np.ndarray:
    """100,000 contexts ``[N, K, d]`` of the context distribution (their own seed)."""
    return simulate_log(
        environment({**BASE, "fn": fn, "arms": arms}), 100_000, seed=10**6
    ).log.contexts


def population(config: dict, seed: int) -> tuple[tuple[float, float], float]:
    """(the mean and spread of h, the evaluation policy's true value) over the context
    distribution, for the reward function the log of ``seed`` has (an environment draws its
    parameters, θ or h2's A, when reset with a seed)."""
    env = environment(config)
    env.reset(seed)
    h = env.expected_reward(population_contexts(config["fn"], config["arms"]))
    scale = (float(h.mean()), float(h.std()))
    return scale, true_value(evaluation_policy(h, scale, config["target"]), h)


def simulated(config: dict, seed: int) -> tuple:
    """(log, evaluation policy, q_hat (None: a cross-fitted ridge), truth) of one
    configuration."""
    sim = simulate_log(
        environment(config),
        config["n"],
        logging=config["logging"],
        epsilon=config["epsilon"],
        temperature=config["temperature"],
        seed=seed,
    )
    h = sim.expected_rewards
    scale, truth = population(config, seed)
    rng = np.random.default_rng(seed + 5000)
    q_hat = {
        "exact": h,
        "good": h + 0.2 * scale[1] * rng.standard_normal(h.shape),
        "wrong": h[:, rng.permutation(h.shape[1])],
        "ridge": None,
    }[config["model"]]
    return sim.log, evaluation_policy(h, scale, config["target"]), q_hat, truth


def run(config: dict, seeds: range, variants: dict[str, dict]) -> tuple[pd.DataFrame, dict]:
    """The errors of every candidate ``[seeds, candidates]`` and of each variant's choice."""
    errors, chosen = [], {name: [] for name in variants}
    for seed in seeds:
        log, target, q_hat, truth = simulated(config, seed)
        for name, options in variants.items():
            sel = select_estimator(
                log, target, q_hat=q_hat, reward_model="ridge", seed=seed, **options
            )
            chosen[name].append(sel.estimate - truth)
        errors.append(sel.table.set_index("estimator")["estimate"] - truth)
    return pd.DataFrame(errors), chosen


def rmse(errors) -> float:
    return float(np.sqrt(np.mean(np.square(errors))))


def tune(out: Output, configs: tuple) -> None:
    variants = dict(TUNING)
    ratios = {name: [] for name in variants}
    for name, changes in configs:
        errors, chosen = run({**BASE, **changes}, TUNING_SEEDS, variants)
        best = errors.pow(2).mean().pow(0.5).min()
        for variant, errs in chosen.items():
            ratios[variant].append(rmse(errs) / best)
        print(f"tuned {name}", file=sys.stderr, flush=True)
    out(
        f"Tuning ({len(TUNING_SEEDS)} logs per configuration, seeds {TUNING_SEEDS.start}.."
        f"{TUNING_SEEDS.stop - 1}, not the evaluation's): the chosen one's RMSE over the "
        "best candidate's"
    )
    out("")
    out("| variant | configurations within 1.5× | median ratio | worst ratio |")
    out("| --- | --- | --- | --- |")
    for variant, r in ratios.items():
        r = np.array(r)
        out(f"| {variant} | {(r <= 1.5).sum()} / {len(r)} | {np.median(r):.2f} | {r.max():.2f} |")
    out("")


def evaluate_selection(out: Output, configs: tuple, seeds: range) -> pd.DataFrame:
    variants = {m: dict(method=m) for m in ("mse", "cv", "slope")}
    rows = []
    for name, changes in configs:
        errors, chosen = run({**BASE, **changes}, seeds, variants)
        per = errors.pow(2).mean().pow(0.5)
        row = {"configuration": name, **{f"rmse_{k}": v for k, v in per.items()}}
        row["best"] = per.idxmin()
        for method, errs in chosen.items():
            row[f"rmse_selected_{method}"] = rmse(errs)
            row[f"ratio_{method}"] = rmse(errs) / per.min()
        rows.append(row)
        print(f"evaluated {name}", file=sys.stderr, flush=True)
    table = pd.DataFrame(rows)
    names = [c.removeprefix("rmse_") for c in table if c.startswith("rmse_") and "sel" not in c]
    out(
        f"Evaluation ({len(seeds)} logs per configuration, seeds {seeds.start}..{seeds.stop - 1})"
        ": RMSE × 1000 of every candidate, of the one chosen by the bounded-bias MSE (mse), by "
        "cross-validation (cv) and by SLOPE, and the chosen one's RMSE over the best candidate's"
    )
    out("")
    ratios = " | ".join(f"{m} / best" for m in variants)
    out(f"| configuration | {' | '.join(names)} | {' | '.join(variants)} | {ratios} |")
    out("| --- " * (len(names) + 1 + 2 * len(variants)) + "|")
    for row in rows:
        cells = [f"{1000 * row[f'rmse_{k}']:.1f}" for k in names]
        cells = [f"**{c}**" if k == row["best"] else c for c, k in zip(cells, names, strict=True)]
        cells += [f"{1000 * row[f'rmse_selected_{m}']:.1f}" for m in variants]
        cells += [f"{row[f'ratio_{m}']:.2f}" for m in variants]
        out(f"| {row['configuration']} | {' | '.join(cells)} |")
    out("")
    for method in variants:
        r = table[f"ratio_{method}"]
        out(
            f"- {method}: within 1.5× of the best candidate in {(r <= 1.5).sum()} of {len(r)} "
            f"configurations (median ratio {r.median():.2f}, worst {r.max():.2f} in "
            f"{table['configuration'][r.idxmax()]})."
        )
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="6 configurations, 5 logs each")
    parser.add_argument("--tune", action="store_true", help="also the tuning on other seeds")
    parser.add_argument("--seeds", type=int, default=20)
    args = parser.parse_args()
    configs = tuple(c for c in CONFIGS if not args.quick or c[0] in QUICK)
    seeds = range(5 if args.quick else args.seeds)
    out = Output("ope_selection.py" + (" --tune" if args.tune else ""))
    out(
        f"Estimator selection on {len(configs)} simulated configurations (base: "
        + ", ".join(f"{k}={v}" for k, v in BASE.items())
        + "; candidates: every registered estimator)"
    )
    out("")
    if args.tune:
        tune(out, configs)
    table = evaluate_selection(out, configs, seeds)
    if not args.quick:
        out.save(RESULTS / "ope_selection.md", f"{os.cpu_count()} CPU cores")
        write_atomic(RESULTS / "ope_selection.csv", table.to_csv(index=False))


if __name__ == "__main__":
    main()
