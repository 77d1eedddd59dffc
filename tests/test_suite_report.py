"""The report of a whole suite of experiments (``deepbandits reproduce --all``, issue 16)."""

import json
import re
import shutil
from pathlib import Path

import pytest

from deepbandits.experiments.compare import compare, label_of
from deepbandits.experiments.report.render import markdown_html, slug
from deepbandits.experiments.sweep import failed_path
from deepbandits.report import build_report, build_suite_report

LATENCY_MD = """# Latency: seconds per 100 rounds

MNIST-shaped contexts, **mean** over `3` repeats.

| policy | arm selection (s) | paper (s) |
|---|---|---|
| linucb | 0.010 | 0.02 |
"""


def suite(root: Path) -> list[dict]:
    """Two tiny sweeps (one with its report already built, as ``reproduce`` leaves it), a
    failed experiment, a failed sweep with the report of its finished runs and a latency one."""
    for name in ("sweep-a", "sweep-b"):
        compare(["linucb", "linucb:alpha=1"], "h1", [0, 1], 30, root / name, progress=False)
    reference = {
        "source": "Table x",
        "metrics": {"final_regret": "final regret"},
        "values": {"linucb": {"final_regret": "12 ± 3"}},
        "claims": [
            {"text": "LinUCB wins", "check": "lowest", "policy": "linucb"},
            {"text": "alpha=1 wins", "check": "lowest", "policy": "linucb:alpha=1"},
        ],
    }
    (root / "sweep-a" / "paper_reference.json").write_text(json.dumps(reference))
    build_report(root / "sweep-a", root / "sweep-a" / "report")
    latency = root / "latency"
    latency.mkdir()
    (latency / "latency.md").write_text(LATENCY_MD)
    (latency / "latency_steps2.png").write_bytes(b"\x89PNG fake")
    (latency / "latency_steps2.svg").write_text("<svg/>")
    common = {"title": "", "quick": False}  # full scale: the claims are judged
    return [
        {**common, "name": "sweep-a", "title": "Fig. A", "reproduces": ["Fig. a"], "kind": "sweep"}
        | {"folder": root / "sweep-a", "status": "done", "error": None},
        {**common, "name": "sweep-b", "reproduces": ["Fig. b"], "kind": "sweep"}
        | {"folder": root / "sweep-b", "status": "done", "error": None},
        {**common, "name": "broken", "reproduces": ["Table c"], "kind": "sweep"}
        | {"folder": root / "broken", "status": "failed"}
        | {"error": "Traceback (most recent call last):\n  ...\nDataError: no <mnist> here"},
        {**common, "name": "partial", "reproduces": ["Fig. a"], "kind": "sweep"}
        | {"folder": root / "sweep-a", "status": "failed", "error": "SweepFailedError: 1 job"},
        {**common, "name": "latency", "reproduces": ["Table latency"], "kind": "latency"}
        | {"folder": latency, "status": "done", "error": None},
    ]


def links(page: Path, md: Path) -> list[str]:
    return re.findall(r'(?:src|href)="([^"]+)"', page.read_text()) + re.findall(
        r"\]\(([^)]+)\)", md.read_text()
    )


def test_suite_report_names_every_experiment_and_links_only_its_own_files(tmp_path):
    root = tmp_path / "paper"
    entries = suite(root)
    page, md = build_suite_report(root, entries, root / "report")
    readme, text = md.read_text(), page.read_text()
    rows = {line.split(" | ")[0][2:]: line for line in readme.splitlines() if line.startswith("| ")}
    assert rows["sweep-a"] == "| sweep-a | Fig. a | done (full) | 1/2 |"
    assert rows["sweep-b"] == "| sweep-b | Fig. b | done (full) | – |"
    assert rows["broken"] == "| broken | Table c | failed (full) | – |"
    assert rows["partial"] == "| partial | Fig. a | failed (full) | 1/2 |"
    assert rows["latency"].startswith("| latency | Table latency | done (full) |")
    for heading in ("## sweep-a: Fig. A", "## sweep-b", "## broken", "## latency"):
        assert heading in readme
    assert "<h2>sweep-a: Fig. A</h2>" in text and "<h2>broken</h2>" in text
    # the paper's numbers, the claims and the error
    assert "| linucb | 12 ± 3 / 12 ± 3 |" not in readme and "/ 12 ± 3 |" in readme
    assert "| LinUCB wins |" in readme and "| alpha=1 wins |" in readme
    assert "Failed:\n\n```\nTraceback (most recent call last):" in readme
    assert "DataError: no &lt;mnist&gt; here" in text and "<mnist>" not in text
    # the latency experiment's document, rendered
    assert "### Latency: seconds per 100 rounds" in readme
    assert "<h3>Latency: seconds per 100 rounds</h3>" in text
    assert "<strong>mean</strong> over <code>3</code>" in text
    assert "<tr><th>policy</th><th>arm selection (s)</th>" in text
    # every link is a file under the report folder, so the folder can be moved as it is
    refs = links(page, md)
    assert len(refs) >= 2 * 2 * 4 + 2  # two sweeps of four figures (PNG + SVG), latency's
    for ref in refs:
        assert not ref.startswith("/") and ".." not in ref, ref
    moved = tmp_path / "moved"
    shutil.move(root / "report", moved)
    for ref in refs:
        assert (moved / ref).is_file(), ref
    for name in (
        "partial/sweep-a/regret.png",
        "sweep-a/sweep-a/regret.png",
        "sweep-b/sweep-b/regret.svg",
        "latency/latency.md",
    ):
        assert (moved / name).is_file()
    assert (root / "sweep-b" / "report" / "index.html").is_file()  # built for the suite


def test_suite_entries_are_validated(tmp_path):
    entry = {"name": "x", "kind": "sweep", "folder": tmp_path, "status": "done"}
    with pytest.raises(ValueError, match=r"entries\[0\].kind"):
        build_suite_report(tmp_path, [{**entry, "kind": "sweeep"}], tmp_path / "r")
    with pytest.raises(ValueError, match=r"entries\[1\]: key 'status' is missing"):
        build_suite_report(
            tmp_path, [entry, {k: v for k, v in entry.items() if k != "status"}], tmp_path / "r"
        )
    with pytest.raises(ValueError, match="more than once"):
        build_suite_report(tmp_path, [entry, entry], tmp_path / "r")


def test_markdown_lists_nest_and_close():
    html = "\n".join(markdown_html("intro\n- **T**: 5\n  - h1: `a`\n- seeds\n\nend"))
    assert html == "\n".join(
        [
            "<p>intro</p>",
            "<ul>",
            "<li><strong>T</strong>: 5</li>",
            "<ul>",
            "<li>h1: <code>a</code></li>",
            "</ul>",
            "<li>seeds</li>",
            "</ul>",
            "<p>end</p>",
        ]
    )


def test_a_sweep_over_several_environments_shows_every_comparison(tmp_path):
    """One comparison per environment (``<folder>/<environment label>``), as ``reproduce``
    writes a config with ``envs``; a report built before the second environment ran is built
    again. A policy whose jobs failed in one environment leaves its claim there not run."""
    folder = tmp_path / "noise"
    envs = ["h1:noise=fixed,noise_std=0.1", "h1:noise=fixed,noise_std=2.0"]
    reference = {"claims": [{"text": "LinUCB wins", "check": "lowest", "policy": "linucb"}]}
    for i, env in enumerate(envs):
        out = folder / label_of(env)
        compare(["linucb", "linucb:alpha=1"], env, [0, 1], 30, out, progress=False)
        (out / "paper_reference.json").write_text(json.dumps(reference))
        if i == 0:
            build_report(folder, folder / "report")  # stale once the second one ran
    failed = failed_path(folder / label_of(envs[1]) / "neural-ucb" / "seed_0")
    failed.parent.mkdir()
    failed.write_text(json.dumps({"job": {"policy": "neural-ucb"}, "error": "boom"}))
    entry = {"name": "noise", "kind": "sweep", "folder": folder, "status": "done", "quick": False}
    _, md = build_suite_report(tmp_path, [entry], tmp_path / "report")
    readme = md.read_text()
    for env in envs:
        assert f"### {slug(label_of(env))}" in readme
        assert (tmp_path / "report" / "noise" / slug(label_of(env)) / "regret.png").is_file()
    assert readme.count("| LinUCB wins |") == 2 and readme.count("| not run |") == 1
    row = next(line for line in readme.splitlines() if line.startswith("| noise |"))
    assert row == f"| noise | – | done (full) | {readme.count('| holds |')}/2 |"
