"""A user's own log as a flat table (CSV, compressed CSV, Parquet) through load_logged, with
the library's messages for what it cannot read."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import deepbandits as db
from deepbandits.errors import DataError, InputTypeError


def frame(n: int = 40, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "x0": rng.standard_normal(n),
            "x1": rng.standard_normal(n),
            "arm": rng.integers(0, 3, n),
            "clicked": rng.integers(0, 2, n).astype(float),
            "p": np.full(n, 1 / 3),
        }
    )


@pytest.mark.parametrize("name", ["log.csv", "log.csv.gz", "log.parquet"])
def test_a_flat_table_reads_in_each_format(tmp_path, name) -> None:
    table = frame()
    path = tmp_path / name
    table.to_parquet(path) if name.endswith("parquet") else table.to_csv(path, index=False)
    log = db.load_logged(path, action="arm", reward="clicked", propensity="p")
    assert log.contexts.shape == (40, 2) and log.n_actions == 3
    np.testing.assert_array_equal(log.contexts, table[["x0", "x1"]].to_numpy())
    np.testing.assert_array_equal(log.actions, table["arm"])
    np.testing.assert_array_equal(log.rewards, table["clicked"])
    chosen = db.load_logged(path, action="arm", reward="clicked", propensity="p", features=["x1"])
    np.testing.assert_array_equal(chosen.contexts[:, 0], table["x1"])


def test_what_a_flat_table_cannot_be_is_said_by_file_row_and_column(tmp_path) -> None:
    path = tmp_path / "log.csv"
    frame().to_csv(path, index=False)
    with pytest.raises(DataError, match=r"lacks the column\(s\) 'action', 'reward'"):
        db.load_logged(path, propensity="p")
    with pytest.raises(DataError, match="lacks the feature column"):
        db.load_logged(path, action="arm", reward="clicked", propensity="p", features=["x9"])
    with pytest.raises(InputTypeError, match="features must be a list of column names"):
        db.load_logged(path, action="arm", reward="clicked", propensity="p", features="x0")
    stray = frame()
    stray["x1"] = stray["x1"].astype(object)
    stray.loc[7, "x1"] = "oops"
    stray.to_csv(path, index=False)
    with pytest.raises(
        DataError, match=r"log.csv, row 7, column 'x1': expected a number, got 'oops'"
    ):
        db.load_logged(path, action="arm", reward="clicked", propensity="p")
    ids = frame()
    ids["user"] = [f"u{i}" for i in range(len(ids))]
    ids.to_csv(path, index=False)
    with pytest.raises(DataError, match="column 'user' holds text"):
        db.load_logged(path, action="arm", reward="clicked", propensity="p")
    kept = db.load_logged(
        path, action="arm", reward="clicked", propensity="p", features=["x0", "x1"]
    )
    assert kept.contexts.shape == (40, 2)
    bad = frame()
    bad.loc[3, "p"] = 0.0
    bad.to_csv(path, index=False)
    with pytest.raises(DataError, match=r"log\.csv: propensities must lie in"):
        db.load_logged(path, action="arm", reward="clicked", propensity="p")
