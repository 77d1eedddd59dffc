"""The latency experiment (Table latency, Fig. latency): what it times and what it writes."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from deepbandits.errors import InputValueError
from deepbandits.experiments.latency import (
    LATENCY_COLUMNS,
    latency_markdown,
    latency_table,
    measure_latency,
    mnist_shaped_rounds,
    run_latency,
)

SMALL = "neural-linucb:hidden=8,n_layers=1"


def test_rounds_are_block_encoded_unit_images():
    rounds = mnist_shaped_rounds(3, n_arms=4, dim=5)
    assert len(rounds) == 3
    dense = rounds[0].dense()
    assert dense.shape == (4, 20)
    for k in range(4):
        block = dense[k, 5 * k : 5 * (k + 1)]
        assert (block**2).sum() == pytest.approx(1.0)
        assert (dense[k] != 0).sum() == (block != 0).sum()


def test_training_is_timed_only_for_policies_that_train():
    rounds = mnist_shaped_rounds(6, n_arms=10)
    _, linear = measure_latency("linucb", rounds, 2, train_every=2)
    select, neural = measure_latency(SMALL, rounds, 2, train_every=2)
    assert linear == 0.0
    assert neural > 0.0 and select > 0.0


def test_run_latency_writes_table_markdown_figures_and_settings(tmp_path):
    options = {
        "policies": [SMALL, "linucb"],
        "rounds": 4,
        "train_every": 2,
        "steps": [1, 3],
        "repeats": 2,
        "paper": {"neural-linucb": [0.43, 1.86]},
    }
    table = run_latency(options, tmp_path, progress=False)
    assert list(table.columns) == list(LATENCY_COLUMNS)
    assert len(table) == 2 * 2 * 2
    saved = pd.read_csv(tmp_path / "latency.csv")
    assert len(saved) == len(table)
    md = (tmp_path / "latency.md").read_text()
    assert "| neural-linucb:hidden=8,n_layers=1 | cpu | 1 |" in md
    assert "0.43" in md and "1.86" in md  # the paper's figures, by registry name
    for n in (1, 3):
        assert (tmp_path / f"latency_steps{n}.png").stat().st_size > 0
        assert (tmp_path / f"latency_steps{n}.svg").stat().st_size > 0
    meta = json.loads((tmp_path / "latency.json").read_text())
    assert meta["options"]["rounds"] == 4 and meta["device"] == "cpu"


def test_markdown_speed_up_is_paper_over_ours():
    table = pd.DataFrame(
        [
            {"policy": "a", "device": "cpu", "steps": 2, "repeat": r, "select_s": s, "update_s": u}
            for r, (s, u) in enumerate([(0.1, 1.0), (0.3, 3.0)])
        ]
    )
    md = latency_markdown(table, {"a": [0.4, 8.0]})
    assert "| a | cpu | 2 | 0.200 | 0.4 | 2× | 2.000 | 8 | 4.0× |" in md


@pytest.mark.parametrize("kwargs", [{"rounds": 0}, {"repeats": 0}, {"steps": [0]}, {"steps": []}])
def test_bad_settings_are_refused(kwargs):
    with pytest.raises(InputValueError):
        latency_table(["linucb"], **kwargs)
