"""The names of :mod:`deepbandits.cli` that load on first use (``lazy_loader.attach_stub``)."""

from .arguments import check_writable
from .entry import COMMANDS
from .errors import USER_ERRORS, CommandLineError, describe, save_crash_report
from .launch import main
from .parser import build_parser
