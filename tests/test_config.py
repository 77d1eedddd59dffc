"""Experiment configs: the shipped ones load and scale, broken files fail with file and key."""

from __future__ import annotations

import json
import pickle
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import TypeAdapter

from deepbandits.envs import make_env
from deepbandits.errors import InputValueError
from deepbandits.experiments.config import (
    CONFIG_DIR,
    PAPER_METRICS,
    ConfigError,
    ExperimentConfig,
    LatencyConfig,
    MatchedConfig,
    SweepConfig,
    builtin_config,
    builtin_configs,
    load_config,
)
from deepbandits.experiments.matched import MATCHED, MATCHED_BUDGET, QUICK_MATCHED
from deepbandits.policies import make_policy
from deepbandits.specs import parse_spec

NAMES = {
    "quantitative",
    "ablation",
    "demo-h1",
    "demo-h2",
    "demo-h3",
    "full-demo",
    "real-mnist",
    "records-mnist",
    "records-shuttle",
    "records-covertype",
    "records-cifar10",
    "real-shuttle",
    "real-covertype",
    "real-cifar10",
    "dynamic-range",
    "linear",
    "noise-rising",
    "noise-falling",
    "noise-fixed",
    "heuristic",
    "true-alpha",
    "model-size",
    "latency",
    "matched",
}


@pytest.fixture(scope="module")
def configs() -> dict[str, ExperimentConfig]:
    return builtin_configs()


def test_every_shipped_config_loads(configs: dict[str, ExperimentConfig]) -> None:
    assert set(configs) == NAMES
    assert list(configs) == sorted(configs)
    assert len(list(CONFIG_DIR.glob("*.toml"))) == len(NAMES)
    for name, config in configs.items():
        assert config.path.stem == name == config.name
        assert config.reproduces and config.title
        assert config.quick, f"{name} has no [quick] table"
        assert 0 < config.quick_cpu_s < config.full_cpu_s and config.cost_note
    assert configs["latency"].kind == "latency" and configs["matched"].kind == "matched"
    assert isinstance(configs["latency"], LatencyConfig)
    assert isinstance(configs["matched"], MatchedConfig)
    assert configs["quantitative"].seeds == (0, 1, 2, 3, 4)
    assert configs["quantitative"].checkpoints == (0, 2000, 5000, 7500)
    assert configs["model-size"].T == 30000 and configs["model-size"].env.startswith("cifar10")
    assert configs["demo-h1"].envs == ("h1",)
    sweeps = {n: c for n, c in configs.items() if isinstance(c, SweepConfig)}
    assert set(sweeps) == NAMES - {"latency", "matched"}
    for name, config in sweeps.items():
        for metric in (config.paper or {}).get("metrics", {}):
            assert metric in PAPER_METRICS, (name, metric)


def test_builtin_config_by_name() -> None:
    assert builtin_config("linear").policies == ("linucb", "sigma2-linucb")
    with pytest.raises(InputValueError, match=r"did you mean 'linear'.*quantitative"):
        builtin_config("linaer")


def test_quick_scales_down_and_sets_params_where_taken(
    configs: dict[str, ExperimentConfig],
) -> None:
    for name, config in configs.items():
        assert config.scaled(False) is config
        quick = config.scaled(True)
        if config.kind != "sweep":
            continue
        assert quick.T < config.T, name
        assert len(quick.seeds) < len(config.seeds), name
        assert all(c <= quick.T for c in quick.checkpoints), name
        params = config.quick.policy_params or {}
        assert len(quick.policy_list()) == len(config.policy_list()), name
        for full, small in zip(config.policy_list(), quick.policy_list(), strict=True):
            policy, given = parse_spec(small)
            accepted = make_policy(policy).get_params()
            for key, value in params.items():
                assert given.get(key) == (value if key in accepted else None), (name, small)
            if not set(params) & set(accepted):
                assert small == full
        for claim in quick.claims:
            assert claim.policy in quick.policy_list()
            assert claim.than is None or claim.than in quick.policy_list()
        if quick.paper is not None:
            runs = set(quick.policy_list()) | set(quick.paper["others"])
            assert set(quick.paper["values"]) <= runs


def test_quick_values_of_some_configs(configs: dict[str, ExperimentConfig]) -> None:
    quant = configs["quantitative"].scaled(True)
    assert (quant.T, quant.seeds, quant.checkpoints) == (1000, (0, 1), (0, 500))
    assert quant.policies[0] == "linucb"  # takes no train_steps: unchanged
    assert quant.policies[1] == "neural-ucb:train_steps=50"
    assert quant.paper["values"]["neural-ucb:train_steps=50"]["sharpness"] == "1.0733 ± 0.0110"
    demo = configs["full-demo"].scaled(True)
    assert "kernel-ucb" in demo.policies and "neural-linucb:train_steps=50" in demo.policies
    size = configs["model-size"].scaled(True)  # a quick value replaces the specification's
    assert all("train_start=100," in p and "25000" not in p for p in size.policies)
    latency = configs["latency"].scaled(True)
    assert latency.latency.steps == [2, 50] and latency.latency.repeats == 1
    assert latency.latency.policies == configs["latency"].latency.policies  # not in the quick


def test_matched_protocol(configs: dict[str, ExperimentConfig]) -> None:
    matched = configs["matched"]
    assert matched.protocol == MATCHED
    quick = replace(
        QUICK_MATCHED,
        envs=("h1",),
        default_T=500,
        eval_seeds=(0, 1),
        n_trials=2,
        budget={**MATCHED_BUDGET, "train_steps": 50},  # the quick table's whole budget
    )
    assert matched.scaled(True).protocol == quick
    with pytest.raises(InputValueError, match="disjoint"):
        matched.overridden(seeds=[100], T=None)  # a tuning seed


def test_every_config_round_trips_through_json(configs: dict[str, ExperimentConfig]) -> None:
    adapter: TypeAdapter[ExperimentConfig] = TypeAdapter(ExperimentConfig)
    for config in configs.values():
        for version in (config, config.scaled(True)):
            data = version.model_dump(mode="json")
            assert json.loads(json.dumps(data)) == data
            assert data["name"] == config.name and data["path"] == str(config.path)
            assert adapter.validate_python(data) == version  # the kind picks the model
    claim = configs["ablation"].model_dump(mode="json")["claims"][1]
    assert claim == {
        "text": claim["text"],
        "check": "below",
        "policy": "range-mse",
        "metric": "final_regret",
        "than": "neural-linucb",
    }


def test_dataset_environments_are_not_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a dataset was loaded during validation")

    monkeypatch.setattr("deepbandits.envs.classification.load_dataset", refuse)
    assert load_config(CONFIG_DIR / "real-mnist.toml").env == "mnist:settings=paper"


MINIMAL = """
name = "bad"
[run]
env = "h1"
policies = ["linucb", "neural-linucb"]
T = 100
seeds = "0-1"
"""


def test_minimal_config_defaults(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(MINIMAL)
    config = load_config(path)
    assert (config.title, config.kind, config.reproduces, config.description) == (
        "bad",
        "sweep",
        (),
        "",
    )
    assert config.seeds == (0, 1) and config.checkpoints == () and config.holdout_size == 500
    assert config.quick_cpu_s is None and config.paper is None and config.claims == ()
    assert config.scaled(True) is config


def test_empty_quick_checkpoints_mean_none(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(
        _edit("T = 100", "T = 100\ncheckpoints = [0, 50]") + "[quick]\nT = 20\ncheckpoints = []"
    )
    config = load_config(path)
    assert config.checkpoints == (0, 50) and config.scaled(True).checkpoints == ()


MULTI = MINIMAL.replace(
    'env = "h1"', 'envs = ["h1:noise=fixed,noise_std=0.1", "h1:noise=fixed,noise_std=2.0"]'
)


def test_a_sweep_over_several_environments(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(
        MULTI
        + '[quick]\nT = 10\n[[claims]]\ntext = "x"\ncheck = "lowest"\npolicy = "neural-linucb"'
    )
    config = load_config(path)
    assert config.envs == ("h1:noise=fixed,noise_std=0.1", "h1:noise=fixed,noise_std=2.0")
    assert config.env == config.envs[0]  # the first, for callers of one environment
    quick = config.scaled(True)
    assert (quick.envs, quick.T, quick.claims) == (config.envs, 10, config.claims)
    data = config.model_dump(mode="json")
    assert json.loads(json.dumps(data)) == data and "env" not in data
    assert data["envs"] == list(config.envs)
    assert SweepConfig.model_validate(data) == config
    fixed = builtin_config("noise-fixed")
    assert [make_env(*parse_spec(e)[:1], **parse_spec(e)[1]).noise_std for e in fixed.envs] == [
        0.1,
        1.0,
        2.0,
    ]


def _edit(old: str, new: str) -> str:
    assert old in MINIMAL
    return MINIMAL.replace(old, new)


CLAIM = '\n[[claims]]\ntext = "x"\n'
LATENCY = 'name = "bad"\nkind = "latency"\n[latency]\npolicies = ["neural-ucb"]\n'
BROKEN = {
    "unknown key": (_edit("T = 100", "T = 100\npolicys = []"), "run.policys", "'policies'"),
    "unknown top key": (_edit('name = "bad"', 'name = "bad"\ntitel = "x"'), "titel", "'title'"),
    "wrong type": (_edit("T = 100", 'T = "100"'), "run.T", "an integer >= 1, got '100'"),
    "T zero": (_edit("T = 100", "T = 0"), "run.T", "an integer >= 1, got 0"),
    "T missing": (_edit("T = 100", ""), "run.T", "nothing (the key is missing)"),
    "repeated seeds": (_edit('seeds = "0-1"', "seeds = [0, 1, 0]"), "run.seeds[2]", "twice"),
    "repeated seed range": (_edit('"0-1"', '"0-2,1"'), "run.seeds", "more than once"),
    "negative seed": (_edit('"0-1"', "[-1]"), "run.seeds[0]", "an integer >= 0, got -1"),
    "bad policy": (_edit('"linucb",', '"linucb:alph=1",'), "run.policies[0]", "'alpha'"),
    "repeated policy": (_edit('"neural-linucb"', '"linucb"'), "run.policies[1]", "twice"),
    "unknown env": (_edit('env = "h1"', 'env = "h9"'), "run.env", "unknown environment"),
    "dataset env keyword": (_edit('"h1"', '"mnist:preproces=l2"'), "run.env", "preproces"),
    "checkpoint after T": (
        _edit("T = 100", "T = 100\ncheckpoints = [0, 200]"),
        "run.checkpoints",
        "<= T = 100",
    ),
    "quick checkpoint": (
        MINIMAL + "[quick]\nT = 10\ncheckpoints = [20]",
        "quick.checkpoints",
        "<= the quick T = 10",
    ),
    "unused policy param": (
        MINIMAL + "[quick]\npolicy_params = { foo = 1 }",
        "quick.policy_params.foo",
        "takes",
    ),
    "bad policy param": (
        MINIMAL + "[quick]\npolicy_params = { train_steps = -1 }",
        "quick.policy_params",
        "train_steps",
    ),
    "claim policy": (
        MINIMAL + CLAIM + 'check = "lowest"\npolicy = "neural-ucb"',
        "claims[0].policy",
        "a policy of run.policies",
    ),
    "claim without than": (
        MINIMAL + CLAIM + 'check = "below"\npolicy = "linucb"',
        "claims[0].than",
        "nothing",
    ),
    "claim than itself": (
        MINIMAL + CLAIM + 'check = "below"\npolicy = "linucb"\nthan = "linucb"',
        "claims[0].than",
        "other than",
    ),
    "claim check": (
        MINIMAL + CLAIM + 'check = "best"\npolicy = "linucb"',
        "claims[0].check",
        "'lowest', 'highest', 'below', 'above'",
    ),
    "claim metric": (
        MINIMAL + CLAIM + 'check = "lowest"\npolicy = "linucb"\nmetric = "regret"',
        "claims[0].metric",
        "'final_regret'",
    ),
    "bad kind": (
        _edit('name = "bad"', 'name = "bad"\nkind = "grid"'),
        "kind",
        "'sweep', 'latency', 'matched', got 'grid'",
    ),
    "other kind's table": (MINIMAL + "[latency]\nrounds = 1", "latency", "no [latency] table"),
    "wrong name": (_edit('"bad"', '"good"'), "name", "the file's stem 'bad'"),
    "paper policy": (
        MINIMAL
        + '[paper]\nsource = "s"\nmetrics = { sharpness = "s" }\n'
        + 'values = { x = { sharpness = "1" } }',
        "paper.values.x",
        "a policy of run.policies",
    ),
    "paper metric": (
        MINIMAL + '[paper]\nsource = "s"\nmetrics = { sharp = "s" }\nvalues = {}',
        "paper.metrics.sharp",
        "a metric of the report's summary",
    ),
    "paper metric not in the summary": (
        MINIMAL + '[paper]\nsource = "s"\nmetrics = { variance_error = "v" }\nvalues = {}',
        "paper.metrics.variance_error",
        "a metric of the report's summary: one of final_regret,",
    ),
    "quick params make policies equal": (
        _edit(
            '"linucb", "neural-linucb"',
            '"neural-linucb:train_steps=100", "neural-linucb:train_steps=200"',
        )
        + "[quick]\npolicy_params = { train_steps = 5 }",
        "quick.policy_params",
        "'neural-linucb:train_steps=100' and 'neural-linucb:train_steps=200' both become "
        "'neural-linucb:train_steps=5'",
    ),
    "env and envs": (
        _edit('env = "h1"', 'env = "h1"\nenvs = ["h2"]'),
        "run.envs",
        "exactly one of 'env' and 'envs', got ['h2']",
    ),
    "neither env nor envs": (
        _edit('env = "h1"', ""),
        "run.env",
        "exactly one of 'env' and 'envs', got nothing",
    ),
    "bad env of envs": (_edit('env = "h1"', 'envs = ["h1", "h9"]'), "run.envs[1]", "h9"),
    "repeated env": (_edit('env = "h1"', 'envs = ["h1", "h1"]'), "run.envs[1]", "twice"),
    "envs with one label": (
        _edit('env = "h1"', 'envs = ["h1:d=4,noise_std=1", "h1:d=4, noise_std=1"]'),
        "run.envs[1]",
        "'h1:d=4,noise_std=1' has the same label 'h1__d=4_noise_std=1'",
    ),
    "empty envs": (_edit('env = "h1"', "envs = []"), "run.envs", "a non-empty list"),
    "cost": (MINIMAL + "[cost]\nquick_cpu_s = -1\nfull_cpu_s = 1", "cost.quick_cpu_s", ">= 0"),
    "latency paper": (
        LATENCY + "paper = { neural-ts = [1, 2] }",
        "latency.paper.neural-ts",
        "a policy of latency.policies",
    ),
    "latency steps": (
        LATENCY + "[quick.latency]\nsteps = [0]",
        "quick.latency.steps[0]",
        "an integer >= 1",
    ),
    "matched reference": (
        'name = "bad"\nkind = "matched"\n[matched]\nreference = "neural-ucb:alpha=1"',
        "matched",
        "not among the policies",
    ),
    # the constraints of pydantic's types, in the same words
    "negative count": (
        _edit("T = 100", "T = 100\nholdout_size = -3"),
        "run.holdout_size",
        "expected an integer >= 1, got -3",
    ),
    "bool for an integer": (_edit("T = 100", "T = true"), "run.T", "an integer >= 1, got True"),
    "float for an integer": (_edit("T = 100", "T = 1.5"), "run.T", "an integer >= 1, got 1.5"),
    "blank text": (
        _edit('name = "bad"', 'name = "bad"\ntitle = "  "'),
        "title",
        "expected a non-empty string, got '  '",
    ),
    "string of the wrong type": (
        _edit('name = "bad"', 'name = "bad"\ndescription = 3'),
        "description",
        "expected a string, got 3",
    ),
    "infinite cost": (
        MINIMAL + "[cost]\nquick_cpu_s = inf\nfull_cpu_s = 1",
        "cost.quick_cpu_s",
        "expected a finite number >= 0, got inf",
    ),
    "wrong literal": (
        MINIMAL + CLAIM + 'check = "Lowest"\npolicy = "linucb"',
        "claims[0].check",
        "expected one of 'lowest', 'highest', 'below', 'above', got 'Lowest'",
    ),
    "kind of the wrong type": (
        _edit('name = "bad"', 'name = "bad"\nkind = 3'),
        "kind",
        "expected one of 'sweep', 'latency', 'matched', got 3",
    ),
    "seeds of the wrong type": (
        _edit('seeds = "0-1"', "seeds = 3"),
        "run.seeds",
        'expected seeds such as "0-4" or "1,3,5", or a list of integers >= 0, got 3',
    ),
    "empty seeds": (_edit('seeds = "0-1"', "seeds = []"), "run.seeds", "integers >= 0, got []"),
    "policies not a list": (
        _edit('policies = ["linucb", "neural-linucb"]', 'policies = "linucb"'),
        "run.policies",
        "expected a non-empty list of distinct items, got 'linucb'",
    ),
    "run not a table": (
        _edit("[run]", "run = 3\n[other]"),
        "run",
        "expected a [run] table in a config of kind 'sweep', got 3",
    ),
    "run missing": (
        'name = "bad"\n',
        "run",
        "a [run] table in a config of kind 'sweep', got nothing",
    ),
    "unknown key with a close match": (
        _edit("T = 100", "T = 100\nchekpoints = [1]"),
        "run.chekpoints",
        "(did you mean 'checkpoints'?), got the unknown key 'chekpoints'",
    ),
    "unknown quick key with a close match": (
        LATENCY + "[quick.latency]\nrepeat = 1",
        "quick.latency.repeat",
        "expected a key of [quick.latency]: policies, rounds, train_every, steps, feature_dim, "
        "repeats, threads, paper (did you mean 'repeats'?)",
    ),
    "paper of a sweep in a latency config": (
        LATENCY + '[paper]\nsource = "x"',
        "paper",
        "expected no [paper] table in a config of kind 'latency' (a table of kind 'sweep')",
    ),
    "latency timing of one number": (
        LATENCY + "paper = { neural-ucb = [1] }",
        "latency.paper.neural-ucb",
        "expected [arm selection seconds, update seconds], got [1]",
    ),
    "negative latency timing": (
        LATENCY + "paper = { neural-ucb = [1, -2] }",
        "latency.paper.neural-ucb[1]",
        "expected a finite number >= 0, got -2",
    ),
    "quick latency count": (
        LATENCY + "[quick.latency]\nrounds = 0",
        "quick.latency.rounds",
        "expected an integer >= 1, got 0",
    ),
    "matched horizon": (
        'name = "bad"\nkind = "matched"\n[matched]\nT = { h1 = 0 }',
        "matched.T.h1",
        "expected an integer >= 1, got 0",
    ),
    "matched quick protocol": (
        'name = "bad"\nkind = "matched"\n[matched]\n[quick.matched]\neval_seeds = [100]',
        "quick.matched",
        "settings it refuses (tuning seeds and evaluation seeds must be disjoint",
    ),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_broken_config_names_file_and_key(tmp_path: Path, case: str) -> None:
    text, key, fragment = BROKEN[case]
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert message.startswith(f"{path}: key '{key}': expected "), message
    assert fragment in message, message
    assert (info.value.path, info.value.key) == (path, key)


def test_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('name = "bad"\n[run]\nT = = 3\n')
    with pytest.raises(ConfigError, match=r"bad\.toml: line 3: expected valid TOML") as info:
        load_config(path)
    assert info.value.key is None and info.value.line == 3
    with pytest.raises(ConfigError, match="a readable config file"):
        load_config(tmp_path / "missing.toml")


def test_config_error_pickles(tmp_path: Path) -> None:
    error = ConfigError(tmp_path / "a.toml", "run.T", "an integer", "'x'", "why")
    again = pickle.loads(pickle.dumps(error))
    assert (str(again), again.key, again.path) == (str(error), "run.T", error.path)
