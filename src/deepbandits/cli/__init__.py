"""Command line: ``deepbandits run | compare | demo | report | reproduce | tune | list | serve |
export-log``. Every command has ``--help``.

A mistake in what the user gave (an option, a specification, a file, an output folder, a dataset
that is missing offline) is reported in one paragraph on stderr, ``deepbandits: error: ...``, with
exit status 2, before any computation when it can be. Any other exception is a bug: one paragraph
says so and where its full traceback was saved (:func:`save_crash_report`), exit status 1. Ctrl-C
exits with status 130.

The modules: :mod:`~deepbandits.cli.parser` (every command and its options, from the argument
types and shared option groups of :mod:`~deepbandits.cli.arguments`),
:mod:`~deepbandits.cli.runs` (``run``, ``compare``, ``demo``, ``tune``, ``report``),
:mod:`~deepbandits.cli.experiments` (``reproduce``, ``experiment``),
:mod:`~deepbandits.cli.listing` (``list``), :mod:`~deepbandits.cli.serve` (``serve``,
``export-log``), :mod:`~deepbandits.cli.errors` (how mistakes and
bugs are reported) and :mod:`~deepbandits.cli.entry` (:func:`main`).
"""

from __future__ import annotations

from deepbandits.cli.arguments import check_writable
from deepbandits.cli.entry import COMMANDS, main
from deepbandits.cli.errors import USER_ERRORS, CommandLineError, describe, save_crash_report
from deepbandits.cli.parser import build_parser

__all__ = [
    "COMMANDS",
    "USER_ERRORS",
    "CommandLineError",
    "build_parser",
    "check_writable",
    "describe",
    "main",
    "save_crash_report",
]
