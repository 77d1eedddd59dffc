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

from deepbandits._validation import check_choice
from deepbandits.experiments.compare import compare
from deepbandits.experiments.report import REFERENCE_FILE, build_report


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

EXPERIMENTS: dict[str, PaperExperiment] = {
    "quantitative": PaperExperiment(
        "Table quantitative, Fig. calib, Figs. calib_details_0..3, Fig. ablation_study2: "
        "cumulative reward, calibration and sharpness on h1",
        env="h1",
        policies=("linucb", "neural-ucb", "neural-linucb", "neural-sigma2-linucb"),
        T=10000,
        seeds=(0, 1, 2, 3, 4),
        checkpoints=PAPER_CHECKPOINTS,
        reference=QUANTITATIVE_REFERENCE,
    ),
    "ablation": PaperExperiment(
        "Fig. ablation_study (a, b): oracle vs estimated σ², MSE vs MLE training, on h1",
        env="h1",
        policies=("neural-linucb", "oracle-mse", "mle-var", "range-mse", "range-mle"),
        T=10000,
        seeds=(0, 1, 2, 3, 4),
        checkpoints=PAPER_CHECKPOINTS,
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
    the regret summary and the report's HTML and Markdown paths."""
    exp = EXPERIMENTS[check_choice(name, "experiment", EXPERIMENTS)]
    out = Path(out)
    T = exp.T if T is None else T
    checkpoints = [c for c in exp.checkpoints if c <= T]
    summary = compare(
        list(exp.policies),
        exp.env,
        list(exp.seeds if seeds is None else seeds),
        T,
        out,
        jobs=jobs,
        progress=progress,
        checkpoints=checkpoints,
    )
    if exp.reference:
        (out / REFERENCE_FILE).write_text(json.dumps(exp.reference, indent=2))
    page, md = build_report(out, out / "report")
    return summary, page, md
