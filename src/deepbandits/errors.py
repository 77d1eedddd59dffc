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
``UnknownDecisionError``    a reward for a decision this policy never made or has forgotten
``ExpiredDecisionError``    a reward for a decision that expired before it arrived
``RewardAlreadyLearnedError`` a second reward for one decision
``EventLogError``           a decision service's event log that is damaged or does not fit
``PayloadTooLargeError``    a request to the decision service above its size limit
``AuthenticationError``     a request to the decision service without its bearer token
``ServiceError``            a decision service that cannot be reached or answers with an error
``NotSupportedError``       a call the decision service's backend does not support (HTTP 501)
``NumericalError``          a result that is not finite although the inputs were valid
``ConcurrentUseError``      an output folder already in use by another process
``JobFailedError``          work given to an executor (a process, a Ray task) that failed there
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


class UnknownDecisionError(DecisionError):
    """A reward for a decision that is not known: made by another policy or replica, or so long
    ago that it is forgotten (the service answers 404)."""


class ExpiredDecisionError(DecisionError):
    """A reward for a decision that expired (``reward_timeout``, or a full table) before it
    arrived (the service answers 404)."""


class RewardAlreadyLearnedError(DecisionError):
    """A second reward for a decision that was already learned (the service answers 409)."""


class EventLogError(DataError):
    """A decision service's event log (``events.sqlite``) or state folder that is damaged, or
    that belongs to another policy."""


class PayloadTooLargeError(InputValueError):
    """A request to the decision service whose body is above its size limit (HTTP 413)."""


class AuthenticationError(DeepBanditsError, PermissionError):
    """A request to the decision service without the bearer token it requires (HTTP 401)."""


class ServiceError(DeepBanditsError, RuntimeError):
    """A decision service that cannot be reached, or that answers with an error of its own
    (HTTP 5xx)."""


class NotSupportedError(DeepBanditsError, NotImplementedError):
    """A call that the decision service's backend does not support: a control group or
    challengers on replicas of Ray Serve (the service answers 501)."""


class NumericalError(DeepBanditsError, ArithmeticError):
    """A computation whose result is not finite although its inputs were valid."""


class ConcurrentUseError(DeepBanditsError, RuntimeError):
    """An output folder locked by another running process."""


class JobFailedError(DeepBanditsError, RuntimeError):
    """Work given to an executor (a local process, a Ray task) that failed there: a sweep's
    runs, a matched protocol's tuning; the message says which and why."""


__all__ = [
    "AuthenticationError",
    "CallOrderError",
    "CheckpointError",
    "CheckpointNotFoundError",
    "ConcurrentUseError",
    "DataError",
    "DataNotFoundError",
    "DecisionError",
    "DeepBanditsError",
    "EventLogError",
    "ExpiredDecisionError",
    "InputTypeError",
    "InputValueError",
    "JobFailedError",
    "NotSupportedError",
    "NumericalError",
    "PayloadTooLargeError",
    "RewardAlreadyLearnedError",
    "ServiceError",
    "UnknownDecisionError",
]
