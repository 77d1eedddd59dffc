"""The first hour of a new user (issue 27), the report's frictions: quick runs judge no claim
(friction 4); one number format, unbroken numeric cells, no literal backquote and figure titles
that name the environment and the experiment (friction 7)."""

import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest

from deepbandits.cli import main
from deepbandits.experiments.compare import compare
from deepbandits.experiments.report import build_report, build_suite_report
from deepbandits.experiments.report import figures as report_figures
from deepbandits.experiments.report.load import load_comparison
from deepbandits.experiments.report.paper import FAILS, HOLDS, SMOKE_TEST
from deepbandits.experiments.report.render import NUMERIC, interval, pm

CLAIMS = {
    "claims": [
        {"text": "LinUCB has the lowest regret", "check": "lowest", "policy": "linucb"},
        {"text": "alpha=1 is below LinUCB", "check": "below", "policy": "linucb:alpha=1"}
        | {"than": "linucb"},
    ]
}


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """A tiny comparison with the paper's claims beside it, as ``reproduce`` leaves it."""
    folder = tmp_path_factory.mktemp("first-hour") / "demo"
    compare(["linucb", "linucb:alpha=1"], "h1", [0, 1], 40, folder, progress=False)
    (folder / "paper_reference.json").write_text(json.dumps(CLAIMS))
    return folder


def verdicts(text: str) -> int:
    return text.count(f"| {HOLDS} |") + text.count(f"| {FAILS} |")


# ------------------------------------------------------------------ friction 4
def test_a_quick_report_judges_no_claim(results, tmp_path):
    _, full = build_report(results, tmp_path / "full")
    assert verdicts(full.read_text()) == 2 and SMOKE_TEST not in full.read_text()
    page, md = build_report(results, tmp_path / "quick", quick=True)
    text = md.read_text()
    assert verdicts(text) == 0 and text.count(f"| {SMOKE_TEST} |") == 2
    assert "Smoke test: too small to judge." in text and "T = 40, 2 seeds" in text
    html = page.read_text()
    assert f"<td>{SMOKE_TEST}</td>" in html
    assert f"<td>{HOLDS}</td>" not in html and f"<td>{FAILS}</td>" not in html
    claims = pd.read_csv(tmp_path / "quick" / "demo" / "claims.csv")
    assert set(claims["verdict"]) == {SMOKE_TEST}


def test_a_quick_folder_is_known_by_its_experiment_record(results, tmp_path):
    (results / "experiment.json").write_text(json.dumps({"name": "demo", "quick": True}))
    try:
        _, md = build_report(results, tmp_path / "r")
    finally:
        (results / "experiment.json").unlink()
    assert verdicts(md.read_text()) == 0 and SMOKE_TEST in md.read_text()


def test_reproduce_quick_prints_and_writes_no_verdict(tmp_path, capsys):
    args = ["reproduce", "linear", "--jobs", "1", "--no-progress"]
    assert main([*args, "--quick", "--out", str(tmp_path / "q")]) == 0
    out = capsys.readouterr().out
    readme = (tmp_path / "q" / "report" / "README.md").read_text()
    assert verdicts(readme) == 0 and f"| {SMOKE_TEST} |" in readme
    assert HOLDS not in out and FAILS not in out
    # the same scale without --quick is judged: the claim gets a verdict
    assert main([*args, "--seeds", "0-1", "--T", "300", "--out", str(tmp_path / "f")]) == 0
    assert verdicts((tmp_path / "f" / "report" / "README.md").read_text()) == 1


def test_the_suite_says_a_quick_experiment_is_too_small_to_judge(results, tmp_path):
    build_report(results, results / "report")  # judged, as an earlier full build left it
    rows = {}
    for quick in (True, False):
        entry = {"name": "demo", "kind": "sweep", "folder": results, "status": "done"}
        _, md = build_suite_report(results, [entry | {"quick": quick}], tmp_path / str(quick))
        text = md.read_text()
        rows[quick] = next(line for line in text.splitlines() if line.startswith("| demo |"))
        assert (verdicts(text) == 0) == quick
    assert rows[True] == f"| demo | – | done (quick) | {SMOKE_TEST} |"
    assert re.fullmatch(r"\| demo \| – \| done \(full\) \| \d/2 \|", rows[False])


# ------------------------------------------------------------------ friction 7
def decimals_of(text: str) -> int:
    return len(text.split(".")[1]) if "." in text else 0


SPREADS = [(0.116, 3.0e-05), (13.6, 1.429), (440.0, 39.8), (4422.4, 42.8), (7684.0, 188.4)]
SPREADS += [(1.131, 0.004), (647.9, 102.9), (-12.34, 5.55), (0.0996, 0.0996), (2.5e5, 1234.5)]


@pytest.mark.parametrize(("mean", "std"), SPREADS)
def test_one_rule_for_a_value_and_its_spread(mean, std):
    """The spread to two significant digits, the value to the same decimal place."""
    text = pm(mean, std)
    value, spread = text.split(" ± ")
    assert "e" not in text and "," not in text  # one notation, no separators
    place = math.floor(math.log10(float(f"{std:.2g}"))) - 1  # the spread's second digit
    for shown, exact in ((value, mean), (spread, std)):
        assert decimals_of(shown) == max(-place, 0)
        assert abs(float(shown) - exact) <= 0.5 * 10.0**place * (1 + 1e-9)
    assert decimals_of(interval(mean - std, mean + std).split(",")[0]) == decimals_of(value)


def test_the_issues_examples_read_alike():
    assert pm(0.116, 3.0e-05) == "0.116000 ± 0.000030"
    assert pm(13.6, 1.429) == "13.6 ± 1.4"
    assert pm(440.0, 39.8) == "440 ± 40"


def test_the_html_report_has_unbroken_numbers_and_no_backquote(results, tmp_path):
    page, md = build_report(results, tmp_path / "r")
    html = page.read_text()
    assert "white-space:nowrap" in html
    visible = re.sub(r"<pre>.*?</pre>", "", html, flags=re.S)
    assert "`" not in visible
    assert f"<code>{results}</code>" in html  # the Markdown's `results` rendered
    assert "`" in md.read_text()  # the Markdown keeps its code spans
    cells = re.findall(r"<td( class=\"num\")?>([^<]*)</td>", html)
    numeric = [(marked, text) for marked, text in cells if NUMERIC.match(text)]
    assert numeric and all(marked for marked, _ in numeric)
    assert any(not marked for marked, text in cells if not NUMERIC.match(text))
    assert " ± " in " ".join(text for _, text in numeric)


def test_figures_are_titled_by_environment_and_experiment(results, tmp_path, monkeypatch):
    titles = []
    draw = report_figures.regret_curves

    def spy(curves, title=""):
        titles.append(title)
        return draw(curves, title=title)

    monkeypatch.setattr(report_figures, "regret_curves", spy)
    build_report(results, tmp_path / "r")
    assert titles == ["h1, T = 40, 2 seeds — demo"]
    assert report_figures.figure_title(load_comparison(results, "demo")) == titles[0]
    assert report_figures.figure_title(load_comparison(results, "h1")) == "h1, T = 40, 2 seeds"
