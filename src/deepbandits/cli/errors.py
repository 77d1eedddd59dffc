"""How the command line reports what goes wrong: the user's mistakes in one paragraph, the
library's bugs with a saved traceback (see :mod:`deepbandits.cli`)."""

from __future__ import annotations

import os
import shlex
import sys
import tempfile
import time
import traceback
from pathlib import Path

from deepbandits._io import write_atomic
from deepbandits._version import __version__
from deepbandits.errors import DeepBanditsError, InputValueError

#: Exceptions caused by what the user gave (the library's own, :class:`DeepBanditsError`) or by
#: the machine's files and folders (``OSError``): reported in one paragraph with exit status 2.
#: Anything else, a bare ``ValueError`` or ``TypeError`` included, is a bug of the library.
USER_ERRORS = (DeepBanditsError, OSError)


class CommandLineError(InputValueError):
    """A command line that does not parse: an unknown option, a missing or malformed value."""


def describe(exc: BaseException) -> str:
    """An exception's message in one paragraph; an ``OSError`` as ``reason: path``."""
    if isinstance(exc, OSError) and exc.strerror and exc.filename is not None:
        text = f"{exc.strerror}: {exc.filename}"
    else:
        text = str(exc) or type(exc).__name__
    return " ".join(text.split())


def save_crash_report(exc: BaseException, argv: list[str]) -> Path | None:
    """Save the full traceback of ``exc``, with the command line and versions, to a new file
    ``crash-<time>-<pid>.txt`` under ``cache_home()/crash`` (``$XDG_CACHE_HOME/deepbandits``,
    else ``~/.cache/deepbandits``), or under the system's temporary folder when that cannot be
    written; returns its path, or ``None`` when neither can be written."""
    from deepbandits.datasets.location import cache_home  # its package loads pandas

    stamp = time.strftime("%Y%m%d-%H%M%S")
    text = "".join(
        [
            f"deepbandits {__version__}, Python {sys.version.split()[0]}, {stamp}\n",
            f"command: deepbandits {shlex.join(argv)}\n\n",
            *traceback.format_exception(exc),
        ]
    )
    name = f"crash-{stamp}-{os.getpid()}.txt"
    for folder in (cache_home() / "crash", Path(tempfile.gettempdir()) / "deepbandits" / "crash"):
        try:
            return write_atomic(folder / name, text)
        except OSError:
            continue
    return None


def report_internal_error(exc: Exception, argv: list[str]) -> int:
    """Say on stderr, in one paragraph, that ``exc`` is a bug and where its traceback was saved
    (:func:`save_crash_report`; the traceback itself when it could not be saved); returns the
    exit status 1."""
    path = save_crash_report(exc, argv)
    where = (
        f"the full traceback was saved to {path}; please attach that file to a bug report."
        if path is not None
        else "its traceback follows (no cache or temporary folder could be written)."
    )
    print(
        f"deepbandits: internal error: {type(exc).__name__}: {describe(exc)}. This is a bug "
        f"in deepbandits, not a mistake in the command; {where}",
        file=sys.stderr,
    )
    if path is None:
        traceback.print_exception(exc)
    return 1
