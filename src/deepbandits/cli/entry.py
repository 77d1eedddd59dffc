"""The command line's entry point: parse, run the command, and turn what goes wrong into an
exit status (see :mod:`deepbandits.cli`)."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable

from deepbandits.cli.errors import USER_ERRORS, describe, report_internal_error
from deepbandits.cli.parser import build_parser

#: The function of each command, as ``module:function`` of :mod:`deepbandits.cli`: it gets the
#: parsed arguments and returns the exit status. Its module is imported when the command runs,
#: so that ``deepbandits --help`` loads none of them.
COMMANDS: dict[str, str] = {
    "run": "runs:compare_command",
    "compare": "runs:compare_command",
    "demo": "runs:compare_command",
    "report": "runs:report_command",
    "reproduce": "experiments:reproduce_command",
    "experiment": "experiments:experiment_command",
    "tune": "runs:tune_command",
    "list": "listing:list_command",
    "serve": "serve:serve_command",
    "export-log": "serve:export_log_command",
    "ope": "ope:ope_command",
    "learn-log": "learn:learn_command",
}


def command_function(name: str) -> Callable[[argparse.Namespace], int]:
    """The function of command ``name`` (:data:`COMMANDS`), its module imported."""
    module, function = COMMANDS[name].split(":")
    return getattr(importlib.import_module(f"deepbandits.cli.{module}"), function)  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``).

    Parameters
    ----------
    argv : list of str, optional
        The words after ``deepbandits``.

    Returns
    -------
    int
        The exit status: 0, 2 for a user error, 1 for an internal error, 130 when interrupted,
        141 when the reader of its output went away (see :mod:`deepbandits.cli`).
    """
    try:
        args = build_parser().parse_args(argv)
        return command_function(args.command)(args)
    except KeyboardInterrupt:
        print("deepbandits: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (``deepbandits list | head -1``): say nothing
        # what is still buffered for stdout would fail again at exit (Python's signal docs)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except USER_ERRORS as exc:
        print(f"deepbandits: error: {describe(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:
        return report_internal_error(exc, sys.argv[1:] if argv is None else argv)
