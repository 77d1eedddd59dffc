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

import sys
from collections.abc import Sequence

import lazy_loader

from deepbandits._version import VERSION_LINE

# The parser needs the policy registry, and with it torch (about 5 s to start): everything but
# ``--version`` loads on first use (``__init__.pyi`` lists the names).
__getattr__, __dir__, _lazy_names = lazy_loader.attach_stub(__name__, __file__)
__all__ = ["main", *_lazy_names]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``) and return its exit status
    (:func:`deepbandits.cli.entry.main`). ``--version`` and ``--help`` print and raise
    ``SystemExit(0)``, as argparse does; ``--version`` without loading the parser."""
    if list(sys.argv[1:] if argv is None else argv) == ["--version"]:
        print(VERSION_LINE)
        raise SystemExit(0)
    from deepbandits.cli.entry import main as run_command_line

    return run_command_line(None if argv is None else list(argv))
