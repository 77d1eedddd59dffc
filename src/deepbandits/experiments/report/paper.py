"""The paper beside our measurements: its printed numbers next to ours, and its claims about a
figure checked against our runs.

A comparison's :data:`~deepbandits.experiments.report.load.REFERENCE_FILE` may hold the paper's
numbers (``"source"``, ``"metrics"``: ``{metric: label}``, ``"values"``: ``{policy: {metric: "mean ±
std"}}``) and its claims (``"claims"``: a list of ``{"text", "check", "policy", "metric",
"than"}``, see :func:`evaluate_claims`).

A policy named there is matched to the runs' policy labels exactly or, failing that, to the
label with the same name and keywords plus the fewest others (``neural-ucb`` matches
``neural-ucb:train_steps=50``, the spec a quick run adds its budget to, rather than
``neural-ucb:loss=mle,train_steps=50``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from deepbandits._validation import check_choice, check_unknown_keys
from deepbandits.errors import DataError, InputTypeError, InputValueError
from deepbandits.experiments.report.render import Block, estimate, fmt, interval, pm
from deepbandits.experiments.report.tables import paired_values
from deepbandits.metrics import paired_difference
from deepbandits.specs import parse_spec

#: Claim checks: ``{check: (against the best other policy, sign)}``. A claim holds when
#: ``sign · (mean of the policy − mean of the other) < 0``; the other policy is ``than``, or
#: for ``lowest`` / ``highest`` the best of the other policies (the runner-up when the claim
#: holds).
CHECKS: dict[str, tuple[bool, int]] = {
    "lowest": (True, 1),
    "highest": (True, -1),
    "below": (False, 1),
    "above": (False, -1),
}

#: File of a comparison's report folder holding :func:`evaluate_claims`'s table.
CLAIMS_FILE = "claims.csv"

#: Verdicts of :func:`evaluate_claims`.
HOLDS, FAILS, NOT_RUN, NOT_MEASURED = "holds", "does not hold", "not run", "not measured"

#: The verdict of every claim of a quick (smoke-test) run, whose scale (a few seeds, short runs,
#: short trainings) cannot support one (:func:`unjudged`).
SMOKE_TEST = "smoke test: too small to judge"

#: Columns of :func:`evaluate_claims`'s table.
CLAIM_COLUMNS = (
    "claim",
    "check",
    "metric",
    "policy",
    "than",
    "policy_mean",
    "than_mean",
    "difference",
    "ci95_low",
    "ci95_high",
    "seeds",
    "significant",
    "verdict",
)


def resolve_policy(spec: str, labels: Sequence[str]) -> str | None:
    """The label of ``labels`` that ``spec`` names (see the module documentation), or
    ``None``."""
    if spec in labels:
        return spec
    name, params = parse_spec(spec)
    extended = []
    for label in labels:
        other, other_params = parse_spec(label)
        if other == name and all(other_params.get(k, object()) == v for k, v in params.items()):
            extended.append((len(other_params), label))
    if not extended:
        return None
    fewest = min(n for n, _ in extended)
    best = [label for n, label in extended if n == fewest]
    return best[0] if len(best) == 1 else None


def check_claim(claim: Mapping[str, Any], index: int) -> dict[str, Any]:
    """``claim`` with its defaults (``metric="final_regret"``, ``than=None``), validated."""
    where = f"claims[{index}]"
    if not isinstance(claim, Mapping):
        raise InputTypeError(f"{where}: expected a mapping, got {type(claim).__name__}")
    check_unknown_keys(claim, ("text", "check", "policy", "metric", "than"), where)
    c = {"metric": "final_regret", "than": None, **claim}
    for key in ("text", "check", "policy", "metric"):
        if not isinstance(c.get(key), str):
            raise InputValueError(f"{where}: key {key!r}: expected a string, got {c.get(key)!r}")
    check_choice(c["check"], f"{where}.check", CHECKS)
    against_best = CHECKS[c["check"]][0]
    if not against_best and not isinstance(c["than"], str):
        raise InputValueError(
            f"{where}: key 'than': a {c['check']!r} claim needs the policy to compare with, "
            f"got {c['than']!r}"
        )
    return c


def evaluate_claims(
    per_run: pd.DataFrame,
    claims: Sequence[Mapping[str, Any]],
    policies: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Check the paper's claims against the runs.

    Parameters
    ----------
    per_run
        One row per run: columns ``policy``, ``seed`` and the metrics (the report's
        ``runs.csv``).
    claims
        Each ``{"text", "check", "policy", "metric" (default ``"final_regret"``), "than"}``:
        ``check`` ``"lowest"`` (``highest``): the policy's mean ``metric`` over seeds is the
        lowest (highest) of all policies; ``"below"`` (``"above"``): it is below (above)
        ``than``'s mean.
    policies
        Every policy of the comparison, those without a row in ``per_run`` included (their
        jobs failed); default: the policies of ``per_run``.

    Returns
    -------
    pandas.DataFrame
        One row per claim (:data:`CLAIM_COLUMNS`): the claim's text, check and metric, the
        policy and the one it is compared with, their means, the paired difference policy −
        other over the seeds both have (mean and 95 % Student-t interval,
        :func:`~deepbandits.metrics.paired_difference`), whether that interval excludes 0 on
        the claimed side, and the verdict on the means: ``"holds"``, ``"does not hold"``,
        ``"not run"`` (a policy of the claim has no run; for ``lowest`` / ``highest``, any
        policy of the comparison) or ``"not measured"`` (one of them has no finite value of
        the metric). A ``lowest`` / ``highest`` claim is compared with the best of the other
        policies, or, when it cannot be decided, with the first policy lacking runs (or a
        value): a competitor that failed never lets it hold.

    Raises
    ------
    InputValueError
        A claim is malformed or names a metric that is not a column of ``per_run``.
    """
    labels = [str(p) for p in dict.fromkeys([*per_run["policy"], *(policies or ())])]
    ran = set(per_run["policy"].astype(str))
    rows = []
    for i, claim in enumerate(claims):
        c = check_claim(claim, i)
        metric = c["metric"]
        if metric not in per_run.columns:
            raise InputValueError(
                f"claims[{i}]: key 'metric': expected a column of the per-run table "
                f"({', '.join(k for k in per_run.columns if k not in ('policy', 'seed'))}), "
                f"got {metric!r}"
            )
        values = per_run.assign(_v=pd.to_numeric(per_run[metric], errors="coerce"))
        means = {
            label: float(g.mean())
            if (g := values.loc[values["policy"] == label, "_v"].dropna()).size
            else np.nan
            for label in labels
        }
        against_best, sign = CHECKS[c["check"]]
        policy = resolve_policy(c["policy"], labels)
        if against_best:
            others = [k for k in labels if k != policy]
            lacking = [k for k in others if k not in ran] or [
                k for k in others if not np.isfinite(means[k])
            ]
            than = (
                lacking[0] if lacking else min(others, key=lambda k: sign * means[k], default=None)
            )
        else:
            than = resolve_policy(c["than"], labels)
        row: dict[str, Any] = dict.fromkeys(CLAIM_COLUMNS, np.nan)
        row.update(
            claim=c["text"],
            check=c["check"],
            metric=metric,
            policy=policy or c["policy"],
            than=than or c["than"],
            seeds=0,
            significant=False,
        )
        row["policy_mean"], row["than_mean"] = means.get(policy, np.nan), means.get(than, np.nan)
        if policy not in ran or than not in ran:
            row["verdict"] = NOT_RUN
            rows.append(row)
            continue
        a, b = paired_values(per_run, policy, than, metric)
        if a.size:
            d = paired_difference(a, b)
            row.update(difference=d.mean, ci95_low=d.low, ci95_high=d.high, seeds=d.n)
            row["significant"] = bool(d.high < 0 if sign > 0 else d.low > 0)
        gap = sign * (means[policy] - means[than])
        row["verdict"] = NOT_MEASURED if not np.isfinite(gap) else HOLDS if gap < 0 else FAILS
        rows.append(row)
    return pd.DataFrame(rows, columns=list(CLAIM_COLUMNS))


def unjudged(claims: pd.DataFrame) -> pd.DataFrame:
    """``claims`` (:func:`evaluate_claims`'s table) of a quick run: every verdict replaced by
    :data:`SMOKE_TEST` (the means and the paired differences stay, as data)."""
    return claims.assign(verdict=SMOKE_TEST, significant=False)


def holding(claims: pd.DataFrame) -> str:
    """``"x/y"``: how many of the claims hold (``"–"`` without claims, :data:`SMOKE_TEST` for
    the claims of a quick run)."""
    if not len(claims):
        return "–"
    if (claims["verdict"] == SMOKE_TEST).any():
        return SMOKE_TEST
    return f"{int((claims['verdict'] == HOLDS).sum())}/{len(claims)}"


def reference_blocks(reference: Mapping[str, Any], summary: pd.DataFrame) -> list[Block]:
    """Measured values beside the paper's."""
    metrics: dict[str, str] = reference["metrics"]
    header = ["policy"] + [f"{name} (measured / paper)" for name in metrics.values()]
    rows = []
    measured = summary.set_index("policy")
    for label, values in reference["values"].items():
        found = resolve_policy(label, [str(p) for p in measured.index])
        row = [label]
        for key in metrics:
            got = (
                pm(measured.loc[found, f"{key}_mean"], measured.loc[found, f"{key}_std"])
                if found is not None
                else "not run"
            )
            row.append(f"{got} / {values.get(key, '–')}")
        rows.append(row)
    return [("h3", f"Beside the paper: {reference.get('source', '')}"), ("table", (header, rows))]


def claim_blocks(claims: pd.DataFrame) -> list[Block]:
    """The claims table of :func:`evaluate_claims`."""
    rows = [
        [
            r["claim"],
            f"{r['policy']}: {r['check']} {r['metric']}",
            str(r["than"]) if isinstance(r["than"], str) else "–",
            f"{fmt(r['policy_mean'])} / {fmt(r['than_mean'])}",
            f"{estimate(r['difference'], (r['ci95_high'] - r['ci95_low']) / 2)} "
            f"{interval(r['ci95_low'], r['ci95_high'])}"
            if r["seeds"]
            else "–",
            str(r["seeds"]),
            r["verdict"],
        ]
        for r in claims.to_dict("records")
    ]
    header = ["claim", "check", "compared with", "means", "difference, 95% t interval", "seeds"]
    smoke = bool((claims["verdict"] == SMOKE_TEST).any())
    reading = (
        "A smoke test (--quick) is too small to judge the claims: no verdict is given. "
        if smoke
        else "The verdict compares the means. "
    )
    return [
        ("h3", "The paper's claims" if smoke else "The paper's claims, checked"),
        ("table", ([*header, "verdict"], rows)),
        (
            "p",
            "Means over each policy's seeds (policy / compared with). " + reading + "The "
            "difference policy − compared with is paired over the seeds both have, with its 95% "
            "Student-t interval: an interval on the claimed side of 0 means the seeds support "
            "the claim beyond their spread.",
        ),
    ]


def paper_blocks(
    reference: Mapping[str, Any] | None, summary: pd.DataFrame, claims: pd.DataFrame
) -> list[Block]:
    """The paper's numbers beside ours (when ``reference`` has ``"values"``) and its claims
    checked (the table of :func:`evaluate_claims`, when not empty)."""
    blocks = reference_blocks(reference, summary) if reference and "values" in reference else []
    return blocks + (claim_blocks(claims) if len(claims) else [])


def read_claims(folder: Path) -> pd.DataFrame:
    """The claims table a report wrote into a comparison's folder (:data:`CLAIMS_FILE`; empty
    when it has none)."""
    path = folder / CLAIMS_FILE
    if not path.is_file():
        return pd.DataFrame(columns=list(CLAIM_COLUMNS))
    try:
        return pd.read_csv(path, dtype={"claim": str, "policy": str, "verdict": str})
    except (OSError, ValueError) as exc:
        raise DataError(f"cannot read {path}: {exc}") from None
