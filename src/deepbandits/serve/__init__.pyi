"""The names of :mod:`deepbandits.serve` that load on first use (``lazy_loader.attach_stub``)."""

from .state import ServiceState
