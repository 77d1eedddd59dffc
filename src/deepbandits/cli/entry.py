"""The command line's entry point: parse, run the command, and turn what goes wrong into an
exit status (see :mod:`deepbandits.cli`).

While a command runs, a warning reaches the user as one line on stderr, ``deepbandits:
warning: MESSAGE`` (the category named when it is not a plain ``UserWarning`` or one of the
library's own), instead of Python's ``path:line: Category: message`` and the source line: the
command line formats every warning (:func:`format_warning`, as :func:`warnings.formatwarning`),
and puts Python's own formatting back when the command ends, so that the library called from
Python warns as usual. Which warnings are shown (Python's filters, ``-W``) does not change.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings
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


def format_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    line: str | None = None,
) -> str:
    """A warning as the command line shows it (module notes): ``deepbandits: warning: ...`` on
    one line, with the signature of :func:`warnings.formatwarning`."""
    own = category is UserWarning or category.__module__.startswith("deepbandits.")
    text = " ".join(str(message).split())
    return f"deepbandits: warning: {text if own else f'{category.__name__}: {text}'}\n"


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
    python_format, warnings.formatwarning = warnings.formatwarning, format_warning
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
    finally:
        warnings.formatwarning = python_format
