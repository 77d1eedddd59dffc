"""MIPS for actions with embeddings, estimated propensities and balanced IPW (issue 48):
hand-computed weights, unbiasedness over seeds on logs with a known truth, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import deepbandits.ope as ope
from deepbandits.errors import InputTypeError, InputValueError
from deepbandits.ope.marginal import embedding_groups, marginal_weights
from deepbandits.ope.propensity import balancing_weights

N_GROUPS = 4


def softmax(z: np.ndarray) -> np.ndarray:
    z = np.exp(z - z.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def world(n: int = 2000, K: int = 24, d: int = 3, seed: int = 0) -> dict[str, np.ndarray]:
    """Contexts, a logging policy that depends on them, a target, and mean rewards that depend
    on the action only through its group (MIPS's no-direct-effect assumption)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    groups = np.arange(K) % N_GROUPS
    theta = rng.standard_normal((N_GROUPS, d))
    mean = (1 / (1 + np.exp(-X @ theta.T)))[:, groups]
    logging = softmax(0.7 * X @ rng.standard_normal((d, K)))
    target = softmax(1.5 * X @ rng.standard_normal((d, K)))
    return {"X": X, "groups": groups, "mean": mean, "logging": logging, "target": target}


def draw(w: dict[str, np.ndarray], seed: int, **kw: object) -> ope.LoggedBandit:
    rng = np.random.default_rng(seed)
    n, K = w["logging"].shape
    a = np.minimum((w["logging"].cumsum(axis=1) < rng.random(n)[:, None]).sum(axis=1), K - 1)
    r = (rng.random(n) < w["mean"][np.arange(n), a]).astype(np.float64)
    options = {
        "n_actions": K,
        "action_features": w["groups"][:, None].astype(np.float64),
        "logging_dist": w["logging"],
        **kw,
    }
    return ope.make_log(w["X"], a, r, w["logging"][np.arange(n), a], **options)


def truth(w: dict[str, np.ndarray]) -> float:
    return float((w["target"] * w["mean"]).sum(axis=1).mean())


def test_marginal_weights_by_hand() -> None:
    groups = embedding_groups(np.array([[0.0, 1.0], [0.0, 2.0], [1.0, 1.0]]), (0,))
    assert groups.tolist() == [0, 0, 1]
    assert embedding_groups(np.array([[0.0, 1.0], [0.0, 2.0], [1.0, 1.0]]), None).tolist() == [
        0,
        1,
        2,
    ]
    pi = np.array([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]])
    pi0 = np.array([[0.2, 0.2, 0.6], [0.4, 0.4, 0.2]])
    got = marginal_weights(pi, pi0, np.array([1, 2]), groups)
    # round 0 played arm 1 of group {0, 1}: (0.5 + 0.3) / (0.2 + 0.2); round 1 arm 2 alone
    np.testing.assert_allclose(got, [0.8 / 0.4, 0.8 / 0.2], rtol=1e-15)


def test_mips_with_one_action_per_embedding_is_ips() -> None:
    w = world(n=400, K=6, seed=1)
    log = draw(w, 2, action_features=np.arange(6.0)[:, None])
    table = ope.evaluate(
        log, w["target"], estimators=["ips", "mips", "snips", "snmips"], n_bootstrap=50
    ).table
    est = dict(zip(table["estimator"], table["estimate"], strict=True))
    assert est["mips"] == pytest.approx(est["ips"], rel=1e-12)
    assert est["snmips"] == pytest.approx(est["snips"], rel=1e-12)


def test_mips_is_unbiased_and_lower_variance_than_ips_over_seeds() -> None:
    w = world(seed=3)
    rows = [
        ope.evaluate(
            draw(w, 10 + s), w["target"], estimators=["ips", "mips"], n_bootstrap=0, warn=False
        )
        for s in range(16)
    ]
    ips = np.array([r.estimate("ips") for r in rows])
    mips = np.array([r.estimate("mips") for r in rows])
    v = truth(w)
    assert abs(mips.mean() - v) < 3 * mips.std(ddof=1) / np.sqrt(len(mips)) + 1e-3
    assert mips.std() < 0.7 * ips.std()


def test_mips_refuses_logs_it_cannot_read() -> None:
    w = world(n=200, K=6, seed=4)
    with pytest.raises(InputValueError, match="logging_dist"):
        ope.evaluate(draw(w, 0, logging_dist=None), w["target"], estimators="mips")
    with pytest.raises(InputValueError, match="action_features"):
        ope.evaluate(draw(w, 0, action_features=None), w["target"], estimators="snmips")
    with pytest.raises(InputValueError, match="embedding must index the 1"):
        ope.evaluate(draw(w, 0), w["target"], estimators="mips:embedding=[3]")
    with pytest.raises(InputTypeError, match="embedding must be None or a list"):
        ope.make_estimator("mips:embedding=x")
    with pytest.raises(InputValueError, match="distinct"):
        ope.MIPS(embedding=(0, 0))
    terms = ope.Terms(np.ones(3), np.ones(3))
    with pytest.raises(InputValueError, match="reads the log"):
        ope.MIPS().estimate(terms)


def test_all_leaves_out_the_estimators_asked_for_by_name() -> None:
    w = world(n=300, K=6, seed=5)
    table = ope.evaluate(draw(w, 0), w["target"], n_bootstrap=0, warn=False).table
    assert not {"mips", "snmips", "bipw"} & set(table["estimator"])


def test_estimated_propensities_are_close_and_ips_on_them_is_right() -> None:
    w = world(n=3000, K=5, seed=6)
    errors, ips_true, ips_est = [], [], []
    for s in range(4):
        log = draw(w, 20 + s, action_features=None, logging_dist=None)
        est = ope.with_estimated_propensities(log, seed=s)
        assert est.name.endswith("(estimated propensities)")
        np.testing.assert_allclose(est.logging_dist.sum(axis=1), 1.0)
        errors.append(np.median(np.abs(est.propensities / log.propensities - 1)))
        ips_true.append(
            ope.evaluate(log, w["target"], estimators="ips", n_bootstrap=0).estimate("ips")
        )
        ips_est.append(
            ope.evaluate(est, w["target"], estimators="ips", n_bootstrap=0).estimate("ips")
        )
    assert max(errors) < 0.1
    v = truth(w)
    assert abs(np.mean(ips_est) - v) < 0.03
    assert abs(np.mean(ips_est) - np.mean(ips_true)) < 0.03


def test_estimated_propensities_respect_masks_and_the_floor() -> None:
    w = world(n=300, K=4, seed=7)
    masks = np.ones((300, 4), dtype=bool)
    masks[:, 3] = False
    logging = w["logging"].copy()
    logging[:, 3] = 0.0
    w = {**w, "logging": logging / logging.sum(axis=1, keepdims=True)}
    log = draw(w, 0, masks=masks, action_features=None)
    dist = ope.fit_logging_distribution(log, n_folds=3, floor=0.01)
    assert (dist[:, 3] == 0).all()
    assert dist[:, :3].min() >= 0.01 / (1 + 3 * 0.01) - 1e-12
    with pytest.raises(InputValueError, match="floor must be below 1/K"):
        ope.fit_logging_distribution(log, floor=0.3)
    with pytest.raises(InputValueError, match="n_folds=400 is more than"):
        ope.fit_logging_distribution(log, n_folds=400)
    with pytest.raises(InputTypeError, match="model must be one of"):
        ope.fit_logging_distribution(log, model=object())


def test_balanced_ipw_estimates_the_weights_and_never_reads_propensities() -> None:
    w = world(n=1500, K=3, seed=8)
    log = draw(w, 0, action_features=None)
    true_w = w["target"][np.arange(len(log)), log.actions] / log.propensities
    got = balancing_weights(log, w["target"], "logistic", n_folds=3, seed=0)
    assert np.corrcoef(np.log(got), np.log(true_w))[0, 1] > 0.8
    wrong = ope.make_log(log.contexts, log.actions, log.rewards, np.full(len(log), 0.5))
    est = ope.BalancedIPS(model="logistic", n_folds=3)
    a = ope.evaluate(log, w["target"], estimators=[est], n_bootstrap=0).estimate("bipw")
    b = ope.evaluate(wrong, w["target"], estimators=[est], n_bootstrap=0, warn=False)
    assert a == b.estimate("bipw")
    assert abs(a - truth(w)) < 0.05


def test_balanced_ipw_checks_its_settings() -> None:
    with pytest.raises(InputValueError, match="model must be one of"):
        ope.make_estimator("bipw:model=forest")
    with pytest.raises(InputValueError, match="n_folds must be >= 1"):
        ope.BalancedIPS(n_folds=0)
    assert ope.make_estimator("bipw:model=logistic").label == "bipw:model=logistic"
