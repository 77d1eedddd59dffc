"""Experiment configs: every experiment of the paper as a TOML file, and yours in the same format.

One file per experiment (the shipped ones are ``deepbandits/experiments/configs/NAME.toml``;
:func:`builtin_configs`), read by :func:`load_config` and validated before anything runs: every
key is checked (type, range, allowed values; an unknown key is an error with the closest known
one suggested), every policy and environment specification is built once, and a
:class:`ConfigError` names the file, the dotted key, what was expected and what was given.

Each kind has a module (:mod:`~deepbandits.experiments.config.sweep`, ``.latency``,
``.matched``) with two pydantic models: its file (:class:`SweepFile`, :class:`LatencyFile`,
:class:`MatchedFile`), validated key by key with the value types of ``.fields``, and the
experiment it makes (:class:`SweepConfig`, :class:`LatencyConfig`, :class:`MatchedConfig`).
:data:`ExperimentConfig` is their union, told apart by ``kind`` (``.model``); what every kind
has is in ``.common``. A pydantic error becomes a :class:`ConfigError` (``.errors``), never
reaches the caller as it is.

Schema (``[run]``, ``[latency]`` or ``[matched]`` according to ``kind``)::

    name = "demo-h1"                  # the file's stem (default: the stem)
    title = "Fig. demo (h1)"          # one line (default: the name)
    reproduces = ["Fig. demo"]        # the paper's figures and tables (default: none)
    description = "..."               # (default: empty)
    kind = "sweep"                    # "sweep" (default), "latency" or "matched"

    [run]                             # kind "sweep": policies x seeds on each environment
    env = "h1"                        # environment specification NAME[:key=value,...]
    envs = ["h1:noise=fixed,noise_std=0.1", "h1:noise=fixed,noise_std=2"]   # or, instead of
                                      # env, several: one comparison each (in the folder
                                      # compare.label_of(env)), the claims checked in each
    policies = ["linucb", "neural-sigma2-linucb:alpha=0.1"]   # or ["all"]
    T = 10000                         # rounds per run (>= 1)
    seeds = "0-9"                     # or a list [0, 1, 2]; integers >= 0, each once
    checkpoints = [0, 2000]           # hold-out checkpoints, each <= T (default: none)
    holdout_size = 500                # hold-out rounds per checkpoint (default: 500)

    [latency]                         # kind "latency": experiments.latency.run_latency's options
    policies = [...]; rounds = 100; train_every = 10; steps = [2, 1000]; feature_dim = 64
    repeats = 3; threads = 1; paper = { neural-ucb = [6.42, 2.28] }   # (select s, update s)

    [matched]                         # kind "matched": the fields of MatchedProtocol
                                      # (defaults: MatchedProtocol's, written there only)

    [quick]                           # what --quick changes
    T = 1000; seeds = [0, 1]; checkpoints = [0, 500]   # kind "sweep" (checkpoints = []: none)
    policy_params = { train_steps = 50 }   # set in every policy that takes the key (replacing
                                           # the specification's own value); each key taken by
                                           # a policy, no two specifications made equal
    [quick.latency]                   # kind "latency": keys of [latency] replaced
    [quick.matched]                   # kind "matched": keys of [matched] replaced

    [cost]                            # expected CPU seconds on one core (optional)
    quick_cpu_s = 20.0; full_cpu_s = 650.0; note = "how the numbers were obtained"

    [paper]                           # the paper's printed numbers (kind "sweep", optional)
    source = "Table quantitative"
    metrics = { cumulative_reward = "cumulative reward" }      # summary metric -> heading
    values = { linucb = { cumulative_reward = "7459.08 ± 32.97" } }   # policy -> metric -> text

    [[claims]]                        # what the paper's text says of a figure (kind "sweep")
    text = "Neural-σ²-LinUCB has the lowest regret"
    check = "lowest"                  # "lowest" / "highest": policy's mean metric is the
                                      # lowest / highest of all; "below" / "above": policy's
                                      # mean < / > than's mean
    policy = "neural-sigma2-linucb"   # one of [run] policies (of the expansion of "all")
    than = "neural-linucb"            # required for "below"/"above", refused otherwise
    metric = "final_regret"           # a column of the report's per-run table (default)

Dataset environments are not loaded during validation (only their name and keywords are
checked); synthetic ones are built.
"""

from deepbandits.experiments.config.common import Experiment
from deepbandits.experiments.config.errors import ConfigError
from deepbandits.experiments.config.fields import ALL
from deepbandits.experiments.config.files import (
    CONFIG_DIR,
    builtin_config,
    builtin_configs,
    load_config,
)
from deepbandits.experiments.config.latency import LatencyConfig, LatencyFile
from deepbandits.experiments.config.matched import MatchedConfig, MatchedFile
from deepbandits.experiments.config.model import ExperimentConfig
from deepbandits.experiments.config.sweep import (
    CHECKS,
    METRICS,
    PAPER_METRICS,
    Claim,
    SweepConfig,
    SweepFile,
)

__all__ = [
    "ALL",
    "CHECKS",
    "CONFIG_DIR",
    "METRICS",
    "PAPER_METRICS",
    "Claim",
    "ConfigError",
    "Experiment",
    "ExperimentConfig",
    "LatencyConfig",
    "LatencyFile",
    "MatchedConfig",
    "MatchedFile",
    "SweepConfig",
    "SweepFile",
    "builtin_config",
    "builtin_configs",
    "load_config",
]
