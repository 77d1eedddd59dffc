"""Logged bandit data, below both the service and off-policy evaluation: the
:class:`LoggedBandit` table (:mod:`~deepbandits.logs.bandit`) and its readers, the Open Bandit
Dataset (:mod:`~deepbandits.logs.obd`), the decision service's exported log
(:mod:`~deepbandits.logs.service`) and a user's flat table (:mod:`~deepbandits.logs.table`),
behind :func:`load_logged`."""

from deepbandits.logs.bandit import LoggedBandit, check_log, make_log
from deepbandits.logs.load import load_logged
from deepbandits.logs.obd import OBD_BEHAVIORS, OBD_CAMPAIGNS, load_obd
from deepbandits.logs.service import SERVICE_COLUMNS, read_service_log, service_log
from deepbandits.logs.table import table_log

__all__ = [
    "OBD_BEHAVIORS",
    "OBD_CAMPAIGNS",
    "SERVICE_COLUMNS",
    "LoggedBandit",
    "check_log",
    "load_logged",
    "load_obd",
    "make_log",
    "read_service_log",
    "service_log",
    "table_log",
]
