"""benchmarks/defaults.py (old against new defaults) on tiny runs: records, resuming, tuned."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pandas as pd
import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "defaults.py"


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The script as a module (benchmarks/ is not a package)."""
    spec = importlib.util.spec_from_file_location("bench_defaults", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bench_defaults", module)
    spec.loader.exec_module(module)
    return module


def small(bench: ModuleType, out: Path, **kwargs: object) -> tuple[pd.DataFrame, pd.DataFrame]:
    runs, summary, failures = bench.benchmark(
        ["h1", "synth2"], ["linucb"], 60, [0], out, progress=False, **kwargs
    )
    assert failures == []
    return runs, summary


def test_old_and_new_runs_and_resume(
    bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs, summary = small(bench, tmp_path)
    csv = pd.read_csv(tmp_path / "runs.csv")
    assert len(csv) == 4
    assert set(csv["setting"]) == {"old", "new"}
    assert set(zip(csv["env"], csv["setting"], strict=True)) == {
        ("h1", "old"),
        ("h1", "new"),
        ("synth2", "old"),
        ("synth2", "new"),
    }
    cls = csv[csv["env"] == "synth2"]
    assert cls["accuracy_last"].between(0, 1).all()
    assert cls["unplayed_arms_last"].isin([0, 1, 2]).all()
    assert (cls["locked_out_arms_last"] <= cls["unplayed_arms_last"]).all()
    assert (cls["n_arms"] == 2).all()
    h1 = csv[csv["env"] == "h1"]
    assert h1["accuracy_last"].isna().all() and h1["unplayed_arms_last"].isna().all()
    assert h1["locked_out_arms_last"].isna().all()
    assert (csv["T"] == 60).all() and (csv["final_regret"] >= 0).all()

    # the settings reached the environment and the policy
    def config(env: str, setting: str) -> dict:
        path = tmp_path / "runs" / "T60" / env / setting / "linucb" / "seed_0.json"
        return json.loads(path.read_text())["config"]

    assert config("synth2", "old")["env"]["params"]["preprocess"] == "l2"
    assert config("synth2", "new")["env"]["params"]["preprocess"] == "standardize"
    assert config("h1", "old")["policy"]["params"]["alpha"] == 0.02
    assert list(summary[["env", "policy"]].itertuples(index=False, name=None)) == [
        ("h1", "linucb"),
        ("synth2", "linucb"),
    ]
    table = (tmp_path / "defaults.md").read_text()
    assert "| synth2 | linucb |" in table and "new/old" in table and "tuned" not in table

    # a second call reuses every saved run
    files = sorted((tmp_path / "runs").rglob("*.json"))
    mtimes = [f.stat().st_mtime_ns for f in files]

    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("a finished run was run again")

    monkeypatch.setattr(bench, "run_one", fail)
    again, _ = small(bench, tmp_path)
    pd.testing.assert_frame_equal(again, runs)
    assert [f.stat().st_mtime_ns for f in files] == mtimes

    # a changed setting is refused, or re-run with redo_changed (only the runs it changes)
    monkeypatch.setitem(bench.OLD_POLICY, "linucb", {"alpha": 0.5})
    with pytest.raises(ValueError, match=r"alpha 0\.02 \(now 0\.5\)"):
        small(bench, tmp_path)
    made: list[str] = []
    monkeypatch.setattr(bench, "run_one", lambda job, progress=False: made.append(job.label) or {})
    bench.benchmark(["h1"], ["linucb"], 60, [0], tmp_path, progress=False, redo_changed=True)
    assert made == ["h1/old/linucb/seed 0"]


def test_tuned_rows(bench: ModuleType, tmp_path: Path) -> None:
    tune_dir = tmp_path / "tune" / "h1_linucb"
    tune_dir.mkdir(parents=True)
    record = {
        "policy": "linucb",
        "env": "h1",
        "T": 60,
        "tuning_seeds": [100],
        "best_spec": "linucb:alpha=0.5",
        "eval": [],
    }
    (tune_dir / "tune.json").write_text(json.dumps(record))
    (tmp_path / "tune" / "other").mkdir()
    (tmp_path / "tune" / "other" / "tune.json").write_text(
        json.dumps({**record, "env": "h3"})  # not in this benchmark: left out
    )
    runs, summary = small(bench, tmp_path / "out", tuned=tmp_path / "tune")
    tuned = runs[runs["setting"] == "tuned"]
    assert list(tuned["env"]) == ["h1"]
    assert list(tuned["policy_spec"]) == ["linucb:alpha=0.5"]
    assert summary.loc[summary["env"] == "h1", "tuned_seeds"].item() == 1
    table = (tmp_path / "out" / "defaults.md").read_text()
    assert "tuned/new" in table and "linucb:alpha=0.5" in table


def test_own_data_tuning_appends_a_row_per_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """benchmarks/own_data_tuning.py: one row per table and seed, the run's own numbers."""
    monkeypatch.syspath_prepend(str(SCRIPT.parent))  # it imports defaults.py beside it
    path = SCRIPT.parent / "own_data_tuning.py"
    spec = importlib.util.spec_from_file_location("bench_own_data_tuning", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "OUT", tmp_path / "own.csv")
    assert module.main(["linucb", "--envs", "synth2", "--seeds", "0,1", "--T", "80"]) == 0
    table = pd.read_csv(tmp_path / "own.csv")
    assert list(table["seed"]) == [0, 1] and set(table["env"]) == {"synth2"}
    import deepbandits as db

    env = module.build_env("synth2", 1, 80, {})
    again = db.run("linucb", env, 80, seed=1).records
    assert table["regret"].iloc[1] == again["cum_regret"].iloc[-1]
    assert (table["locked_out_arms_last"] <= table["unplayed_arms_last"]).all()
    assert "synth2 linucb:" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        module.main(["linucb", "--envs", "mnist"])
    assert "no own table mnist" in capsys.readouterr().err
