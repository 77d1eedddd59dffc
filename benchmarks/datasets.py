"""Real-dataset benchmark (not a test): ``python benchmarks/datasets.py [--quick]``.

Reads the datasets from the data directory (``$DEEPBANDITS_DATA``, else
``~/.cache/deepbandits/data``; missing files are downloaded when online) and
prints two Markdown tables:

* load time of each dataset: cold (parsing the canonical files into a fresh cache folder) and
  cached (reading the ``.npz`` written by the cold load);
* rounds per second of select + update (network training excluded) on each dataset with the
  block and the dense encoding of the arm contexts, for Neural-σ²-LinUCB (d′ = 64, the paper's
  real-data setting) and LinUCB, and the speed-up of the block encoding. LinUCB on dense
  contexts keeps a (K·D)² inverse; it is skipped where that exceeds ``--max-gib``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import warnings
from pathlib import Path

import torch

import deepbandits as db
from _output import Output
from deepbandits.datasets import load_dataset

#: Where the output of a full run (not ``--quick``) is written; the manual includes it
OUT = Path(__file__).parent / "results" / "datasets.md"


def load_times(name: str) -> tuple[float, float, tuple[int, ...]]:
    with tempfile.TemporaryDirectory() as cache:
        previous = os.environ.get("XDG_CACHE_HOME")
        os.environ["XDG_CACHE_HOME"] = cache
        try:
            start = time.perf_counter()
            ds = load_dataset(name, download=False)
            cold = time.perf_counter() - start
            start = time.perf_counter()
            load_dataset(name, download=False)
            cached = time.perf_counter() - start
        finally:
            if previous is None:
                del os.environ["XDG_CACHE_HOME"]
            else:
                os.environ["XDG_CACHE_HOME"] = previous
    return cold, cached, ds.X.shape


def rounds_per_second(env: db.Environment, policy: db.Policy, T: int) -> float:
    rec = db.run(policy, env, T, seed=0).records
    return T / float((rec["time_select"] + rec["time_update"]).sum())


def training_seconds(policy: db.Policy, steps: int) -> float:
    """Seconds for ``steps`` minibatch steps on the history the policy has played."""
    start = time.perf_counter()
    policy.train_network(steps=steps)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer rounds (smoke check)")
    parser.add_argument("--max-gib", type=float, default=2.0, help="memory cap of dense LinUCB")
    args = parser.parse_args()
    torch.set_num_threads(2)
    T = 100 if args.quick else 500
    emit = Output("datasets.py")

    emit(f"torch {torch.__version__}, threads {torch.get_num_threads()}, data {db.data_home()}\n")
    emit("Load times:\n")
    emit("| dataset | samples × features | cold load (s) | cached load (s) |")
    emit("|---|---|---|---|")
    warnings.filterwarnings("ignore", message=".*partial CIFAR-10")  # said once, below
    for name in db.dataset_names():
        cold, cached, shape = load_times(name)
        emit(f"| {name} | {shape[0]:,} × {shape[1]} | {cold:.2f} | {cached:.3f} |", flush=True)
    note = load_dataset("cifar10", download=False).note
    if note:
        emit(f"\ncifar10: {note}")

    steps = 100 if args.quick else 1000
    emit(f"\nselect+update rounds/s (training excluded), {T} rounds; then one training of")
    emit(f"{steps} minibatch steps on those rounds (s):\n")
    emit("| dataset | K·D | policy | block | dense | block speed-up |")
    emit("|---|---|---|---|---|---|")
    no_training = {"train_start": 10**9, "warmup_every": 0}
    for encoding in ("block", "dense"):  # warm-up: torch's first calls are slow
        env = db.make_env("mnist", seed=0, encoding=encoding, download=False)
        rounds_per_second(env, db.make_policy("neural-sigma2-linucb", **no_training), 50)
    for name in db.dataset_names():
        for policy_name, params in (
            ("neural-sigma2-linucb", {"feature_dim": 64, **no_training}),
            ("linucb", {}),
        ):
            rates: dict[str, float | None] = {}
            train: dict[str, float] = {}
            for encoding in ("block", "dense"):
                env = db.make_env(name, seed=0, encoding=encoding, download=False)
                dim = env.n_features
                if policy_name == "linucb" and encoding == "dense":
                    gib = 2 * 8 * dim**2 / 2**30  # A and A⁻¹
                    if gib > args.max_gib:
                        rates[encoding] = None
                        continue
                policy = db.make_policy(policy_name, **params)
                rates[encoding] = rounds_per_second(env, policy, T)
                if policy_name != "linucb":
                    train[encoding] = training_seconds(policy, steps)
            block, dense = rates["block"], rates["dense"]
            dense_txt = f"{dense:,.0f}" if dense else f"skipped ({2 * 8 * dim**2 / 2**30:.0f} GiB)"
            speedup = f"{block / dense:.1f}×" if dense else "-"
            emit(
                f"| {name} | {dim:,} | {policy_name} | {block:,.0f} | {dense_txt} | {speedup} |",
                flush=True,
            )
            if train:
                b, d = train["block"], train["dense"]
                emit(
                    f"| {name} | {dim:,} | {policy_name}: training, {steps} steps (s) | {b:.2f} "
                    f"| {d:.2f} | {d / b:.1f}× |",
                    flush=True,
                )

    if not args.quick:
        emit.save(OUT, f"{os.cpu_count()} CPU cores")


if __name__ == "__main__":
    main()
