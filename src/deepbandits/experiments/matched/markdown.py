"""The Markdown report of the matched protocol (``out/matched.md``)."""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd

from deepbandits.experiments.matched.protocol import MatchedProtocol
from deepbandits.experiments.matched.tunings import CONFIDENCE
from deepbandits.specs import format_seeds


def _budget_text(budget: dict[str, Any], T: int) -> str:
    b = budget
    before = (
        f"every {b['warmup_every']} rounds before round {b['train_start']}, "
        if b["warmup_every"]
        else f"none before round {b['train_start']}, "
    )
    text = (
        f"hidden {b['hidden']} × {b['n_layers']} layers, {b['optimizer']} (weight decay "
        f"{b['weight_decay']}, gradient clip {b['max_grad_norm']}), {b['train_steps']} steps of "
        f"batch {b['batch_size']} per training; trainings {before}every {b['train_every']} from "
        f"it: {b['trainings']} in {T} rounds = {b['sample_gradients']:,} sample gradients per run"
    )
    if "feature_dim" in budget:
        text += f"; feature dimension d′ = {b['feature_dim']} (neural-linear policies)"
    return text


def _number(x: float) -> str:
    return f"{x:+.1f}" if math.isfinite(x) else ("+inf" if x > 0 else "-inf")


def _diff_cell(row: pd.Series, prefix: str) -> str:
    if row[f"{prefix}_significant"] is None or pd.isna(row[f"{prefix}_mean"]):
        return "—"
    text = (
        f"{_number(row[f'{prefix}_mean'])} [{_number(row[f'{prefix}_low'])}, "
        f"{_number(row[f'{prefix}_high'])}]"
    )
    return f"**{text}** \\*" if row[f"{prefix}_significant"] else text


def _params_text(best_params: str) -> str:
    params = json.loads(best_params)
    return ", ".join(
        f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items()
    )


def _verdict(rows: pd.DataFrame, reference: str) -> str:
    best = rows.loc[rows["tuned_mean"].idxmin(), "policy"]
    others = rows[rows["policy"] != reference]
    below = int((others["diff_significant"].astype(bool) & (others["diff_mean"] > 0)).sum())
    above = int((others["diff_significant"].astype(bool) & (others["diff_mean"] < 0)).sum())
    return (
        f"Lowest tuned mean regret: **{best}**. Tuned {reference} is significantly lower than "
        f"{below} of the {len(others)} other policies and significantly higher than {above}."
    )


def format_matched(
    table: pd.DataFrame, protocol: MatchedProtocol, budgets: dict[str, dict[str, Any]]
) -> str:
    """The Markdown report of :func:`~deepbandits.experiments.matched.run_matched`: the
    settings (T, seeds, trials, searched names, the fixed training budget of each environment),
    then per environment a table of tuned and untuned final regret, best parameters and the
    paired differences with the reference policy."""
    ref = protocol.reference
    pct = round(100 * CONFIDENCE)
    searched = {}
    for row in table.drop_duplicates("policy").itertuples():
        searched[row.policy] = row.searched
    search_text = "; ".join(f"{p}: {s}" for p, s in searched.items())
    lines = [
        "# Matched protocol: equal network budgets, equal tuning",
        "",
        f"Does {ref} keep the lowest regret when every policy trains the same network on the "
        "same schedule and is tuned with the same budget?",
        "",
        "- **T** (rounds per run): "
        + ", ".join(f"{env} {protocol.horizon(env)}" for env in protocol.envs),
        f"- **tuning**: Optuna TPE (sampler seed {protocol.sampler_seed}), "
        f"{protocol.n_trials} trials per environment and policy, tuning seeds "
        f"{format_seeds(list(protocol.tuning_seeds))} (objective: their mean final regret); "
        f"searched: {search_text} (one sampler seed: policies with the same search space are "
        "offered the same candidate settings)",
        f"- **evaluation seeds**: {format_seeds(list(protocol.eval_seeds))} "
        f"({len(protocol.eval_seeds)} seeds, disjoint from the tuning seeds), for the tuned and "
        "the untuned (library default) setting of each policy",
        "- **fixed training budget** (the same for every policy, never searched; "
        + (
            "library defaults plus " + ", ".join(f"{k}={v}" for k, v in protocol.budget.items())
            if protocol.budget
            else "library defaults"
        )
        + ", with each environment's recommended settings applied to all):",
    ]
    for env in protocol.envs:
        lines.append(f"  - {env}: {_budget_text(budgets[env], protocol.horizon(env))}")
    lines += [
        f"- **paired difference**: policy − {ref} on the same evaluation seeds (tuned against "
        f"tuned, untuned against untuned), mean [{pct} % Student-t interval]; positive: more "
        f"regret than {ref}; bold with \\* : the interval excludes 0.",
        "",
    ]
    for env in protocol.envs:
        rows = table[table["env"] == env]
        lines += [
            f"## {env} (T = {protocol.horizon(env)})",
            "",
            "| policy | tuned final regret | untuned final regret | best params "
            f"| tuned − {ref} | untuned − {ref} |",
            "|---|---|---|---|---|---|",
        ]
        for _, row in rows.iterrows():
            lines.append(
                f"| {row['policy']} | {row['tuned_mean']:.1f} ± {row['tuned_std']:.1f} "
                f"| {row['untuned_mean']:.1f} ± {row['untuned_std']:.1f} "
                f"| {_params_text(row['best_params'])} | {_diff_cell(row, 'diff')} "
                f"| {_diff_cell(row, 'untuned_diff')} |"
            )
        lines += ["", _verdict(rows, ref), ""]
    return "\n".join(lines)


__all__ = ["format_matched"]
