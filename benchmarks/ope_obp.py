"""deepbandits' off-policy estimators against Open Bandit Pipeline 0.5.7 (not a test):
``make obp && .venv/bin/python benchmarks/ope_obp.py [--quick]``.

obp runs in ``.venv-obp`` (``make obp``), a venv of its own, through
``benchmarks/obp/run_obp.py``: this script writes that side's inputs to an ``.npz``, runs it
there and reads its results back as JSON. Two parts:

**Same inputs.** Seeded arrays (n = 10⁵ rounds, K = 10 arms, 5-dimensional Gaussian contexts):
the logging and evaluation policies are softmaxes of linear scores of the context, each arm has
a 2-dimensional categorical embedding (6 distinct embeddings for the 10 arms), the mean reward
depends on the arm only through its embedding, q̂ is a biased, noisy model of it (0.6 · mean +
0.2 + N(0, 0.05²), clipped to [0, 1]: SLOPE then has a bias to trade, and chooses inside its
grids) and the rewards are Bernoulli draws. Both libraries get the same arrays (obp's with a
position axis of length 1, its MIPS the one-hot ``p_e_a`` of the embeddings and π₀ of every arm,
its balanced IPW the importance weights that deepbandits' ``balancing_weights`` estimated with
logistic regression), and both the same settings: Switch-DR τ = 2, DRos λ = 5, sub-Gaussian λ =
0.1, and for the SLOPE-tuned ones deepbandits' default grids (``tuning.DEFAULT_GRID`` for τ and
DRos's λ, ``tuning.UNIT_GRID`` for the sub-Gaussian λ) with δ = 0.05 (obp's default is 0.1).
Measured: each estimate, their absolute difference (the check: at most 1e-10, else this script
exits 1, unless obp defines that estimator otherwise and its definition, recomputed here with
numpy (:data:`DEFINITIONS`), gives obp's estimate within 1e-10: then the row says so), the
hyperparameter each tuned estimator chose, and the wall time of one estimate (deepbandits:
``evaluate`` with ``n_bootstrap=0`` and that estimator alone, its balanced IPW fitting its
weights; obp: ``estimate_policy_value``).

**Each library's defaults on the Open Bandit Dataset** (all three campaigns, random log, BTS as
the evaluation policy, truth: BTS's click rate on its own log). obp: its example's protocol
(``run_obp.py obd``: BTS's action distribution by Monte Carlo from the ZOZOTOWN prior, its
``RegressionModel`` over logistic regression, its estimators, relative errors over 30
bootstrap samples of the log; intervals: its bootstrap on the whole log). deepbandits:
:func:`deepbandits.ope.obd.ground_truth` (BTS's policy from the BTS log's propensities, its
cross-fitted reward model, every estimator of ``estimators="all"``, 30 bootstrap samples,
intervals from 1,000 Poisson resamples). Measured: relative error |V̂ − V| / V (mean ± sample
std over the samples), whether the whole log's 95 % interval holds the truth, what SLOPE chose,
and the wall time of each library's whole campaign.

``--quick``: n = 10⁴, 5 samples per campaign, 10⁵ Monte Carlo draws of BTS and 200 resamples;
prints only. A full run (both parts) writes ``benchmarks/results/ope_obp.md`` and the CSVs
``ope_obp_same_inputs.csv`` and ``ope_obp_obd.csv`` beside it; the docs page
``docs/results/ope-vs-obp.md`` includes the Markdown.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from deepbandits._io import write_atomic

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
OUT_MD = RESULTS / "ope_obp.md"
OUT_SAME = RESULTS / "ope_obp_same_inputs.csv"
OUT_OBD = RESULTS / "ope_obp_obd.csv"
OBP_PYTHON = ROOT / ".venv-obp" / "bin" / "python"
OBP_SCRIPT = ROOT / "benchmarks" / "obp" / "run_obp.py"
TOLERANCE = 1e-10
TAU, LAM, SG_LAM, DELTA = 2.0, 5.0, 0.1, 0.05
N_ACTIONS, DIM = 10, 5
CAMPAIGNS = ("all", "men", "women")
#: The classifier of balanced IPW's weights here: logistic regression (the default gradient
#: boosting takes minutes at n = 10⁵; which classifier made the weights does not matter to the
#: check, as obp is given the same weights)
BIPW_MODEL = "logistic"


@dataclass(frozen=True)
class Case:
    """One estimator of the same-inputs part: deepbandits' specification (``ours``) and obp's
    class with its keyword arguments, the set of obp inputs it reads (``"classic"``, ``"mips"``
    or ``"bipw"``) and whether SLOPE tunes it."""

    key: str
    title: str
    ours: str
    obp_class: str
    obp_kwargs: dict[str, Any] = field(default_factory=dict)
    inputs: str = "classic"
    tuned: bool = False


def cases(available: Collection[str]) -> list[Case]:
    """Every estimator both libraries have, with the same settings; those of ``mips``,
    ``snmips`` and ``bipw`` only where ``available`` (deepbandits' ``ESTIMATORS``) has them."""
    from deepbandits.ope.tuning import DEFAULT_GRID, UNIT_GRID

    grid, unit = list(DEFAULT_GRID), list(UNIT_GRID)
    slope = {"tuning_method": "slope", "delta": DELTA}
    out = [
        Case("ips", "IPS", "ips", "InverseProbabilityWeighting"),
        Case("snips", "SNIPS", "snips", "SelfNormalizedInverseProbabilityWeighting"),
        Case("dm", "DM", "dm", "DirectMethod"),
        Case("dr", "DR", "dr", "DoublyRobust"),
        Case("sndr", "SNDR", "sndr", "SelfNormalizedDoublyRobust"),
        Case(
            "switch-dr",
            f"Switch-DR, τ = {TAU:g}",
            f"switch-dr:tau={TAU}",
            "SwitchDoublyRobust",
            {"lambda_": TAU},
        ),
        Case(
            "dr-os",
            f"DRos, λ = {LAM:g}",
            f"dr-os:lam={LAM}",
            "DoublyRobustWithShrinkage",
            {"lambda_": LAM},
        ),
        Case(
            "sg-ips",
            f"SG-IPS, λ = {SG_LAM:g}",
            f"sg-ips:lam={SG_LAM}",
            "SubGaussianInverseProbabilityWeighting",
            {"lambda_": SG_LAM},
        ),
        Case(
            "sg-dr",
            f"SG-DR, λ = {SG_LAM:g}",
            f"sg-dr:lam={SG_LAM}",
            "SubGaussianDoublyRobust",
            {"lambda_": SG_LAM},
        ),
        Case(
            "switch-dr-slope",
            "Switch-DR, τ by SLOPE",
            f"switch-dr-slope:delta={DELTA}",
            "SwitchDoublyRobustTuning",
            {"lambdas": grid, **slope},
            tuned=True,
        ),
        Case(
            "dr-os-slope",
            "DRos, λ by SLOPE",
            f"dr-os-slope:delta={DELTA}",
            "DoublyRobustWithShrinkageTuning",
            {"lambdas": grid, **slope},
            tuned=True,
        ),
        Case(
            "sg-ips-slope",
            "SG-IPS, λ by SLOPE",
            f"sg-ips-slope:delta={DELTA}",
            "SubGaussianInverseProbabilityWeightingTuning",
            {"lambdas": unit, **slope},
            tuned=True,
        ),
        Case(
            "sg-dr-slope",
            "SG-DR, λ by SLOPE",
            f"sg-dr-slope:delta={DELTA}",
            "SubGaussianDoublyRobustTuning",
            {"lambdas": unit, **slope},
            tuned=True,
        ),
    ]
    # the estimators of actions with embeddings and of logs without propensities
    if "mips" in available:
        out.append(
            Case(
                "mips",
                "MIPS",
                "mips",
                "MarginalizedInverseProbabilityWeighting",
                {"n_actions": N_ACTIONS},
                inputs="mips",
            )
        )
    if "snmips" in available:
        out.append(
            Case(
                "snmips",
                "SNMIPS",
                "snmips",
                "SelfNormalizedMarginalizedInverseProbabilityWeighting",
                {"n_actions": N_ACTIONS},
                inputs="mips",
            )
        )
    if "bipw" in available:
        out.append(
            Case(
                "bipw",
                "Balanced IPW",
                f"bipw:model={BIPW_MODEL}",
                "BalancedInverseProbabilityWeighting",
                inputs="bipw",
            )
        )
    return out


def softmax(z: np.ndarray) -> np.ndarray:
    z = np.exp(z - z.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def embeddings(n_actions: int = N_ACTIONS) -> np.ndarray:
    """``[K, 2]`` integer categories of each arm: (a mod 3, ⌊a / 3⌋ mod 2), 6 distinct pairs."""
    a = np.arange(n_actions)
    return np.stack([a % 3, (a // 3) % 2], axis=1)


def one_hot_embeddings(embed: np.ndarray) -> np.ndarray:
    """obp's ``p_e_a`` ``[K, categories, dimensions]`` of deterministic embeddings:
    p(e_d = c | a) = 1{embed[a, d] = c}."""
    K, D = embed.shape
    p = np.zeros((K, int(embed.max()) + 1, D))
    p[np.arange(K)[:, None], embed, np.arange(D)[None, :]] = 1.0
    return p


def inputs(n: int, seed: int, n_actions: int = N_ACTIONS, dim: int = DIM) -> dict[str, np.ndarray]:
    """The seeded arrays of the same-inputs part (module notes)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, dim))
    logging = softmax(x @ rng.standard_normal((dim, n_actions)))
    target = softmax(1.5 * x @ rng.standard_normal((dim, n_actions)))
    embed = embeddings(n_actions)
    group = embed[:, 0] + 3 * embed[:, 1]
    theta = rng.standard_normal((dim, int(group.max()) + 1))
    mean = (1 / (1 + np.exp(-(x @ theta) + 1.0)))[:, group]  # through the embedding only
    u = rng.random(n)[:, None]
    action = np.minimum((logging.cumsum(axis=1) < u).sum(axis=1), n_actions - 1)
    q_hat = np.clip(0.6 * mean + 0.2 + 0.05 * rng.standard_normal((n, n_actions)), 0.0, 1.0)
    rows = np.arange(n)
    reward = (rng.random(n) < mean[rows, action]).astype(np.float64)
    return {
        "context": x,
        "action": action,
        "reward": reward,
        "pscore": logging[rows, action],
        "logging_dist": logging,
        "action_dist": target,
        "q_hat": q_hat,
        "embed": embed,
        "action_embed": embed[action],
        "p_e_a": one_hot_embeddings(embed),
    }


def make_logs(data: Mapping[str, np.ndarray]) -> tuple[Any, Any]:
    """deepbandits' logs of the arrays: with the arms' embeddings as their features (MIPS reads
    them), and without (balanced IPW then fits a classifier per arm, on the context)."""
    from deepbandits.ope import make_log

    common = dict(n_actions=data["q_hat"].shape[1], logging_dist=data["logging_dist"])
    args = (data["context"], data["action"], data["reward"], data["pscore"])
    embedded = make_log(*args, action_features=data["embed"].astype(np.float64), **common)
    return embedded, make_log(*args, **common)


SLOPE_CHOICE = re.compile(r"SLOPE chose \w+=([^)\s]+)\)")


def chosen_of(name: str) -> float | None:
    """The value SLOPE chose, read from the ``name`` column of deepbandits' table
    (``"... (SLOPE chose tau=10)"``); None for an estimator that chose nothing."""
    match = SLOPE_CHOICE.search(name)
    return float(match.group(1)) if match else None


def ours_same(
    data: Mapping[str, np.ndarray], chosen_cases: Sequence[Case]
) -> dict[str, dict[str, Any]]:
    """deepbandits' estimate, time and choice of every case, each alone."""
    from deepbandits.ope import evaluate

    embedded, plain = make_logs(data)
    out = {}
    for case in chosen_cases:
        log = plain if case.inputs == "bipw" else embedded
        start = time.perf_counter()
        result = evaluate(
            log,
            data["action_dist"],
            estimators=[case.ours],
            q_hat=data["q_hat"],
            n_bootstrap=0,
            warn=False,
        )
        seconds = time.perf_counter() - start
        row = result.table.iloc[0]
        out[case.key] = {
            "estimate": float(row["estimate"]),
            "seconds": seconds,
            "chosen": chosen_of(str(row["name"])),
        }
        print(f"deepbandits {case.key}: {row['estimate']!r} ({seconds:.2f} s)", file=sys.stderr)
    return out


def obp_payload(
    data: Mapping[str, np.ndarray], chosen_cases: Sequence[Case], weights: np.ndarray | None
) -> bytes:
    """The ``.npz`` that ``run_obp.py same-inputs`` reads: the arrays and the cases (JSON)."""
    spec = [
        {"key": c.key, "class": c.obp_class, "kwargs": c.obp_kwargs, "inputs": c.inputs}
        for c in chosen_cases
    ]
    arrays = {k: data[k] for k in ("action", "reward", "pscore", "action_dist", "q_hat")}
    if any(c.inputs == "mips" for c in chosen_cases):
        arrays |= {k: data[k] for k in ("action_embed", "logging_dist", "p_e_a")}
    if weights is not None:
        arrays["importance_weights"] = weights
    buffer = io.BytesIO()
    np.savez(buffer, cases=np.array(json.dumps(spec)), **arrays)
    return buffer.getvalue()


#: Where obp 0.5.7 defines an estimator otherwise than deepbandits: the difference, in words.
#: :func:`obp_definitions` recomputes obp's definition with numpy; a difference counts as
#: explained when that recomputation is within the tolerance of obp's estimate.
DEFINITIONS = {
    "snmips": "obp's SelfNormalizedMarginalizedInverseProbabilityWeighting, given `p_e_a`, takes "
    "p(e | x, π) as the product of the embedding dimensions' own marginals, Π_d Σ_a π(a | x) "
    "p(e_d | a), where its MarginalizedInverseProbabilityWeighting (and deepbandits' MIPS and "
    "SNMIPS) take the marginal of the whole embedding, Σ_a π(a | x) Π_d p(e_d | a); the two "
    "agree for one-dimensional embeddings only (an error of obp's SNMIPW: its weights are not "
    "its MIPW's)",
}


def obp_definitions(data: Mapping[str, np.ndarray]) -> dict[str, float]:
    """obp 0.5.7's estimates of the estimators of :data:`DEFINITIONS`, recomputed with numpy by
    obp's own definitions on the same arrays (its order of operations)."""
    reward, rows = data["reward"], np.arange(len(data["reward"]))
    out = {}
    if "p_e_a" in data:
        p, embed = data["p_e_a"], data["action_embed"]
        logged, target = np.ones(len(rows)), np.ones(len(rows))
        for d in range(p.shape[-1]):  # obp's loop: one embedding dimension at a time
            logged *= (data["logging_dist"] @ p[:, :, d])[rows, embed[:, d]]
            target *= (data["action_dist"] @ p[:, :, d])[rows, embed[:, d]]
        w = target / logged
        out["snmips"] = float((reward * w / w.mean()).mean())
    return out


def run_obp(args: Sequence[str], python: Path = OBP_PYTHON) -> dict[str, Any]:
    """Run ``run_obp.py`` with ``args`` in obp's venv; its JSON output. The environment loses
    PYTHONPATH so that nothing of this venv leaks in."""
    if not python.exists():
        raise SystemExit(f"{python} not found: run `make obp` first (it builds .venv-obp)")
    with tempfile.TemporaryDirectory(prefix="ope-obp-") as tmp:
        out = Path(tmp) / "out.json"
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env["PYTHONNOUSERSITE"] = "1"
        subprocess.run(
            [str(python), str(OBP_SCRIPT), *args, "--out", str(out)], check=True, env=env
        )
        return json.loads(out.read_text(encoding="utf-8"))


def compare(
    chosen_cases: Sequence[Case],
    ours: Mapping[str, Mapping[str, Any]],
    theirs: Mapping[str, Mapping[str, Any]],
    tolerance: float = TOLERANCE,
    definitions: Mapping[str, float] | None = None,
) -> pd.DataFrame:
    """One row per case: both estimates, ``abs_diff`` and ``within`` (at most ``tolerance``
    apart; a NaN on either side is not), both choices and both times; ``explained``: a
    difference that obp's own definition (``definitions``, :func:`obp_definitions`) reproduces
    within ``tolerance``."""
    rows = []
    definitions = definitions or {}
    for case in chosen_cases:
        a, b = ours[case.key], theirs[case.key]
        diff = abs(a["estimate"] - b["estimate"])
        theirs_again = definitions.get(case.key, float("nan"))
        rows.append(
            {
                "key": case.key,
                "estimator": case.title,
                "kind": "tuned (SLOPE)" if case.tuned else "fixed",
                "deepbandits": a["estimate"],
                "obp": b["estimate"],
                "abs_diff": diff,
                "within": bool(diff <= tolerance),  # NaN compares False
                "obp_definition": theirs_again,
                "explained": bool(
                    diff > tolerance and abs(theirs_again - b["estimate"]) <= tolerance
                ),
                "deepbandits_chosen": a.get("chosen"),
                "obp_chosen": b.get("chosen"),
                "deepbandits_s": a["seconds"],
                "obp_s": b["seconds"],
            }
        )
    return pd.DataFrame(rows)


def failures(table: pd.DataFrame, tolerance: float = TOLERANCE) -> list[str]:
    """The cases whose estimates differ by more than ``tolerance`` (or are NaN) where obp's
    definition does not explain it (``explained``), in words."""
    return [
        f"{r.key}: deepbandits {r.deepbandits!r}, obp {r.obp!r}, |difference| {r.abs_diff:.3g}"
        f" > {tolerance:g}"
        for r in table.itertuples(index=False)
        if not (r.within or r.explained)
    ]


def explained(table: pd.DataFrame) -> list[str]:
    """The differences that obp's definitions explain, in words (Markdown list items)."""
    return [
        f"- {r.estimator}: {DEFINITIONS[r.key]}. By obp's definition, recomputed: "
        f"{r.obp_definition:.12f}, {abs(r.obp_definition - r.obp):.1e} from obp's estimate."
        for r in table.itertuples(index=False)
        if r.explained
    ]


def shown(value: Any) -> str:
    """A hyperparameter as a cell: ``10``, ``inf``, ``0.003``; ``–`` for none."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{float(value):g}"


def same_inputs_table(table: pd.DataFrame) -> str:
    """The same-inputs part as a Markdown table."""
    lines = [
        "| estimator | kind | deepbandits | obp 0.5.7 | abs. difference | chosen (deepbandits / "
        "obp) | deepbandits s | obp s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in table.itertuples(index=False):
        mark = " (another definition)" if r.explained else " (ABOVE)"
        choice = (
            f"{shown(r.deepbandits_chosen)} / {shown(r.obp_chosen)}"
            if r.kind.startswith("tuned")
            else "–"
        )
        lines.append(
            f"| {r.estimator} | {r.kind} | {r.deepbandits:.12f} | {r.obp:.12f} | "
            f"{r.abs_diff:.1e}{'' if r.within else mark} | {choice} | "
            f"{r.deepbandits_s:.3f} | {r.obp_s:.3f} |"
        )
    return "\n".join(lines)


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample std (ddof 1, as obp's ``describe()``) of ``values``; NaN std for one."""
    arr = np.asarray(values, dtype=float)
    return float(arr.mean()), float(arr.std(ddof=1)) if len(arr) > 1 else float("nan")


def runs_choice(values: Sequence[Any]) -> str:
    """What a tuned estimator chose over the runs: ``10 (30 of 30)`` or ``10 ×28, 50 ×2``."""
    if not values:
        return "–"
    counts = Counter(shown(v) for v in values)
    if len(counts) == 1:
        value, count = next(iter(counts.items()))
        return f"{value} ({count} of {len(values)})"
    return ", ".join(f"{v} ×{c}" for v, c in counts.most_common())


#: Which estimators are SLOPE-tuned, by deepbandits' short name
TUNED = {"switch-dr-slope", "dr-os-slope", "sg-ips-slope", "sg-dr-slope"}


def kind_of(key: str) -> str:
    """``tuned (SLOPE)`` or ``fixed`` with the fixed setting of Switch-DR and DRos."""
    if key in TUNED:
        return "tuned (SLOPE)"
    return {"switch-dr": "fixed, τ = 100", "dr-os": "fixed, λ = 100"}.get(key, "fixed")


def obd_rows(ours: pd.DataFrame, theirs: Mapping[str, Any]) -> pd.DataFrame:
    """One campaign: deepbandits' ``ground_truth`` table beside obp's rows (``run_obp.py obd``
    output for that campaign), one row per estimator of either, deepbandits' order first."""
    from deepbandits.ope.obd import OBP_PUBLISHED

    obp_rows = {r["key"]: r for r in theirs["rows"]}
    truth = float(theirs["truth"])
    keys = list(ours["estimator"]) + [k for k in obp_rows if k not in set(ours["estimator"])]
    campaign = theirs["campaign"]
    rows = []
    for key in keys:
        row: dict[str, Any] = {"campaign": campaign, "truth": truth, "key": key}
        row["kind"] = kind_of(key)
        mine = ours[ours["estimator"] == key]
        if len(mine):
            m = mine.iloc[0]
            row |= {
                "db_estimate": m["estimate"],
                "db_lower": m["lower"],
                "db_upper": m["upper"],
                "db_covered": bool(m["covered"]),
                "db_rel_error_mean": m["rel_error_mean"],
                "db_rel_error_std": m["rel_error_std"],
                "db_chosen": chosen_of(str(m["name"])),
            }
        if key in obp_rows:
            o = obp_rows[key]
            mean, std = mean_std(o["rel_errors"])
            row |= {
                "obp_estimate": o["estimate"],
                "obp_lower": o["lower"],
                "obp_upper": o["upper"],
                "obp_covered": bool(o["lower"] <= truth <= o["upper"]),
                "obp_rel_error_mean": mean,
                "obp_rel_error_std": std,
                "obp_runs": len(o["rel_errors"]),
                "obp_chosen": o["chosen"],
                "obp_chosen_runs": runs_choice(o["chosen_runs"]),
                "obp_origin": o["origin"],
                "obp_grid": ", ".join(shown(v) for v in o["kwargs"].get("lambdas", [])),
            }
        published = OBP_PUBLISHED.get(key) if campaign == "all" else None
        row["published"] = f"{published[0]:.3f} ± {published[1]:.3f}" if published else ""
        rows.append(row)
    return pd.DataFrame(rows)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _cells(row: Mapping[str, Any], side: str, runs: int) -> list[str]:
    """Relative error (mean ± std), covers and chosen of one side (``db`` or ``obp``) of a
    row; dashes where that library has no such estimator."""
    mean, std = row.get(f"{side}_rel_error_mean"), row.get(f"{side}_rel_error_std")
    if side == "db" and _missing(row.get("db_estimate")):
        return ["–", "–", "–"]
    if side == "obp" and "obp_estimate" not in row:
        return ["–", "–", "–"]
    error = f"{mean:.3f}" if _missing(std) else f"{mean:.3f} ± {std:.3f}"
    if side == "obp" and row.get("obp_runs", runs) < runs:
        error += f" ({row['obp_runs']} run{'' if row['obp_runs'] == 1 else 's'})"
    covers = "yes" if row.get(f"{side}_covered") else "no"
    choice = "–"
    if row["kind"].startswith("tuned"):
        choice = shown(row.get(f"{side}_chosen"))
        if side == "obp":
            choice += f"; {row.get('obp_chosen_runs', '–')}"
    return [error, covers, choice]


def obd_table(rows: pd.DataFrame, runs: int) -> str:
    """The OBD part as a Markdown table (every campaign; a row marked * is an estimator obp's
    example does not run)."""
    lines = [
        f"| campaign (truth) | estimator | kind | deepbandits: rel. error ({runs} runs) | covers "
        f"| SLOPE chose | obp 0.5.7: rel. error ({runs} runs) | covers | SLOPE chose (log; runs) "
        "| obp's published (all) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    last = None
    for row in rows.to_dict("records"):
        head = f"{row['campaign']}: {row['truth']:.4f}" if row["campaign"] != last else ""
        last = row["campaign"]
        origin = row.get("obp_origin")
        name = row["key"] + (" *" if origin == "added" else "")
        cells = [head, name, row["kind"], *_cells(row, "db", runs), *_cells(row, "obp", runs)]
        published = row.get("published")
        cells.append("" if _missing(published) else str(published))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def data_dir(given: str | None) -> Path:
    """The folder holding ``obd/``: ``--data-dir``, else ``$DEEPBANDITS_DATA``, else the
    shared data folder beside the repository (``../shared/data``) if it exists, else
    deepbandits' default data directory."""
    from deepbandits.datasets.location import ENV_VAR, data_home

    if given:
        return Path(given).expanduser()
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR]).expanduser()
    shared = ROOT.parent / "shared" / "data"
    return shared if shared.is_dir() else data_home()


def same_inputs_part(n: int, seed: int) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Both libraries on the same arrays: the comparison table and obp's versions."""
    from deepbandits.ope import ESTIMATORS

    data = inputs(n, seed)
    chosen_cases = cases(ESTIMATORS)
    weights = None
    if any(c.inputs == "bipw" for c in chosen_cases):
        from deepbandits.ope.propensity import balancing_weights

        _, plain = make_logs(data)
        weights = balancing_weights(plain, data["action_dist"], BIPW_MODEL)  # BalancedIPS's
    ours = ours_same(data, chosen_cases)
    definitions = obp_definitions(data)
    with tempfile.TemporaryDirectory(prefix="ope-obp-") as tmp:
        path = write_atomic(Path(tmp) / "inputs.npz", obp_payload(data, chosen_cases, weights))
        theirs = run_obp(["same-inputs", "--inputs", str(path)])
    return compare(chosen_cases, ours, theirs["rows"], definitions=definitions), theirs["versions"]


def obd_part(
    folder: Path, campaigns: Sequence[str], runs: int, n_sim: int, n_bootstrap: int
) -> tuple[pd.DataFrame, dict[str, float], dict[str, Any]]:
    """Each library's protocol on OBD: the rows of every campaign, deepbandits' seconds per
    campaign, and obp's output (its seconds and versions)."""
    from deepbandits.ope.obd import ground_truth

    theirs = run_obp(
        [
            "obd",
            "--data-dir",
            str(folder),
            "--campaigns",
            ",".join(campaigns),
            "--runs",
            str(runs),
            "--n-sim",
            str(n_sim),
            "--n-bootstrap",
            str(n_bootstrap),
        ]
    )
    frames, seconds = [], {}
    for obp_campaign in theirs["campaigns"]:
        campaign = obp_campaign["campaign"]
        start = time.perf_counter()
        ours = ground_truth(campaign, data_dir=folder, n_bootstrap=n_bootstrap, n_runs=runs, seed=0)
        seconds[campaign] = time.perf_counter() - start
        print(f"deepbandits {campaign}: {seconds[campaign]:.0f} s", file=sys.stderr)
        frames.append(obd_rows(ours.table, obp_campaign))
    return pd.concat(frames, ignore_index=True), seconds, theirs


def render(
    command: str,
    n: int,
    same: pd.DataFrame,
    obp_versions: Mapping[str, str],
    obd: pd.DataFrame | None = None,
    ours_seconds: Mapping[str, float] | None = None,
    obp_obd: Mapping[str, Any] | None = None,
    runs: int = 30,
    n_sim: int = 1_000_000,
    n_bootstrap: int = 1000,
) -> str:
    """The Markdown of ``benchmarks/results/ope_obp.md``."""
    versions = ", ".join(f"{k} {v}" for k, v in obp_versions.items())
    same_def = same[~same["explained"]]
    largest = float(same_def["abs_diff"].max()) if len(same_def) else float("nan")
    tuned = same[same["kind"].str.startswith("tuned")]
    agree = int(
        sum(
            shown(a) == shown(b)
            for a, b in zip(tuned["deepbandits_chosen"], tuned["obp_chosen"], strict=True)
        )
    )
    lines = [
        "# Off-policy estimates: deepbandits against Open Bandit Pipeline 0.5.7",
        "",
        f"`{command}` on {platform.processor() or platform.machine()}, {os.cpu_count()} cores. "
        f"deepbandits side: Python {platform.python_version()}, numpy {np.__version__}, pandas "
        f"{pd.__version__}. obp side (`.venv-obp`, `make obp`): {versions}.",
        "",
        f"## Same inputs (n = {n:,} rounds, K = {N_ACTIONS} arms)",
        "",
        "Both libraries get the same seeded arrays and settings (`benchmarks/ope_obp.py` says "
        f"how they are made): Switch-DR τ = {TAU:g}, DRos λ = {LAM:g}, sub-Gaussian λ = "
        f"{SG_LAM:g}; the SLOPE rows choose from deepbandits' default grids, given to obp as "
        f"`lambdas`, with δ = {DELTA:g} on both sides (obp's default δ is 0.1). MIPS: "
        "deterministic embeddings (obp's one-hot `p_e_a`); balanced IPW: obp is given the "
        "weights deepbandits estimated (its time includes that fit, obp's does not). Times: one "
        "estimate, in seconds.",
        "",
        same_inputs_table(same),
        "",
        f"Largest difference where both libraries define the estimator alike: {largest:.1e} "
        f"({'within' if largest <= TOLERANCE else 'ABOVE'} {TOLERANCE:g}); the tuned "
        f"estimators chose the same value in {agree} of {len(tuned)}.",
    ]
    notes = explained(same)
    if notes:
        lines += ["", "Where obp 0.5.7 defines the estimator otherwise:", "", *notes]
    if obd is not None and obp_obd is not None and ours_seconds is not None:
        times = "; ".join(
            f"{c['campaign']}: deepbandits {ours_seconds[c['campaign']]:.0f} s, obp "
            f"{c['seconds']['total']:.0f} s (BTS's distribution {c['seconds']['policy']:.0f} s, "
            f"the runs {c['seconds']['runs']:.0f} s, the whole log {c['seconds']['full_log']:.0f}"
            " s)"
            for c in obp_obd["campaigns"]
        )
        failed = [
            f"{c['campaign']}: sample {f['run']} ({f['error']})"
            for c in obp_obd["campaigns"]
            for f in c.get("failed_runs", [])
        ]
        failed_text = (
            " obp could not run its example on some bootstrap samples (obp's `RegressionModel` "
            "fits one logistic regression per position and fold, which fails on a fold without "
            "a click at some position): " + "; ".join(failed) + ". Its row then averages the "
            "other samples and says how many."
            if failed
            else ""
        )
        lines += [
            "",
            "## Each library's defaults on the Open Bandit Dataset",
            "",
            f"Random log of each campaign, BTS as the evaluation policy, the truth BTS's click "
            f"rate on its own log; {runs} bootstrap samples of the log per campaign for the "
            f"relative errors (mean ± sample std), and the 95 % interval of the whole log "
            f"({n_bootstrap:,} resamples) for coverage. obp 0.5.7 runs its example's protocol "
            f"(BTS's distribution from {n_sim:,} Monte Carlo draws of the ZOZOTOWN prior, "
            "`RegressionModel` over logistic regression with 3-fold cross-fitting, SLOPE with "
            "δ = 0.1 over the example's grid); deepbandits its `ground_truth` (BTS's policy from "
            "the BTS log's propensities, its cross-fitted reward model, SLOPE with δ = 0.05 over "
            "its default grids). Rows marked * are estimators obp's example does not run, added "
            "with deepbandits' defaults: fixed τ = λ = 100, and the sub-Gaussian λ from "
            "deepbandits' grid without λ = 1 (there obp's weight w / (1 − λ + λw) is 0/0 on "
            "rounds whose w is 0, so its SLOPE returns NaN). 'SLOPE chose' on obp's side: on "
            "the whole log; then over the runs (each run tunes anew).",
            "",
            obd_table(obd, runs),
            "",
            f"Wall time per campaign: {times}.{failed_text}",
        ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small sizes; prints only")
    parser.add_argument("--data-dir", default=None, help="folder holding obd/ (module notes)")
    parser.add_argument("--part", choices=("both", "same", "obd"), default="both")
    parser.add_argument("--runs", type=int, default=None, help="bootstrap samples of OBD")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    n, runs, n_sim, n_bootstrap = (10**4, 5, 10**5, 200) if args.quick else (10**5, 30, 10**6, 1000)
    runs = args.runs if args.runs is not None else runs
    command = " ".join(["python", os.path.relpath(__file__, ROOT), *(argv or sys.argv[1:])])
    same, versions = same_inputs_part(n, args.seed) if args.part != "obd" else (None, {})
    obd = ours_seconds = obp_obd = None
    if args.part != "same":
        obd, ours_seconds, obp_obd = obd_part(
            data_dir(args.data_dir), CAMPAIGNS, runs, n_sim, n_bootstrap
        )
        versions = versions or obp_obd["versions"]
        if same is None:
            print(obd_table(obd, runs))
            return 0
    text = render(command, n, same, versions, obd, ours_seconds, obp_obd, runs, n_sim, n_bootstrap)
    print(text)
    bad = failures(same)
    for line in bad:
        print("DIFFERENCE:", line, file=sys.stderr)
    if not args.quick and args.part == "both":
        write_atomic(OUT_MD, text)
        write_atomic(OUT_SAME, same.to_csv(index=False))
        if obd is not None:
            write_atomic(OUT_OBD, obd.to_csv(index=False))
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
