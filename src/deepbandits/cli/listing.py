"""``deepbandits list``: what the command line accepts by name."""

from __future__ import annotations

import argparse

from deepbandits.envs import env_names, env_parameter_table
from deepbandits.envs.settings import OWN_DATA, OWN_DATA_COST
from deepbandits.errors import InputValueError
from deepbandits.experiments.config import builtin_configs
from deepbandits.policies import CONFIGURATIONS, parameter_table, policy_names


def print_table(title: str, rows: list[tuple[str, str, str, str]], first: str) -> None:
    """``title``, then ``rows`` under the heading ``first``, default, type and range, meaning,
    aligned (the meaning last, unpadded)."""
    rows = [(first, "default", "type and range", "meaning"), *rows]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    print(title)
    for row in rows:
        cells = [c.ljust(w) for c, w in zip(row, widths, strict=False)]
        print("  " + "  ".join([*cells, row[3]]))


def list_command(args: argparse.Namespace) -> int:
    """``deepbandits list``: the registry names, configurations and paper experiments; with
    ``--params NAME``, the parameters of policy NAME or the keywords of environment NAME."""
    name = args.params
    if name is not None and name in env_names():
        rows = env_parameter_table(name)
        print_table(
            f"keywords of environment {name} (set as --env {name}:key=value):", rows, "keyword"
        )
        return 0
    if name is not None:
        try:
            rows = parameter_table(name)
        except InputValueError as exc:
            raise InputValueError(
                f"{exc}; or an environment: {', '.join(map(repr, env_names()))}"
            ) from None
        print_table(f"parameters of {name} (set as NAME:key=value):", rows, "parameter")
        if name in OWN_DATA:
            given = ", ".join(f"{k}={v!r}" for k, v in OWN_DATA[name].items())
            print(
                f"on your own data (--env table:..., make_env('table' | 'classification')) "
                f"unless you set them: {given}"
            )
            print(f"  cost: {OWN_DATA_COST[name]} (deepbandits.envs.settings.OWN_DATA)")
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
