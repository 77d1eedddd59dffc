"""A durable decision service around a policy (``deepbandits serve``).

============================================ =======================================================
:mod:`~deepbandits.serve.state`              :class:`ServiceState`: the policy, its log, its folder
:mod:`~deepbandits.serve.log`                the event log (SQLite, WAL, group commits)
:mod:`~deepbandits.serve.events`             the events as rows of the log, and back
:mod:`~deepbandits.serve.batches`            a batch of decisions as one binary event
:mod:`~deepbandits.serve.store`              the state folder's files: checkpoints, networks
:mod:`~deepbandits.serve.recovery`           creating a folder, loading and replaying on start
:mod:`~deepbandits.serve.training`           training off the request path, swapping weights in
:mod:`~deepbandits.serve.experiment`         the live experiment: control, challengers, promotion
:mod:`~deepbandits.serve.control`            the control group: the hash that draws it, its policy
:mod:`~deepbandits.serve.lift`               the lift over the control and its interval (Welch)
:mod:`~deepbandits.serve.shadow`             a challenger in shadow and its off-policy estimates
:mod:`~deepbandits.serve.experiment_files`   the experiment's settings and checkpoint state
:mod:`~deepbandits.serve.scale`              the scale of the contexts seen, far outliers refused
:mod:`~deepbandits.serve.backend`            what the API drives: :class:`~.backend.LocalBackend`
:mod:`~deepbandits.serve.app`                the HTTP API (:func:`~.app.create_app`, FastAPI)
:mod:`~deepbandits.serve.schemas`            its JSON bodies (pydantic models, the OpenAPI page)
:mod:`~deepbandits.serve.guard`              bearer token, body size limit, timing (ASGI middleware)
:mod:`~deepbandits.serve.metrics`            Prometheus metrics, one registry per app
:mod:`~deepbandits.serve.server`             running the app on uvicorn (foreground or a thread)
:mod:`~deepbandits.serve.export`             the log as one table (``deepbandits export-log``)
:mod:`~deepbandits.serve.replicas`           replicas of one policy, sharing what they learn
:mod:`~deepbandits.serve.ray_backend`        those replicas on Ray Serve as a backend
:mod:`~deepbandits.serve.ray_app`            the Ray Serve application (``serve --backend ray``)
============================================ =======================================================
"""

import lazy_loader

#: Default limit of a request body: a batch of about 10,000 decisions of 10 arms × 10 features.
MAX_BODY_BYTES = 8 * 2**20

# ServiceState (and with it the policies and torch) loads on first use, so that the client,
# which reads this package's Arrow tables, starts without them; ``__init__.pyi`` lists it.
__getattr__, __dir__, _lazy_names = lazy_loader.attach_stub(__name__, __file__)
__all__ = ["MAX_BODY_BYTES", *_lazy_names]
