"""Tiny logged-data files in the formats deepbandits reads: an Open Bandit Dataset folder and a
decision-service export."""

import json

import numpy as np
import pandas as pd

USER_CODES = [["u0a", "u0b"], ["u1a", "u1b", "u1c"], ["u2a", "u2b"], ["u3a", "u3b"]]


def bts_policy(n_items: int) -> np.ndarray:
    """A context-free policy [3 positions, n_items] with unequal probabilities."""
    base = np.arange(1, n_items + 1, dtype=float) ** 2
    return np.stack([np.roll(base, p) / np.roll(base, p).sum() for p in range(3)])


def write_obd(root, n=600, n_items=6, seed=0, campaigns=("all",)):
    """``root/obd/{random,bts}/<campaign>/`` in OBD's CSV format; clicks are Bernoulli with a
    rate that depends on the item and the first user feature. Returns the BTS policy used."""
    rng = np.random.default_rng(seed)
    pi = bts_policy(n_items)
    for campaign in campaigns:
        for behavior in ("random", "bts"):
            folder = root / "obd" / behavior / campaign
            folder.mkdir(parents=True, exist_ok=True)
            position = rng.integers(1, 4, n)
            if behavior == "random":
                item = rng.integers(0, n_items, n)
                prop = np.full(n, 1.0 / n_items)
            else:
                item = np.array([rng.choice(n_items, p=pi[p - 1]) for p in position])
                prop = pi[position - 1, item]
            users = [rng.choice(codes, n) for codes in USER_CODES]
            rate = 0.05 + 0.3 * (item % 2 == 0) * (users[0] == "u0a")
            frame = pd.DataFrame(
                {
                    "timestamp": pd.date_range("2019-11-24", periods=n, freq="min").astype(str),
                    "item_id": item,
                    "position": position,
                    "click": (rng.random(n) < rate).astype(int),
                    "propensity_score": prop,
                    **{f"user_feature_{i}": u for i, u in enumerate(users)},
                    **{f"user-item_affinity_{i}": rng.random(n) for i in range(n_items)},
                }
            )
            frame.to_csv(folder / f"{campaign}.csv")
            items = pd.DataFrame(
                {
                    "item_id": np.arange(n_items),
                    "item_feature_0": rng.standard_normal(n_items),
                    "item_feature_1": [f"c{i % 3}" for i in range(n_items)],
                    "item_feature_2": [f"d{i % 2}" for i in range(n_items)],
                    "item_feature_3": ["e"] * n_items,
                }
            )
            items.to_csv(folder / "item_context.csv")
    return pi


def write_service_log(path, n=300, K=3, d=2, seed=0, pending=5, fmt="parquet"):
    """A decision-service export: uniform logging over K arms, reward = the arm's first context
    feature (+ noise), the last ``pending`` rows without a reward."""
    rng = np.random.default_rng(seed)
    contexts = rng.standard_normal((n, K, d))
    arm = rng.integers(0, K, n)
    reward = contexts[np.arange(n), arm, 0] + 0.1 * rng.standard_normal(n)
    frame = pd.DataFrame(
        {
            "decision_id": [f"{i:032x}" for i in range(n)],
            "time_decided": np.arange(n, dtype=float),
            "time_rewarded": np.arange(n, dtype=float) + 0.5,
            "model_version": np.arange(n),
            "action": arm,
            "propensity": np.full(n, 1.0 / K),
            "reward": np.where(np.arange(n) >= n - pending, np.nan, reward),
            "reward_range": [None] * n,
            "n_arms": np.full(n, K),
            "contexts": [c.tolist() for c in contexts],
            "mask": [None] * n,
        }
    )
    if fmt == "parquet":
        frame.to_parquet(path)
    else:
        frame["contexts"] = [json.dumps(c) for c in frame["contexts"]]
        frame["mask"] = ""
        frame["reward_range"] = ""
        frame.to_csv(path, index=False)
    return frame
