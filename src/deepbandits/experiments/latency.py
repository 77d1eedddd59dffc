"""Latency of arm selection and of network updates: the paper's Table latency and Fig. latency.

The paper times 100 rounds of an MNIST-shaped problem (K = 10 arms, contexts of d = 784 per
arm, m = 100 hidden units, the network updated every H = 10 rounds, so 10 updates) on a GPU.
Its text says n = 1000 steps per update; its code trains one epoch over the history, which for
t ≤ 100 is at most 2 minibatches of 64. :func:`latency_table` times both (``steps``), on the
CPU or on ``device="cuda"``, and puts the paper's figures beside ours.

Outputs of :func:`run_latency` (``deepbandits reproduce latency``)::

    out/latency.csv          one row per policy, steps and repeat (seconds per ``rounds`` rounds)
    out/latency.md           the table, mean over repeats, beside the paper's
    out/latency_steps<n>.png, .svg   Fig. latency for n steps per update: arm selection and
                             update, mean ± std over repeats
    out/latency.json         the settings and the machine
"""

from __future__ import annotations

import json
import platform
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from deepbandits._io import write_atomic
from deepbandits._threads import pinned_threads
from deepbandits._validation import check_int
from deepbandits._version import __version__
from deepbandits.encoding import BlockContexts, block_encode
from deepbandits.errors import InputValueError
from deepbandits.policies import make_policy
from deepbandits.specs import parse_spec

#: Columns of ``latency.csv``.
LATENCY_COLUMNS: dict[str, str] = {
    "policy": "policy specification",
    "device": "where the networks ran (cpu or cuda)",
    "steps": "minibatch steps per network update",
    "repeat": "repeat index (seed of the policy and of the contexts)",
    "select_s": "seconds of select() over the rounds",
    "update_s": "seconds of network training over the rounds (every train_every rounds)",
}


def mnist_shaped_rounds(
    n: int, seed: int = 0, n_arms: int = 10, dim: int = 784
) -> list[BlockContexts]:
    """``n`` rounds of block-encoded contexts: arm k holds a random unit vector of ``dim``
    values (an MNIST-sized image) in block k."""
    rng = np.random.default_rng(seed)
    rounds = []
    for _ in range(n):
        x = rng.random(dim)
        rounds.append(block_encode(x / np.linalg.norm(x), n_arms))
    return rounds


def measure_latency(
    spec: str,
    rounds: Sequence[Any],
    steps: int,
    *,
    train_every: int = 10,
    feature_dim: int = 64,
    device: str | None = None,
    seed: int = 0,
) -> tuple[float, float]:
    """Seconds of ``select`` and of network training over ``rounds`` for policy ``spec``.

    The network is updated every ``train_every`` rounds from the first (``train_start=0``, no
    warm-up schedule) with ``steps`` minibatch steps; neural-linear policies get
    ``feature_dim`` (the paper's d′ on real data) unless ``spec`` sets it. Rewards are
    Bernoulli(0.1), as for a 10-class problem played at random. The network is built by a first
    ``select`` outside the timed loop. Decisions run on the threads torch has (the experiment's,
    :func:`latency_table`'s ``threads``), not on one as a policy's do by default, unless
    ``spec`` sets ``threads``.
    """
    name, params = parse_spec(spec)
    accepted = make_policy(name).get_params()
    wanted: dict[str, Any] = {
        "seed": seed,
        "train_every": train_every,
        "train_start": 0,
        "warmup_every": 0,
        "train_steps": steps,
        "feature_dim": feature_dim,
        "reward_range": (0.0, 1.0),
        "device": device,
    }
    for key, value in wanted.items():
        if key in accepted and key not in params and value is not None:
            params[key] = value
    params.setdefault("threads", None)  # decisions on the experiment's threads, as trainings
    policy = make_policy(name, **params)
    rng = np.random.default_rng(seed + 1)
    policy.select(rounds[0])
    select = train = 0.0
    for X in rounds:
        start = time.perf_counter()
        arm = policy.select(X)
        select += time.perf_counter() - start
        train += policy.update(X, arm, float(rng.random() < 0.1)).train_seconds
    return select, train


def latency_table(
    policies: Sequence[str],
    *,
    rounds: int = 100,
    train_every: int = 10,
    steps: Sequence[int] = (2, 1000),
    feature_dim: int = 64,
    repeats: int = 3,
    device: str | None = None,
    threads: int | None = None,
    progress: bool = False,
) -> pd.DataFrame:
    """Time every policy for every ``steps`` value, ``repeats`` times (repeat r uses seed r for
    the policy and the contexts); one row per policy, steps and repeat
    (:data:`LATENCY_COLUMNS`). ``threads`` pins torch and BLAS (:func:`pinned_threads`).

    Torch's first calls are slow, so one untimed round of the first policy warms it up.
    """
    rounds = check_int(rounds, "rounds", minimum=1)
    repeats = check_int(repeats, "repeats", minimum=1)
    steps = [check_int(s, "steps", minimum=1) for s in steps]
    if not policies or not steps:
        raise InputValueError("latency_table needs at least one policy and one steps value")
    rows = []
    cases = [(p, s, r) for p in policies for s in steps for r in range(repeats)]
    with pinned_threads(threads):
        measure_latency(policies[0], mnist_shaped_rounds(2), 1, device=device)
        contexts = {r: mnist_shaped_rounds(rounds, seed=r) for r in range(repeats)}
        for spec, n, r in tqdm(cases, desc="latency", disable=not progress):
            select, update = measure_latency(
                spec,
                contexts[r],
                n,
                train_every=train_every,
                feature_dim=feature_dim,
                device=device,
                seed=r,
            )
            rows.append(
                {
                    "policy": spec,
                    "device": device or "cpu",
                    "steps": n,
                    "repeat": r,
                    "select_s": select,
                    "update_s": update,
                }
            )
    return pd.DataFrame(rows, columns=list(LATENCY_COLUMNS))


def latency_markdown(table: pd.DataFrame, paper: Mapping[str, Sequence[float]]) -> str:
    """Mean seconds over repeats per policy and steps, beside the paper's (select, update)
    figures where it prints them, with our speed-up (paper / ours)."""
    mean = table.groupby(["policy", "device", "steps"], sort=False)[["select_s", "update_s"]]
    lines = [
        "| policy | device | steps per update | arm selection (s) | paper (s) | speed-up | "
        "update (s) | paper (s) | speed-up |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for (spec, device, n), row in mean.mean().iterrows():
        ref = paper.get(spec) or paper.get(parse_spec(spec)[0])
        cells = [f"{row.select_s:.3f}", "-", "-", f"{row.update_s:.3f}", "-", "-"]
        if ref is not None:
            cells[1:3] = [f"{ref[0]:g}", f"{ref[0] / row.select_s:.0f}×"]
            cells[4:6] = [f"{ref[1]:g}", f"{ref[1] / row.update_s:.1f}×"]
        lines.append(f"| {spec} | {device} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run_latency(
    options: Mapping[str, Any],
    out: str | Path,
    *,
    device: str | None = None,
    progress: bool = True,
) -> pd.DataFrame:
    """The latency experiment of a config's ``[latency]`` table (``policies``, ``rounds``,
    ``train_every``, ``steps``, ``feature_dim``, ``repeats``, ``paper``) into ``out`` (see the
    module documentation); returns the table. One thread per run, as every run of the library
    (``threads=1``), unless ``options["threads"]`` says otherwise."""
    from deepbandits.plotting import latency_bars, save_figure  # matplotlib: only to draw

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paper = dict(options.get("paper", {}))
    table = latency_table(
        list(options["policies"]),
        rounds=options.get("rounds", 100),
        train_every=options.get("train_every", 10),
        steps=options.get("steps", (2, 1000)),
        feature_dim=options.get("feature_dim", 64),
        repeats=options.get("repeats", 3),
        device=device,
        threads=options.get("threads", 1),
        progress=progress,
    )
    write_atomic(out / "latency.csv", table.to_csv(index=False))
    rounds = options.get("rounds", 100)
    text = (
        f"# Latency: seconds per {rounds} rounds\n\n"
        f"MNIST-shaped contexts (K = 10 arms, d = 784 per arm, block-encoded), network updated "
        f"every {options.get('train_every', 10)} rounds; mean over "
        f"{table['repeat'].nunique()} repeats. The paper's figures: one GPU (RTX A5000).\n\n"
        + latency_markdown(table, paper)
        + "\n"
    )
    write_atomic(out / "latency.md", text)
    stats = table.groupby(["policy", "steps"], sort=False)[["select_s", "update_s"]]
    for n in table["steps"].unique():
        part = stats.agg(["mean", "std"]).xs(n, level="steps").fillna(0.0)
        bars = pd.DataFrame(
            {
                "policy": part.index,
                "select_mean": part[("select_s", "mean")].to_numpy(),
                "select_std": part[("select_s", "std")].to_numpy(),
                "update_mean": part[("update_s", "mean")].to_numpy(),
                "update_std": part[("update_s", "std")].to_numpy(),
            }
        )
        save_figure(
            latency_bars(bars, title=f"{device or 'cpu'}, {n} steps per update"),
            out / f"latency_steps{n}",
        )
    meta = {
        "library": "deepbandits",
        "version": __version__,
        "options": dict(options),
        "device": device or "cpu",
        "machine": platform.machine(),
        "processor": platform.processor(),
        "torch": torch.__version__,
        "columns": LATENCY_COLUMNS,
    }
    write_atomic(out / "latency.json", json.dumps(meta, indent=2, default=str))
    return table
