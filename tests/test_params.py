"""The declared parameter specs: complete, consistent with the defaults and the tuner's search
spaces, rendered for help, and enforced by every constructor (property tests)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import deepbandits as db
from deepbandits.cli import main
from deepbandits.policies import POLICIES, LinUCB, parameter_table
from deepbandits.policies.params import (
    ALPHA_SPEC,
    LAM_SPEC,
    NETWORK_SPECS,
    SEED_SPEC,
    Spec,
    accepts,
    check_param,
    render_spec,
)
from deepbandits.policies.space import categorical, int_range, log_float, uniform_float

CLASSES = list(POLICIES.items())


@pytest.mark.parametrize("name", db.policy_names())
def test_every_parameter_of_every_policy_has_a_spec_and_its_default_fits(name):
    policy = db.make_policy(name)
    specs = policy.param_specs
    assert set(policy.get_params()) == set(specs)
    for key, default in policy.get_params().items():
        assert accepts(specs[key], default), (name, key, default)
        assert specs[key].doc, (name, key)


@pytest.mark.parametrize(
    ("spec", "text"),
    [
        (ALPHA_SPEC, "float >= 0"),
        (LAM_SPEC, "float > 0"),
        (LinUCB.param_specs["alpha"], "float >= 0 or 'theory'"),
        (LinUCB.param_specs["delta"], "float in (0, 1)"),
        (LinUCB.param_specs["horizon"], "None or int >= 1"),
        (LinUCB.param_specs["reward_range"], "None or pair (a, b) with a < b"),
        (LinUCB.param_specs["schedule"], "None or str or sequence of float"),
        (LinUCB.param_specs["per_arm"], "bool"),
        (SEED_SPEC, "None or int in [0, 2**63)"),
        (NETWORK_SPECS["max_grad_norm"], "None or float > 0"),
        (NETWORK_SPECS["optimizer"], "one of 'sgd', 'adam'"),
        (NETWORK_SPECS["device"], "str"),
        (db.NeuralLinUCB.param_specs["loss"], "one of 'mse', 'mle'"),
        (Spec("real", "x", high=2.5, high_inclusive=False), "float < 2.5"),
        (Spec("int", "x", low=1, high=3), "int in [1, 3]"),
    ],
)
def test_specs_render_as_help_text(spec, text):
    assert render_spec(spec) == text


def test_a_presets_forbidden_option_leaves_its_spec():
    assert "none" not in db.Sigma2LinUCB.param_specs["variance"].choices
    assert "none" in LinUCB.param_specs["variance"].choices
    assert db.NeuralSigma2LinUCB.param_specs["variance"].choices == (
        "oracle",
        "range",
        "mle-var",
        "schedule",
    )


@pytest.mark.parametrize(
    ("spec", "value", "error", "message"),
    [
        (LAM_SPEC, 0, db.InputValueError, "lam must be > 0, but 0 is given"),
        (LAM_SPEC, "1", db.InputTypeError, "lam must be a real number, but '1'"),
        (LAM_SPEC, math.inf, db.InputValueError, "lam must be finite"),
        (LAM_SPEC, None, db.InputTypeError, "lam must be a real number, but None"),
        (LinUCB.param_specs["alpha"], "big", db.InputValueError, "or 'theory', but 'big'"),
        (LinUCB.param_specs["delta"], 1.0, db.InputValueError, r"lam must be in \(0, 1\)"),
        (SEED_SPEC, 2**63, db.InputValueError, r"lam must be in \[0, 2\*\*63\)"),
        (SEED_SPEC, 1.0, db.InputTypeError, "lam must be an integer"),
        (NETWORK_SPECS["optimizer"], "lbfgs", db.InputValueError, "unknown lam 'lbfgs'"),
        (NETWORK_SPECS["device"], 0, db.InputTypeError, "lam must be a string"),
        (LinUCB.param_specs["per_arm"], 1, db.InputTypeError, "lam must be True or False"),
        (LinUCB.param_specs["reward_range"], (1, 0), db.InputValueError, "a < b"),
        (LinUCB.param_specs["schedule"], 3, db.InputTypeError, "lam must be a string or a seq"),
        (LinUCB.param_specs["schedule"], [1, "a"], db.InputTypeError, r"lam\[1\] must be a real"),
    ],
)
def test_check_param_names_the_parameter_the_expectation_and_the_value(spec, value, error, message):
    with pytest.raises(error, match=message):
        check_param("lam", spec, value)


def test_check_param_returns_the_value_to_store():
    assert check_param("a", LinUCB.param_specs["reward_range"], [0, 1]) == (0.0, 1.0)
    assert check_param("a", LinUCB.param_specs["alpha"], "theory") == "theory"
    assert check_param("a", SEED_SPEC, None) is None
    given = [0, 2]  # scikit-learn's convention: parameters are kept as given, checked on use
    policy = db.make_policy("linucb", reward_range=given)
    assert policy.get_params()["reward_range"] is given
    assert policy._reward_range == (0.0, 2.0)


@pytest.mark.parametrize(("name", "cls"), CLASSES, ids=[c[0] for c in CLASSES])
def test_search_spaces_lie_within_the_specs(name, cls):
    assert cls.search_space, name
    for key, param in cls.search_space.items():
        spec = cls.param_specs[key]
        if param.kind == "categorical":
            assert all(accepts(spec, v) for v in param.choices), (name, key)
        else:
            assert spec.kind == {"float": "real", "int": "int"}[param.kind], (name, key)
            assert accepts(spec, param.low) and accepts(spec, param.high), (name, key)


@pytest.mark.parametrize(
    ("space", "message"),
    [
        ({"lam": uniform_float(-1.0, 1.0)}, "searches lam over"),
        ({"lam": int_range(1, 5)}, "searches lam over"),
        ({"refresh_every": log_float(1.0, 5.0)}, "searches refresh_every over"),
        ({"variance": categorical("none", "magic")}, "searches variance over"),
        ({"colour": categorical(1, 2)}, "'colour', which is not a parameter"),
    ],
)
def test_a_search_space_outside_its_spec_is_refused_when_the_recipe_is_defined(space, message):
    with pytest.raises(db.InputValueError, match=message):
        dataclasses.replace(POLICIES["linucb"], search_space=space)


# ---------------------------------------------------------------------------- property tests
#: Values a parameter cannot take alone: the settings that make them valid.
NEEDS = {("variance", "schedule"): {"schedule": "linear:1:0"}}
#: Keywords that only apply with another's value (unless the policy fixes them).
KEY_NEEDS = {
    "range_confidence": {"variance": "range"},
    "train_theta": {"refit_on_update": True, "optimizer": "sgd"},
}
#: Kinds generated below (str, pair and schedule values are tested by the examples above).
GENERATED = ("real", "int", "bool", "choice")
LARGE = 1e9


def inside(spec: Spec) -> st.SearchStrategy[Any]:
    """Values that ``spec`` accepts."""
    if spec.kind == "bool":
        values: st.SearchStrategy[Any] = st.booleans()
    elif spec.kind == "choice":
        values = st.sampled_from(spec.choices)
    elif spec.kind == "int":
        low = int(spec.low) if spec.low is not None else -int(LARGE)
        high = int(spec.high) - (not spec.high_inclusive) if spec.high is not None else int(LARGE)
        values = st.integers(low, high)
    else:
        values = st.floats(
            spec.low if spec.low is not None else -LARGE,
            spec.high if spec.high is not None else LARGE,
            exclude_min=not spec.low_inclusive,
            exclude_max=not spec.high_inclusive,
        )
        if spec.choices:
            values = values | st.sampled_from(spec.choices)
    return values | st.none() if spec.optional else values


def outside(spec: Spec) -> st.SearchStrategy[Any]:
    """Values that ``spec`` refuses: out of range, or of another type."""
    wrong: list[st.SearchStrategy[Any]] = [st.complex_numbers(min_magnitude=1.0), st.just([1.0])]
    if not spec.optional:
        wrong.append(st.none())
    if spec.kind in ("int", "real"):
        wrong += [st.booleans(), st.text().filter(lambda s: s not in spec.choices)]
        if spec.kind == "int":
            if spec.low is not None:
                wrong.append(st.integers(max_value=int(spec.low) - spec.low_inclusive))
            if spec.high is not None:
                wrong.append(st.integers(min_value=int(spec.high) + spec.high_inclusive))
        else:
            if spec.low is not None:
                wrong.append(st.floats(max_value=spec.low, exclude_max=spec.low_inclusive))
            if spec.high is not None:
                wrong.append(st.floats(min_value=spec.high, exclude_min=spec.high_inclusive))
        if spec.kind == "int":
            wrong.append(st.floats(allow_nan=False))
        else:
            wrong.append(st.sampled_from([math.nan, math.inf, -math.inf]))
    elif spec.kind == "bool":
        wrong += [st.integers(), st.text()]
    else:
        wrong += [st.integers(), st.text().filter(lambda s: s not in spec.choices)]
    return st.one_of(wrong)


def _free_params(cls: type[db.Policy]) -> list[str]:
    fixed = getattr(cls, "fixed_params", {})
    return [k for k, s in cls.param_specs.items() if s.kind in GENERATED and k not in fixed]


FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])


@pytest.mark.parametrize(("name", "cls"), CLASSES, ids=[c[0] for c in CLASSES])
@FAST
@given(data=st.data())
def test_values_inside_a_spec_are_accepted(name, cls, data):
    key = data.draw(st.sampled_from(_free_params(cls)), label="parameter")
    value = data.draw(inside(cls.param_specs[key]), label="value")
    extra = {**NEEDS.get((key, value), {}), **(KEY_NEEDS.get(key, {}) if value else {})}
    policy = db.make_policy(name, **{key: value}, **extra)
    assert policy.get_params()[key] == value
    policy = db.make_policy(name)
    policy.set_params(**{key: value}, **extra)
    assert policy.get_params()[key] == value


@pytest.mark.parametrize(("name", "cls"), CLASSES, ids=[c[0] for c in CLASSES])
@FAST
@given(data=st.data())
def test_values_outside_a_spec_are_refused_naming_the_parameter(name, cls, data):
    key = data.draw(st.sampled_from(_free_params(cls)), label="parameter")
    value = data.draw(outside(cls.param_specs[key]), label="value")
    named = rf"\b{key}\b"
    with pytest.raises(db.DeepBanditsError, match=named):
        db.make_policy(name, **{key: value})
    policy = db.make_policy(name)
    before = policy.get_params()
    with pytest.raises(db.DeepBanditsError, match=named):
        policy.set_params(**{key: value})
    assert policy.get_params() == before


# ---------------------------------------------------------------------------- command line
def test_list_params_prints_every_parameter_from_its_spec(capsys):
    assert main(["list", "--params", "neural-lingreedy"]) == 0
    out = capsys.readouterr().out
    for key, default, text, doc in parameter_table("neural-lingreedy"):
        line = next(row for row in out.splitlines() if row.split()[:1] == [key])
        assert default in line and text in line and doc in line
    assert "fixed" in next(r for r in out.splitlines() if r.split()[:1] == ["alpha"])
    assert main(["list", "--params", "range-mle"]) == 0
    assert "'mle'" in next(r for r in capsys.readouterr().out.splitlines() if "loss" in r)
    assert main(["list", "--params", "bandit9000"]) == 2
    assert "unknown policy 'bandit9000'" in capsys.readouterr().err


def test_list_params_says_what_your_own_data_changes_and_what_it_costs(capsys):
    from deepbandits.envs.settings import OWN_DATA

    for name, own in OWN_DATA.items():
        assert main(["list", "--params", name]) == 0
        out = capsys.readouterr().out
        note = out[out.index("on your own data") :]
        for key, value in own.items():
            assert f"{key}={value!r}" in note, (name, key)
        assert "s per 1,000 rounds" in note and "{" not in note, name
    assert main(["list", "--params", "neural-ucb"]) == 0
    assert "on your own data" not in capsys.readouterr().out


@pytest.mark.parametrize("name", ["neural-ucb", "neural-ts", "bootstrapped-nn"])
def test_set_params_reaches_what_is_derived_from_the_parameters(name):
    """A policy changed by ``set_params`` trains and explores as one built with the same
    keywords (the schedule and the exploration rule were once kept from before the change:
    ``make_policy(name, env=...)``, which goes through ``set_params``, left NeuralUCB on the
    default schedule whatever the dataset's settings said)."""
    keywords = {"train_every": 7, "train_start": 10, "warmup_every": 0, "train_steps": 5}
    if name != "bootstrapped-nn":
        keywords["alpha"] = 0.5
    changed = db.make_policy(name, seed=0).set_params(**keywords)
    built = db.make_policy(name, seed=0, **keywords)
    assert changed.train_schedule_ == built.train_schedule_
    if name != "bootstrapped-nn":
        assert repr(changed.explore_) == repr(built.explore_)
    env = db.make_env("h1", seed=0)
    counts = []
    for policy in (changed, built):
        env.reset(seed=0)
        db.run(policy, env, T=30, seed=0)
        counts.append(policy.n_trainings_)
    assert counts[0] == counts[1] > 0
