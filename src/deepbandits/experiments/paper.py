"""The paper's experiments as named configurations: ``deepbandits reproduce NAME`` runs one and
writes its report.

Each :class:`PaperExperiment` names the environment, the policies, T, the seeds and the hold-out
checkpoints of a table or figure of the paper, and the paper's values where it prints them (so
the report shows them beside the measured ones).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from deepbandits._io import folder_lock, write_atomic
from deepbandits._validation import check_choice, check_int
from deepbandits.experiments.compare import compare
from deepbandits.policies import distinct_policy_names
from deepbandits.report import REFERENCE_FILE, build_report


@dataclass(frozen=True)
class PaperExperiment:
    description: str
    env: str
    policies: tuple[str, ...]
    T: int
    seeds: tuple[int, ...]
    checkpoints: tuple[int, ...] = ()
    reference: dict[str, Any] = field(default_factory=dict)


#: Table quantitative of Appendix B.3 (h₁, 5 trials): mean ± std as printed in the paper.
QUANTITATIVE_REFERENCE: dict[str, Any] = {
    "source": "Table quantitative (Appendix B.3), h1, mean ± std over 5 trials",
    "metrics": {
        "cumulative_reward": "cumulative reward",
        "calibration_error": "calibration error",
        "sharpness": "sharpness",
    },
    "values": {
        "linucb": {
            "cumulative_reward": "7459.08 ± 32.97",
            "calibration_error": "0.7425 ± 0.0301",
            "sharpness": "0.2095 ± 0.0191",
        },
        "neural-ucb": {
            "cumulative_reward": "10658.30 ± 60.53",
            "calibration_error": "0.2634 ± 0.0146",
            "sharpness": "1.0733 ± 0.0110",
        },
        "neural-linucb": {
            "cumulative_reward": "10929.24 ± 58.82",
            "calibration_error": "0.8991 ± 0.1840",
            "sharpness": "0.2042 ± 0.0213",
        },
        "neural-sigma2-linucb": {
            "cumulative_reward": "11326.65 ± 50.19",
            "calibration_error": "0.1492 ± 0.0659",
            "sharpness": "0.8242 ± 0.2802",
        },
    },
}

#: Hold-out checkpoints of Figs. calib_details_0..3.
PAPER_CHECKPOINTS = (0, 2000, 5000, 7500)

#: The policies of the paper's regret figures (Figs. demo, real_world).
MAIN_POLICIES = ("linucb", "neural-ucb", "neural-linucb", "neural-sigma2-linucb")
SEEDS_5 = (0, 1, 2, 3, 4)
SEEDS_10 = tuple(range(10))


def _regret(description: str, env: str, T: int, seeds: tuple[int, ...]) -> PaperExperiment:
    return PaperExperiment(description, env=env, policies=MAIN_POLICIES, T=T, seeds=seeds)


EXPERIMENTS: dict[str, PaperExperiment] = {
    "quantitative": PaperExperiment(
        "Table quantitative, Fig. calib, Figs. calib_details_0..3, Fig. ablation_study2: "
        "cumulative reward, calibration and sharpness on h1",
        env="h1",
        policies=MAIN_POLICIES,
        T=10000,
        seeds=SEEDS_5,
        checkpoints=PAPER_CHECKPOINTS,
        reference=QUANTITATIVE_REFERENCE,
    ),
    "ablation": PaperExperiment(
        "Fig. ablation_study (a, b): oracle vs estimated σ², MSE vs MLE training, on h1",
        env="h1",
        policies=("neural-linucb", "oracle-mse", "mle-var", "range-mse", "range-mle"),
        T=10000,
        seeds=SEEDS_5,
        checkpoints=PAPER_CHECKPOINTS,
    ),
    **{
        f"demo-{h}": _regret(f"Fig. demo ({h}): cumulative regret, 10 seeds", h, 10000, SEEDS_10)
        for h in ("h1", "h2", "h3")
    },
    "full-demo": PaperExperiment(
        "Fig. full_demo: every policy and configuration of the library on h1, 10 seeds",
        env="h1",
        policies=("all",),
        T=10000,
        seeds=SEEDS_10,
    ),
    **{
        f"real-{name}": _regret(
            f"Fig. real_world ({name}): cumulative regret, T = 15000, 5 seeds (the paper's text)",
            f"{name}:preprocess=l2",
            15000,
            SEEDS_5,
        )
        for name in ("mnist", "shuttle", "covertype", "cifar10")
    },
    "dynamic-range": PaperExperiment(
        "Fig. ab_dynamic (b): shuttle with rewards {0,1} then {1,3} from T/2",
        env="shuttle:dynamic_range=True,preprocess=l2",
        policies=("neural-ucb", "neural-linucb", "neural-sigma2-linucb"),
        T=15000,
        seeds=SEEDS_5,
    ),
    "linear": PaperExperiment(
        "Fig. ab_dynamic (a): h1 without a network, LinUCB against σ²-LinUCB",
        env="h1",
        policies=("linucb", "sigma2-linucb"),
        T=10000,
        seeds=SEEDS_5,
    ),
    **{
        f"noise-{kind}": _regret(
            f"Fig. demo_in_de_crease_noise ({'a' if kind == 'rising' else 'b'}): h1 with noise "
            f"{'rising 1→10' if kind == 'rising' else 'falling 2→0'}",
            f"h1:noise={kind}",
            10000,
            SEEDS_5,
        )
        for kind in ("rising", "falling")
    },
    "heuristic": PaperExperiment(
        "Fig. heuristic: σ²ₜ set by a schedule (1→0, 10→0) against Eq. 13, on h1",
        env="h1",
        policies=("neural-linucb", "heuristic-1", "heuristic-10", "neural-sigma2-linucb"),
        T=10000,
        seeds=SEEDS_5,
    ),
    "true-alpha": PaperExperiment(
        "Fig. true_alpha: αₜ of Theorem 4.1 (M = 0.1, δ = 0.1) on h1",
        env="h1",
        policies=(
            "neural-linucb:alpha=theory,M=0.1,delta=0.1",
            "neural-sigma2-linucb:alpha=theory,M=0.1,delta=0.1",
        ),
        T=10000,
        seeds=SEEDS_5,
    ),
}


def experiment_names() -> list[str]:
    return sorted(EXPERIMENTS)


def reproduce(
    name: str,
    out: str | Path,
    *,
    seeds: Sequence[int] | None = None,
    T: int | None = None,
    jobs: int = 1,
    progress: bool = True,
) -> tuple[pd.DataFrame, Path, Path]:
    """Run experiment ``name`` into ``out`` (resumable, like ``compare``) and write its report
    to ``out/report``; ``seeds`` and ``T`` override the paper's (for a quick look). Returns
    the regret summary and the report's HTML and Markdown paths. ``out`` is locked for the
    whole call (:func:`~deepbandits._io.folder_lock`): a second sweep into it fails with
    :class:`~deepbandits.errors.ConcurrentUseError`."""
    exp = EXPERIMENTS[check_choice(name, "experiment", EXPERIMENTS)]
    out = Path(out)
    T = exp.T if T is None else check_int(T, "T", minimum=1)
    checkpoints = [c for c in exp.checkpoints if c <= T]
    policies = distinct_policy_names() if exp.policies == ("all",) else list(exp.policies)
    with folder_lock(out):
        summary = compare(
            policies,
            exp.env,
            list(exp.seeds if seeds is None else seeds),
            T,
            out,
            jobs=jobs,
            progress=progress,
            checkpoints=checkpoints,
        )
        if exp.reference:
            write_atomic(out / REFERENCE_FILE, json.dumps(exp.reference, indent=2))
        page, md = build_report(out, out / "report")
    return summary, page, md
