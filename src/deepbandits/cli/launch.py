"""The console script ``deepbandits`` (:func:`main`): ``--version`` is answered before the
parser is loaded; everything else goes to :func:`deepbandits.cli.entry.main`, whose parser adds
a command's options (and imports the registries they name, with torch) only for the command
chosen."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from deepbandits._version import VERSION_LINE


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``) and return its exit status
    (:func:`deepbandits.cli.entry.main`). ``--version`` and ``--help`` print and raise
    ``SystemExit(0)``, as argparse does; ``--version`` without loading the parser."""
    if list(sys.argv[1:] if argv is None else argv) == ["--version"]:
        print(VERSION_LINE)
        raise SystemExit(0)
    from deepbandits.cli.entry import main as run_command_line

    return run_command_line(None if argv is None else list(argv))
