"""The names of :mod:`deepbandits.serve`: ``ServiceState`` loads on first use
(``lazy_loader.attach_stub`` reads the imports); ``MAX_BODY_BYTES`` is defined in ``__init__.py``
and declared here for type checkers, which read this stub instead."""

from .state import ServiceState

MAX_BODY_BYTES: int
