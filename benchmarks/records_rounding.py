"""How much of a run's regret is float rounding (not a test):
``python benchmarks/records_rounding.py DATASET SPEC [SPEC ...] [--seeds 1,2] [--T 10000]
[--kernels native,avx2,baseline] [--jobs 2]``.

Plays each policy specification (``NAME[:key=value,...]``, built as :func:`deepbandits.run`
builds it, with the dataset's recommended settings for what it leaves out) on the dataset, read
from ``$DEEPBANDITS_DATA``, once per seed under each set of CPU kernels. Nothing but the
kernels changes between two runs of a seed: the same data, the same initial weights, the same
arithmetic in another order of rounding. So the spread of a seed's final regret over the
kernel sets is the part of the regret that float rounding decides, the part a user on another
CPU gets differently (Records page, fourteenth and fifteenth rounds).

The kernel sets, chosen by environment variables that torch, oneDNN, MKL and OpenBLAS read when
they load (so each run is its own process):

- ``native``: whatever this CPU runs by default;
- ``avx2``: ``ATEN_CPU_CAPABILITY=avx2``, ``MKL_CBWR=AVX2``, ``ONEDNN_MAX_CPU_ISA=AVX2``,
  ``OPENBLAS_CORETYPE=Haswell``;
- ``baseline``: ``ATEN_CPU_CAPABILITY=default`` (torch's kernels without vector extensions),
  ``MKL_CBWR=COMPATIBLE``, ``ONEDNN_MAX_CPU_ISA=SSE41``, ``OPENBLAS_CORETYPE=Nehalem``.

A set whose instructions this CPU lacks (per ``/proc/cpuinfo``) is refused before anything
runs; on a machine without that file (not Linux, or not x86) the variables are passed as given.
Each row says which capability torch reported (``torch.backends.cpu.get_cpu_capability()``),
and a set whose kernels came out the same as another's gives the same run, bit for bit.

Appends one row per run to ``benchmarks/results/records_<dataset>_rounding_kernels.csv``: the
specification, the seed, the kernel set, T, the capability torch reported, the cumulative regret
at t = 1,000 and 4,096, the final regret and the wall time. At the end it prints, per
specification and seed, the final regrets and their range.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd

from _output import append_row
from deepbandits.specs import parse_seeds

RESULTS = Path(__file__).resolve().parent / "results"
#: The environment of each kernel set (see the module's notes).
KERNELS: dict[str, dict[str, str]] = {
    "native": {},
    "avx2": {
        "ATEN_CPU_CAPABILITY": "avx2",
        "MKL_CBWR": "AVX2",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
        "OPENBLAS_CORETYPE": "Haswell",
    },
    "baseline": {
        "ATEN_CPU_CAPABILITY": "default",
        "MKL_CBWR": "COMPATIBLE",
        "ONEDNN_MAX_CPU_ISA": "SSE41",
        "OPENBLAS_CORETYPE": "Nehalem",
    },
}

#: The CPU flags each set needs (as ``/proc/cpuinfo`` names them): OpenBLAS does not check
#: them when a kernel is forced, and a forced kernel the CPU lacks stops on an illegal
#: instruction (``.ci/run`` says the same of its kernels).
NEEDS: dict[str, tuple[str, ...]] = {"native": (), "avx2": ("avx2", "fma"), "baseline": ("sse4_2",)}

#: What the child process runs: one run, its marks as one line of JSON on stdout.
_CHILD = """
import json, sys, time
import torch
import deepbandits as db
dataset, spec, seed, T = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
start = time.perf_counter()
cum = db.run(spec, db.make_env(dataset), T, seed).records["cum_regret"]
marks = {f"regret_{t}": float(cum.iloc[t - 1]) for t in (1000, 4096) if t <= T}
print(json.dumps({"capability": torch.backends.cpu.get_cpu_capability(), **marks,
                  "regret": float(cum.iloc[-1]),
                  "seconds": round(time.perf_counter() - start, 1)}))
"""


def missing_flags(kernels: str, cpuinfo: Path = Path("/proc/cpuinfo")) -> list[str]:
    """The flags of :data:`NEEDS` that the CPU lacks for the set ``kernels`` (none when
    ``cpuinfo`` cannot be read)."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return []
    line = next((ln for ln in text.splitlines() if ln.startswith("flags")), "")
    flags = set(line.partition(":")[2].split())
    return [flag for flag in NEEDS[kernels] if flag not in flags] if flags else []


def run_row(dataset: str, spec: str, seed: int, T: int, kernels: str) -> dict:
    """One run of ``spec`` in a process of its own under the kernel set ``kernels``."""
    env = {**os.environ, **KERNELS[kernels]}
    args = [sys.executable, "-c", _CHILD, dataset, spec, str(seed), str(T)]
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{spec}, seed {seed}, kernels {kernels} failed:\n{done.stderr}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    return {"spec": spec, "seed": seed, "kernels": kernels, "T": T, **out}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset")
    parser.add_argument("specs", nargs="+")
    parser.add_argument("--seeds", default="1,2", help="seeds: '1,2' or '1-3'")
    parser.add_argument("--T", type=int, default=10000)
    parser.add_argument("--kernels", default="native,avx2,baseline")
    parser.add_argument("--jobs", type=int, default=2, help="runs at a time (one core each)")
    args = parser.parse_args(argv)
    kernel_sets = args.kernels.split(",")
    unknown = sorted(set(kernel_sets) - set(KERNELS))
    if unknown:
        parser.error(f"--kernels: unknown {unknown}; expected some of {sorted(KERNELS)}")
    for kernels in kernel_sets:
        if lacking := missing_flags(kernels):
            parser.error(f"--kernels: this CPU cannot run '{kernels}', it lacks {lacking}")
    out = RESULTS / f"records_{args.dataset}_rounding_kernels.csv"
    seeds = parse_seeds(args.seeds)
    jobs = [(spec, seed, k) for spec in args.specs for seed in seeds for k in kernel_sets]
    rows: list[dict] = []
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(run_row, args.dataset, s, seed, args.T, k) for s, seed, k in jobs]
        for future in futures:
            row = future.result()
            print(row, flush=True)
            rows.append(row)
            append_row(out, row)
    for (spec, seed), group in pd.DataFrame(rows).groupby(["spec", "seed"], sort=False):
        pairs = zip(group.kernels, group.regret, strict=True)
        finals = ", ".join(f"{k} {r:,.0f}" for k, r in pairs)
        spread = group.regret.max() - group.regret.min()
        print(f"{spec}, seed {seed}: {finals}; range {spread:,.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
