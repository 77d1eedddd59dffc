"""benchmarks/ope_obp.py without obp (obp is never in the test venv): the inputs it builds, the
tolerance check (a 1e-9 difference fails it), the recomputed obp definitions and the tables."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "ope_obp.py"
OBP_SIDE = ROOT / "benchmarks" / "obp" / "run_obp.py"


def load(path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The script as a module (benchmarks/ is not a package)."""
    return load(SCRIPT, "bench_ope_obp", monkeypatch)


def test_inputs_are_seeded_and_consistent(bench: ModuleType) -> None:
    a, b = bench.inputs(500, 3), bench.inputs(500, 3)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.array_equal(a["reward"], bench.inputs(500, 4)["reward"])
    rows = np.arange(500)
    assert np.allclose(a["action_dist"].sum(axis=1), 1.0)
    assert np.array_equal(a["pscore"], a["logging_dist"][rows, a["action"]])
    assert np.array_equal(a["action_embed"], a["embed"][a["action"]])
    assert ((a["q_hat"] >= 0) & (a["q_hat"] <= 1)).all()
    # p_e_a is the one-hot of each arm's categories, one per dimension
    p = a["p_e_a"]
    assert p.shape == (bench.N_ACTIONS, 3, 2) and np.array_equal(p.sum(axis=1), np.ones((10, 2)))
    assert np.array_equal(p.argmax(axis=1), a["embed"])
    assert len({tuple(e) for e in a["embed"]}) == 6


def test_ours_on_the_inputs_and_the_payload(bench: ModuleType, tmp_path: Path) -> None:
    from deepbandits.ope import ESTIMATORS

    data = bench.inputs(400, 0)
    chosen = [c for c in bench.cases(ESTIMATORS) if c.key in {"ips", "switch-dr-slope", "mips"}]
    ours = bench.ours_same(data, chosen)
    w = data["action_dist"][np.arange(400), data["action"]] / data["pscore"]
    assert ours["ips"]["estimate"] == pytest.approx(float(np.mean(w * data["reward"])), abs=1e-12)
    assert ours["ips"]["chosen"] is None
    assert ours["switch-dr-slope"]["chosen"] is not None
    path = tmp_path / "in.npz"
    path.write_bytes(bench.obp_payload(data, chosen, np.ones(400)))
    saved = np.load(path)
    spec = json.loads(str(saved["cases"]))
    assert [c["key"] for c in spec] == ["ips", "switch-dr-slope", "mips"]
    assert spec[1]["kwargs"]["lambdas"][-1] == float("inf")  # JSON's Infinity reads back
    assert {"action_embed", "p_e_a", "logging_dist", "importance_weights"} <= set(saved.files)


def test_every_case_names_an_estimator_both_have(bench: ModuleType) -> None:
    from deepbandits.ope import ESTIMATORS, make_estimator

    chosen = bench.cases(ESTIMATORS)
    keys = [c.key for c in chosen]
    assert len(set(keys)) == len(keys)
    for case in chosen:
        assert make_estimator(case.ours).short == case.key
    assert [c.key for c in bench.cases({"ips"})][-1] == "sg-dr-slope"  # no mips/bipw: left out


def rows(bench: ModuleType, diff: float) -> tuple[list, dict, dict]:
    chosen = [bench.Case("ips", "IPS", "ips", "InverseProbabilityWeighting")]
    ours = {"ips": {"estimate": 0.5, "seconds": 0.1, "chosen": None}}
    theirs = {"ips": {"estimate": 0.5 + diff, "seconds": 0.2, "chosen": None}}
    return chosen, ours, theirs


def test_a_difference_of_1e_9_fails_the_check(bench: ModuleType) -> None:
    table = bench.compare(*rows(bench, 1e-9))
    assert not table["within"].iloc[0]
    (message,) = bench.failures(table)
    assert "ips" in message and "1e-09" in message
    assert bench.failures(bench.compare(*rows(bench, 1e-11))) == []
    assert len(bench.failures(bench.compare(*rows(bench, float("nan"))))) == 1


def test_a_difference_obp_s_definition_explains_passes(bench: ModuleType) -> None:
    chosen, ours, theirs = rows(bench, 0.1)
    table = bench.compare(chosen, ours, theirs, definitions={"ips": 0.6})
    assert table["explained"].iloc[0] and bench.failures(table) == []
    table = bench.compare(chosen, ours, theirs, definitions={"ips": 0.6 + 1e-9})
    assert not table["explained"].iloc[0] and len(bench.failures(table)) == 1


def test_obp_definitions(bench: ModuleType) -> None:
    data = bench.inputs(300, 1)
    assert set(bench.obp_definitions(data)) == {"snmips"}  # bipw is defined alike now
    # one-dimensional embeddings: obp's product of marginals is the marginal, i.e. SNMIPS
    one = {**data, "p_e_a": data["p_e_a"][:, :, :1], "action_embed": data["action_embed"][:, :1]}
    members = data["p_e_a"][:, :, 0]
    rows_ = np.arange(300)
    e = data["action_embed"][:, 0]
    mw = (data["action_dist"] @ members)[rows_, e] / (data["logging_dist"] @ members)[rows_, e]
    expected = float(np.sum(mw * data["reward"]) / np.sum(mw))
    assert bench.obp_definitions(one)["snmips"] == pytest.approx(expected, abs=1e-12)


def test_same_inputs_table(bench: ModuleType) -> None:
    chosen, ours, theirs = rows(bench, 2e-9)
    text = bench.same_inputs_table(bench.compare(chosen, ours, theirs))
    lines = text.splitlines()
    assert lines[0].startswith("| estimator |") and len(lines) == 3
    assert "2.0e-09 (ABOVE)" in lines[2]
    assert lines[2].count("|") == lines[0].count("|")


def test_chosen_and_shown(bench: ModuleType) -> None:
    assert bench.chosen_of("Switch-DR, τ by SLOPE (SLOPE chose tau=10)") == 10.0
    assert bench.chosen_of("DRos, λ by SLOPE (SLOPE chose lam=inf)") == float("inf")
    assert bench.chosen_of("DR") is None
    assert bench.shown(None) == "–" and bench.shown(float("inf")) == "inf"
    assert bench.runs_choice([10.0] * 3) == "10 (3 of 3)"
    assert bench.runs_choice([10.0, 50.0, 10.0]) == "10 ×2, 50 ×1"


def test_obd_rows_and_table(bench: ModuleType) -> None:
    ours = pd.DataFrame(
        {
            "estimator": ["ips", "switch-dr-slope"],
            "name": ["IPS", "Switch-DR, τ by SLOPE (SLOPE chose tau=0)"],
            "estimate": [0.004, 0.0041],
            "lower": [0.003, 0.0039],
            "upper": [0.005, 0.0043],
            "covered": [True, False],
            "rel_error_mean": [0.3, 0.2],
            "rel_error_std": [0.1, 0.05],
        }
    )
    row = {"lower": 0.0, "upper": 1.0, "estimate": 0.004, "kwargs": {}, "chosen": None}
    theirs = {
        "campaign": "all",
        "truth": 0.0042,
        "rows": [
            {**row, "key": "ips", "origin": "example", "rel_errors": [0.2, 0.4], "chosen_runs": []},
            {
                **row,
                "key": "switch-dr-slope",
                "origin": "example",
                "rel_errors": [0.1, 0.3],
                "chosen": 10.0,
                "chosen_runs": [10.0, 10.0],
                "kwargs": {"lambdas": [10.0, float("inf")]},
            },
            {**row, "key": "dr-os", "origin": "added", "rel_errors": [0.5], "chosen_runs": []},
        ],
    }
    table = bench.obd_rows(ours, theirs)
    assert list(table["key"]) == ["ips", "switch-dr-slope", "dr-os"]
    assert table.loc[0, "obp_rel_error_mean"] == pytest.approx(0.3)
    assert table.loc[0, "obp_rel_error_std"] == pytest.approx(np.std([0.2, 0.4], ddof=1))
    assert table.loc[1, "db_chosen"] == 0.0 and table.loc[1, "obp_grid"] == "10, inf"
    assert table.loc[0, "published"]  # obp's published numbers for campaign all
    text = bench.obd_table(table, 2).splitlines()
    assert text[2].startswith("| all: 0.0042 | ips | fixed | 0.300 ± 0.100 | yes |")
    assert "| 0 | 0.200 ± 0.141 | yes | 10; 10 (2 of 2) |" in text[3]
    assert text[4].startswith("|  | dr-os * | fixed, λ = 100 | – | – | – | 0.500 (1 run) | yes |")
    assert all(line.count("|") == text[0].count("|") for line in text)


def test_render_writes_both_parts(bench: ModuleType) -> None:
    chosen, ours, theirs = rows(bench, 0.0)
    same = bench.compare(chosen, ours, theirs)
    text = bench.render("python benchmarks/ope_obp.py", 100, same, {"obp": "0.5.7"})
    assert text.startswith("# Off-policy estimates")
    assert "Largest difference where both libraries define the estimator alike: 0.0e+00" in text
    assert "Open Bandit Dataset" not in text  # no OBD part given


def test_data_dir(bench: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert bench.data_dir(str(tmp_path)) == tmp_path
    monkeypatch.setenv("DEEPBANDITS_DATA", str(tmp_path / "env"))
    assert bench.data_dir(None) == tmp_path / "env"
    monkeypatch.delenv("DEEPBANDITS_DATA")
    monkeypatch.setattr(bench, "ROOT", tmp_path / "repo")
    (tmp_path / "shared" / "data").mkdir(parents=True)
    assert bench.data_dir(None) == tmp_path / "shared" / "data"


def test_run_obp_says_how_to_get_obp(bench: ModuleType, tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="make obp"):
        bench.run_obp(["same-inputs"], python=tmp_path / "missing" / "python")


def test_the_obp_side_imports_without_obp(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    side = load(OBP_SIDE, "bench_run_obp", monkeypatch)
    keys = [key for key, *_ in side.OBD_ESTIMATORS]
    assert len(set(keys)) == len(keys)
    assert 1.0 not in side.SG_GRID  # obp's sub-Gaussian weight is 0/0 there where w = 0
    out = tmp_path / "sub" / "out.json"
    side.write_json(out, {"x": float("inf"), "y": side.plain(np.float64(0.1))})
    assert json.loads(out.read_text()) == {"x": float("inf"), "y": 0.1}
    assert [p.name for p in out.parent.iterdir()] == ["out.json"]
