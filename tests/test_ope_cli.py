"""``deepbandits ope``: the table, the files, and one-line errors for the user's mistakes."""

import pandas as pd
import pytest

from deepbandits.cli import main
from ope_fixtures import write_obd, write_service_log


def test_ope_on_obd_prints_the_ground_truth_table_and_writes_files(tmp_path, capsys):
    write_obd(tmp_path / "data", n=800)
    out = tmp_path / "out"
    argv = [
        "ope",
        "--log",
        "obd:behavior=random,campaign=all",
        "--data-dir",
        str(tmp_path / "data"),
    ]
    argv += ["--runs", "2", "--n-bootstrap", "50", "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "truth: BTS's click rate" in printed and "relative_error" in printed
    assert "Switch-DR" in printed and "obp_mean" in printed
    table = pd.read_csv(out / "ope.csv")
    fixed = ["ips", "snips", "dm", "dr", "sndr", "switch-dr", "dr-os"]
    tuned = ["switch-dr-slope", "dr-os-slope", "sg-ips-slope", "sg-dr-slope"]
    assert list(table["estimator"]) == [*fixed, *tuned]
    # obp's published (SLOPE-tuned) Switch-DR and DRos errors stand beside the tuned rows only
    obp = table.set_index("estimator")["obp_mean"]
    assert obp[["switch-dr", "dr-os"]].isna().all()
    assert obp["switch-dr-slope"] == 0.258 and obp["dr-os-slope"] == 0.160
    assert pd.read_parquet(out / "ope.parquet").shape == table.shape
    assert (out / "ope.png").stat().st_size > 0 and (out / "ope.svg").is_file()


def test_ope_on_a_service_log_with_uniform_and_a_library_policy(tmp_path, capsys):
    path = tmp_path / "log.parquet"
    write_service_log(path, n=400)
    out = tmp_path / "out"
    argv = ["ope", "--log", str(path), "--estimators", "ips,dr", "--n-bootstrap", "50"]
    with pytest.warns(UserWarning, match="no reward yet"):
        assert main([*argv, "--policy", "uniform", "--out", str(out)]) == 0
    assert "logging policy's own value" in capsys.readouterr().out
    with pytest.warns(UserWarning, match="no reward yet"):
        code = main([*argv, "--policy", "linucb:alpha=0.1", "--replay", "--out", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "learned the first 198 rounds" in printed and "replay (" in printed
    table = pd.read_csv(out / "ope.csv")
    assert list(table["estimator"]) == ["ips", "dr", "replay"]


def test_ope_can_estimate_the_propensities_of_a_log(tmp_path, capsys):
    path = tmp_path / "log.parquet"
    write_service_log(path, n=400, pending=0)
    argv = ["ope", "--log", str(path), "--estimators", "ips,bipw", "--n-bootstrap", "50"]
    assert main([*argv, "--policy", "uniform", "--out", str(tmp_path / "a")]) == 0
    logged = pd.read_csv(tmp_path / "a" / "ope.csv").set_index("estimator")["estimate"]
    capsys.readouterr()
    code = main(
        [*argv, "--policy", "uniform", "--propensities", "estimated", "--out", str(tmp_path / "b")]
    )
    assert code == 0
    assert "propensities estimated" in capsys.readouterr().out
    estimated = pd.read_csv(tmp_path / "b" / "ope.csv").set_index("estimator")["estimate"]
    assert estimated["ips"] != logged["ips"]  # IPS reads the propensities
    assert estimated["bipw"] == logged["bipw"]  # balanced IPW never does


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--log", "obd:campaing=all"], "unknown OBD option(s) campaing"),
        (["--log", "missing.parquet", "--policy", "uniform"], "no log file"),
        (["--log", "obd", "--estimators", "ipw"], "unknown estimator(s) 'ipw'"),
        (["--log", "obd:behavior=bts"], "obd-bts is evaluated on OBD's random log"),
        (["--log", "obd", "--policy", "no-such-policy"], "no-such-policy"),
        (["--log", "obd", "--alpha", "1.5"], "--alpha"),
    ],
)
def test_ope_mistakes_are_one_line_errors(tmp_path, capsys, argv, message):
    write_obd(tmp_path, n=200)
    code = main(["ope", *argv, "--data-dir", str(tmp_path), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("deepbandits: error: ") and message in err
    assert "Traceback" not in err
