"""The library's exception types.

Every error the library raises on purpose is a :class:`DeepBanditsError`, and also a subclass of
the built-in exception a caller would expect (``ValueError`` for a bad value, ``TypeError`` for a
value of the wrong type, ``FileNotFoundError`` for a missing file), so ``except ValueError`` keeps
working. The message names the argument, what was expected and what was given. The command line
turns any of them into a one-paragraph message and exit status 2.

=========================== =========================================================
``DeepBanditsError``        base class of all of them
``InputValueError``         a value of the right type but out of range, shape or finiteness
``InputTypeError``          a value of the wrong type (a string for a number, ...)
``DataError``               a data file that is missing, damaged or malformed
``DataNotFoundError``       a data file that is missing (also a ``FileNotFoundError``)
``CheckpointError``         a saved policy that cannot be read or does not fit the receiver
``CheckpointNotFoundError`` a saved policy file that does not exist
``CallOrderError``          a call made before the one it depends on
``DecisionError``           a reward for a decision that is not pending (learned, expired, unknown)
``NumericalError``          a result that is not finite although the inputs were valid
``ConcurrentUseError``      an output folder already in use by another process
=========================== =========================================================
"""

from __future__ import annotations


class DeepBanditsError(Exception):
    """Base class of every error the library raises on purpose."""


class InputValueError(DeepBanditsError, ValueError):
    """A value of the right type that is out of range, of the wrong shape or not finite."""


class InputTypeError(DeepBanditsError, TypeError):
    """A value of the wrong type: a string or a bool where a number is expected, ..."""


class DataError(InputValueError):
    """A data file that is missing, damaged (checksum) or malformed."""


class DataNotFoundError(DataError, FileNotFoundError):
    """A data file that does not exist (and cannot be downloaded)."""


class CheckpointError(InputValueError):
    """A saved policy that cannot be read, or that does not fit the policy it is loaded into."""


class CheckpointNotFoundError(CheckpointError, FileNotFoundError):
    """A saved policy file that does not exist."""


class CallOrderError(DeepBanditsError, RuntimeError):
    """A call made before the call it depends on (``reward`` before ``next_round``)."""


class DecisionError(InputValueError):
    """A reward for a decision that is not pending: already learned, expired, or unknown; or a
    decision refused because the table of pending decisions is full."""


class NumericalError(DeepBanditsError, ArithmeticError):
    """A computation whose result is not finite although its inputs were valid."""


class ConcurrentUseError(DeepBanditsError, RuntimeError):
    """An output folder locked by another running process."""


__all__ = [
    "CallOrderError",
    "CheckpointError",
    "CheckpointNotFoundError",
    "ConcurrentUseError",
    "DataError",
    "DataNotFoundError",
    "DecisionError",
    "DeepBanditsError",
    "InputTypeError",
    "InputValueError",
    "NumericalError",
]
