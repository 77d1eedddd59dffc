"""``deepbandits list``: what the command line accepts by name."""

from __future__ import annotations

import argparse

from deepbandits.envs import env_names
from deepbandits.experiments.config import builtin_configs
from deepbandits.policies import CONFIGURATIONS, parameter_table, policy_names


def list_command(args: argparse.Namespace) -> int:
    """``deepbandits list``: the registry names, configurations and paper experiments; with
    ``--params NAME``, the parameters of policy NAME."""
    if args.params is not None:
        rows = [
            ("parameter", "default", "type and range", "meaning"),
            *parameter_table(args.params),
        ]
        widths = [max(len(row[i]) for row in rows) for i in range(3)]
        print(f"parameters of {args.params} (set as NAME:key=value):")
        for row in rows:
            cells = [c.ljust(w) for c, w in zip(row, widths, strict=False)]
            print("  " + "  ".join([*cells, row[3]]))
        return 0
    print("policies:", ", ".join(policy_names(configurations=False)))
    print("configurations:")
    for name, (base, settings) in CONFIGURATIONS.items():
        keys = ",".join(f"{k}={v}" for k, v in settings.items())
        print(f"  {name} = {base}:{keys}")
    print("environments:", ", ".join(env_names()))
    print("paper experiments (deepbandits reproduce NAME; --list for their cost):")
    for config in builtin_configs().values():
        print(f"  {config.name}: {config.title} [{', '.join(config.reproduces)}]")
    return 0
