"""The command line's argument types and the option groups several commands share, with what
reads them back (:func:`executor_of`, :func:`engine_options`)."""

from __future__ import annotations

import argparse
import math
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from deepbandits._io import missing_folders, remove_empty
from deepbandits.cli.errors import CommandLineError, describe
from deepbandits.errors import InputValueError

if TYPE_CHECKING:
    from deepbandits.experiments.executors import Executor

# The registries (environments, executors, formats) are imported where an option needs them, not
# here: the top-level parser (``deepbandits --help``) is built from this module without torch.

SPEC_HELP = (
    "registry name with optional parameters, NAME[:key=value,key=value], the keywords of "
    "make_policy / make_env (lists in brackets: reward_range=[0,1]); 'deepbandits list "
    "--params NAME' lists a policy's parameters or an environment's keywords"
)


class Parser(argparse.ArgumentParser):
    """An argument parser that raises :class:`~deepbandits.cli.errors.CommandLineError`
    instead of exiting, so that :func:`~deepbandits.cli.main` reports every mistake alike
    (``--help`` still exits)."""

    def error(self, message: str) -> NoReturn:
        raise CommandLineError(f"{message} (see '{self.prog} --help')")


def _integer_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse ``type``: an integer >= ``minimum``."""

    def parse(text: str) -> int:
        try:
            value: int | None = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {text!r}")
        return value

    return parse


positive_int = _integer_at_least(1)
nonnegative_int = _integer_at_least(0)
#: ``--lift-window``: an integer >= 2.
at_least_two = _integer_at_least(2)


def number_between(low: float, high: float) -> Callable[[str], float]:
    """An argparse ``type``: a number in [``low``, ``high``]."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"expected a number in [{low:g}, {high:g}]; got {text!r}"
            )
        return value

    return parse


def port_number(text: str) -> int:
    """An argparse ``type``: a TCP port, 0 to 65535 (0: a free one)."""
    value = nonnegative_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"expected a port from 0 to 65535, got {text!r}")
    return value


def positive_float(text: str) -> float:
    """An argparse ``type``: a finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text!r}")
    return value


def seed_list(text: str) -> list[int]:
    """An argparse ``type``: seeds, :func:`~deepbandits.specs.parse_seeds`."""
    from deepbandits.specs import parse_seeds

    try:
        return parse_seeds(text)
    except InputValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def parse_checkpoints(text: str) -> list[int]:
    """An argparse ``type``: ``"0,2000,5000"`` → [0, 2000, 5000]; empty → []."""
    items = [x.strip() for x in text.split(",") if x.strip()]
    if not all(x.isdecimal() for x in items):
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers >= 0 (e.g. 0,2000,5000), got {text!r}"
        )
    return [int(x) for x in items]


def check_writable(folder: Path, flag: str = "--out") -> Path:
    """Create ``folder`` and write and delete a small file in it, so that an output folder that
    cannot be written is refused before any computation starts; returns ``folder``. The folders
    it created are removed again: the command creates them when it writes, so a command refused
    after this check leaves nothing behind."""
    if folder.exists() and not folder.is_dir():
        raise InputValueError(f"{flag} {str(folder)!r} is a file, not a folder")
    created = missing_folders(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".deepbandits-probe-") as probe:
            probe.write(b"probe")
            probe.flush()
    except OSError as exc:
        raise InputValueError(
            f"{flag} {str(folder)!r} is not a writable folder: {describe(exc)}"
        ) from None
    finally:
        remove_empty(created)
    return folder


#: The environment of the commands that run policies when ``--env`` is not given.
DEFAULT_ENV = "h1"

#: What ``--help`` says of a missing ``--env``.
ENV_DEFAULT_HELP = (
    f"default: {DEFAULT_ENV}, the synthetic h1 of Section 5.1 (d=20, K=4), said in the output"
)


def add_env_option(p: argparse.ArgumentParser) -> None:
    """``--env``, None unless given (:func:`env_of` resolves it and says so)."""
    from deepbandits.envs import env_names

    p.add_argument(
        "--env",
        default=None,
        help=f"environment, {SPEC_HELP} ({ENV_DEFAULT_HELP}); names: {', '.join(env_names())}",
    )


def env_of(args: argparse.Namespace) -> str:
    """``args.env``, or :data:`DEFAULT_ENV` when ``--env`` was not given: then ``args.env`` is
    set to it and a line of the output says so. A table (``table:path=...``) is read at once
    and a line says what was read and inferred (rows, features, classes, header, delimiter),
    so that a wrong guess shows before any run."""
    if args.env is None:
        args.env = DEFAULT_ENV
        print(
            f"environment: {DEFAULT_ENV} (the default, as --env was not given; 'deepbandits "
            "list' names the others, 'deepbandits list --params NAME' their keywords)",
            flush=True,
        )
    from deepbandits.specs import parse_spec

    name, params = parse_spec(str(args.env))
    if name == "table":
        from deepbandits.envs import make_env

        source = getattr(make_env(name, **params), "source", None) or {}
        print(f"read {source.get('summary')}", flush=True)
    return str(args.env)


def add_run_options(
    p: argparse.ArgumentParser, *, T: int, seeds: str, out: str = "results"
) -> None:
    """Options of the commands that run policies over seeds (``run``, ``compare``, ``demo``):
    output folder, environment (:func:`add_env_option`), horizon, seeds and the sweep
    engine's."""
    p.add_argument("--out", type=Path, default=Path(out), help=f"output folder (default: {out})")
    add_env_option(p)
    p.add_argument("--T", type=positive_int, default=T, help=f"rounds per run (default: {T})")
    p.add_argument(
        "--seeds",
        type=seed_list,
        default=seeds,
        help=f"seeds, e.g. 0-4 or 1,3,5, each once (default: {seeds})",
    )
    add_engine_options(p, jobs_default=1)


def add_checkpoint_options(p: argparse.ArgumentParser) -> None:
    """``--checkpoints`` and ``--holdout``: hold-out scoring of the policy's forecasts."""
    p.add_argument(
        "--checkpoints",
        type=parse_checkpoints,
        default="",
        help="rounds at which to score the policy's forecasts on a hold-out set (Eq. calib2), "
        "e.g. 0,2000,5000,7500 (default: none)",
    )
    p.add_argument(
        "--holdout",
        type=positive_int,
        default=500,
        help="hold-out rounds per checkpoint (default: 500)",
    )


def add_experiment_options(p: argparse.ArgumentParser) -> None:
    """Options of the commands that run experiment configs (``reproduce``, ``experiment``)."""
    p.add_argument("--quick", action="store_true", help="the config's smoke-test scale ([quick])")
    add_engine_options(p, jobs_default=None)


def add_engine_options(p: argparse.ArgumentParser, *, jobs_default: int | None) -> None:
    """Options of the sweep engine: workers, backend, format, recomputation, device.
    ``jobs_default`` is only shown: ``--jobs`` is None unless given (:func:`executor_of`)."""
    from deepbandits.experiments.executors import BACKENDS
    from deepbandits.experiments.storage import FORMATS

    every = "every core" if jobs_default is None else str(jobs_default)
    p.add_argument(
        "--jobs",
        type=positive_int,
        default=None,
        help=f"runs in parallel worker processes, one thread each (default: {every}; with "
        "--backend ray: the CPUs of a new local Ray instance)",
    )
    p.add_argument(
        "--backend",
        choices=BACKENDS,
        default="local",
        help="where runs execute: local worker processes, or a Ray cluster (pip install "
        "'deepbandits[ray]'; default: local)",
    )
    p.add_argument(
        "--address",
        default=None,
        help="Ray cluster address, 'auto' or HOST:PORT (default: $RAY_ADDRESS, else a new local "
        "instance)",
    )
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="csv",
        help="per-round records as CSV or Parquet (default: csv)",
    )
    p.add_argument("--force", action="store_true", help="recompute finished runs")
    p.add_argument(
        "--device", default=None, help="device of the networks, e.g. cuda (default: cpu)"
    )
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")


def executor_of(args: argparse.Namespace, local_workers: int | None) -> Executor:
    """The sweep engine's executor of the command line's ``--backend``, ``--jobs`` and
    ``--address``: without ``--jobs``, ``local_workers`` local processes (None: every core),
    or the whole Ray cluster (a new local instance: every core)."""
    from deepbandits.experiments.executors import make_executor

    if args.backend == "local":
        return make_executor(workers=args.jobs or local_workers, address=args.address)
    return make_executor("ray", workers=args.jobs, address=args.address)


def engine_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keywords that every sweep (``compare``, ``run_experiment``, ``reproduce_all``) takes
    from the options of :func:`add_engine_options`: ``force``, ``fmt``, ``device`` and
    ``progress``."""
    return {
        "force": args.force,
        "fmt": args.format,
        "device": args.device,
        "progress": not args.no_progress,
    }
