"""The command line's entry point: parse, run the command, and turn what goes wrong into an
exit status (see :mod:`deepbandits.cli`)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from deepbandits.cli.errors import USER_ERRORS, describe, report_internal_error
from deepbandits.cli.experiments import experiment_command, reproduce_command
from deepbandits.cli.listing import list_command
from deepbandits.cli.ope import ope_command
from deepbandits.cli.parser import build_parser
from deepbandits.cli.runs import compare_command, report_command, tune_command
from deepbandits.cli.serve import export_log_command, serve_command

#: The function of each command: it gets the parsed arguments and returns the exit status.
COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": compare_command,
    "compare": compare_command,
    "demo": compare_command,
    "report": report_command,
    "reproduce": reproduce_command,
    "experiment": experiment_command,
    "tune": tune_command,
    "list": list_command,
    "serve": serve_command,
    "export-log": export_log_command,
    "ope": ope_command,
}


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
        return COMMANDS[args.command](args)
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
