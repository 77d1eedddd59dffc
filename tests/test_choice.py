"""The choice rule: one request on scalars (``choose_one``, what ``decide`` runs) and many as
arrays (``choose_arms``, what ``decide_batch`` runs) choose the same arms with the same draws
and give the same exact probabilities."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deepbandits.errors import NumericalError
from deepbandits.policies.choice import (
    choose_arms,
    choose_one,
    greedy_propensities,
    tie_propensities,
)


@st.composite
def requests(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray | None, float, int]:
    """An index with frequent ties (few distinct values), an optional mask, ε and a seed."""
    k = draw(st.integers(1, 6))
    values = draw(st.lists(st.sampled_from([-np.inf, -1.0, 0.0, 0.5, 2.0]), min_size=k, max_size=k))
    mask = None
    if draw(st.booleans()):
        mask = np.array(draw(st.lists(st.booleans(), min_size=k, max_size=k)))
        if not mask.any():
            mask[draw(st.integers(0, k - 1))] = True
    epsilon = draw(st.sampled_from([0.0, 0.1, 1.0]))
    return np.array(values), mask, epsilon, draw(st.integers(0, 2**32))


@settings(max_examples=300, deadline=None)
@given(requests())
def test_one_request_on_scalars_matches_the_arrays(request):
    index, mask, epsilon, seed = request
    one_rng, many_rng = np.random.default_rng(seed), np.random.default_rng(seed)
    arm, n_ties, propensity = choose_one(index, mask, epsilon, one_rng)
    choice = choose_arms(index[None], None if mask is None else mask[None], epsilon, many_rng)
    assert arm == int(choice.arms[0])
    assert n_ties == int(choice.n_ties[0])
    assert propensity == float(tie_propensities(choice, epsilon)[0])  # bit for bit
    assert one_rng.bit_generator.state == many_rng.bit_generator.state  # the same draws
    assert mask is None or mask[arm]
    # the probability of the arm played is the rule's, as greedy_propensities gives every arm's
    assert propensity == pytest.approx(greedy_propensities(index, mask, epsilon)[arm], abs=0)


def test_a_nan_among_the_available_arms_is_refused_and_a_masked_one_ignored():
    rng = np.random.default_rng(0)
    index = np.array([0.0, np.nan, 1.0])
    with pytest.raises(NumericalError, match="NaN"):
        choose_one(index, None, 0.0, rng)
    assert choose_one(index, np.array([True, False, True]), 0.0, rng) == (2, 1, 1.0)
