"""Whether a tuning paid off: the tuned setting against the untuned one on the evaluation seeds,
which the tuning never saw (:func:`~deepbandits.experiments.tune.tune`).

The best trial is the best on the tuning seeds by construction (the untuned setting is the first
trial), but the evaluation seeds can disagree: a setting picked from a few noisy trials may do
worse there. :func:`judge` says so rather than leaving the user to read it off the table.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import pandas as pd

from deepbandits.errors import InputValueError


@dataclass(frozen=True)
class Verdict:
    """The tuned and the untuned setting on the evaluation seeds.

    Attributes
    ----------
    untuned_mean, tuned_mean : float
        Mean final cumulative regret over the evaluation seeds.
    same_setting : bool
        Whether the best trial is the untuned setting itself (tuning found nothing better on
        the tuning seeds).
    """

    untuned_mean: float
    tuned_mean: float
    same_setting: bool

    @property
    def beats_untuned(self) -> bool:
        """Whether the tuned setting has a lower mean final regret than the untuned one on the
        evaluation seeds (never, when it is the untuned setting)."""
        return not self.same_setting and self.tuned_mean < self.untuned_mean

    @property
    def message(self) -> str:
        """One sentence for the user."""
        tuned, untuned = f"{self.tuned_mean:.1f}", f"{self.untuned_mean:.1f}"
        if self.same_setting:
            return (
                "tuning found nothing better than the untuned setting: the best trial is the "
                f"untuned one (mean final regret {untuned} on the evaluation seeds); keep it"
            )
        if not self.beats_untuned:
            return (
                "the tuned setting does NOT beat the untuned one on the evaluation seeds: mean "
                f"final regret {tuned} against {untuned} untuned (what was best on the tuning "
                "seeds did not carry over); keep the untuned setting, or tune again with more "
                "tuning seeds or trials"
            )
        return (
            "the tuned setting beats the untuned one on the evaluation seeds: mean final regret "
            f"{tuned} against {untuned} untuned ({self.untuned_mean - self.tuned_mean:.1f} lower)"
        )

    def to_dict(self) -> dict[str, object]:
        """The verdict as ``tune.json`` records it."""
        return {**asdict(self), "beats_untuned": self.beats_untuned, "message": self.message}


def judge(summary: pd.DataFrame, untuned_spec: str, tuned_spec: str, same_setting: bool) -> Verdict:
    """The :class:`Verdict` of a comparison table (:func:`~deepbandits.experiments.compare`'s
    summary, one row per specification) of ``untuned_spec`` and ``tuned_spec``.

    Raises
    ------
    InputValueError
        When the table has no row for one of them.
    """
    means = dict(zip(summary["policy"], summary["final_regret_mean"], strict=True))
    missing = [spec for spec in (untuned_spec, tuned_spec) if spec not in means]
    if missing:
        raise InputValueError(
            f"the evaluation table has no row for {', '.join(map(repr, missing))}; its rows: "
            f"{', '.join(map(repr, means))}"
        )
    return Verdict(float(means[untuned_spec]), float(means[tuned_spec]), same_setting)


__all__ = ["Verdict", "judge"]
