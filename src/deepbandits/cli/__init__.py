"""Command line: ``deepbandits run | compare | demo | report | reproduce | tune | list | serve |
export-log``. Every command has ``--help``.

A mistake in what the user gave (an option, a specification, a file, an output folder, a dataset
that is missing offline) is reported in one paragraph on stderr, ``deepbandits: error: ...``, with
exit status 2, before any computation when it can be. Any other exception is a bug: one paragraph
says so and where its full traceback was saved (:func:`save_crash_report`), exit status 1. Ctrl-C
exits with status 130; output into a pipe whose reader went away (``deepbandits list | head -1``)
ends the command silently with status 141, as a shell's commands do.

The modules: :mod:`~deepbandits.cli.parser` (every command and its options, from the argument
types and shared option groups of :mod:`~deepbandits.cli.arguments`),
:mod:`~deepbandits.cli.runs` (``run``, ``compare``, ``demo``, ``tune``, ``report``),
:mod:`~deepbandits.cli.experiments` (``reproduce``, ``experiment``),
:mod:`~deepbandits.cli.listing` (``list``), :mod:`~deepbandits.cli.serve` (``serve``,
``export-log``), :mod:`~deepbandits.cli.errors` (how mistakes and
bugs are reported), :mod:`~deepbandits.cli.entry` (parse, run, exit status) and
:mod:`~deepbandits.cli.launch` (:func:`main`, the console script, which answers ``--version``
before loading the rest). The parser adds a command's options when that command is chosen, so
``deepbandits --help`` does not load torch either.
"""

import lazy_loader

# A command's options need the policy and environment registries, and with them torch (about
# 5 s to start): every name loads on first use (``__init__.pyi`` lists them), and the parser adds
# a command's options only when it is chosen, so that ``deepbandits --version`` and
# ``deepbandits --help`` start at once.
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
