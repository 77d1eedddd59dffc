"""A bounded load test of ``deepbandits serve`` on loopback (not a test):
``python benchmarks/serve_load.py [--quick] [--decisions N] [--concurrency C]
[--reward-delay S] [--max-seconds T] [--offered-seconds S] [--linucb-rate R] [--neural-rate R]
[--only TEXT] [--no-ray]``.

Each case starts ``deepbandits serve`` as its own process on a new state folder (127.0.0.1, a
free port; ``--backend local``, or ``--backend ray`` with 1 or 2 replicas, whose Ray instance
the server starts and stops), warms it up, then runs concurrent async clients in this process:
each decides
(``POST /v1/decide``) and sends the decision's reward (``POST /v1/reward``) ``--reward-delay``
seconds after the answer, until
``--decisions`` decisions were answered or ``--max-seconds`` passed (then it stops by itself).
Request bodies are encoded before the clock starts. A case either runs its clients as fast as
the answers come (closed loop: the most the machine gives) or offers a fixed rate (``offered``:
the n-th decision is due ``n / rate`` seconds after the start, and its latency counts from then,
so a server that falls behind is charged for the wait; it runs ``--offered-seconds``). The
batch cases send ``decide_batch`` bodies as JSON or as Arrow IPC streams
(:mod:`deepbandits.serve.arrow`).

The clients speak HTTP/1.1 over keep-alive connections of their own (:class:`Connection`: asyncio
streams on uvloop, answers read by ``Content-Length``, JSON by orjson) rather than through
``httpx.AsyncClient``, which spent more CPU per request than the server and, sharing the two
cores with it, was what limited the rate. The batch case sends ``POST
/v1/decide_batch`` requests of ``--batch`` decisions (no rewards: the API has no batch reward).

After the run the server is killed with SIGKILL and its log read back (``logged_ids``): every
decision and reward that was answered must be there (``lost``, must be 0). Neural-σ²-LinUCB
trains on a schedule that keeps a training running; ``training`` is the share of the measured
time a training ran (``deepbandits_training_seconds`` of ``/metrics``).

The Ray cases go through Ray Serve's own HTTP proxy, then the ingress replica that runs the API
(:mod:`deepbandits.serve.ray_app`), then a policy replica: two hops between processes. The
``Ray Serve proxy ceiling`` case measures what the proxy alone allows on the same machine: a
no-op deployment (the same ingress, answering a fixed decision without a hop to a replica or a
log) behind the same proxy (this script run with ``--noop-server``). A Ray server is stopped
with SIGTERM (each replica writes a checkpoint; ``lost`` is then read from every replica's log),
not SIGKILL, which would leave its Ray instance behind.

Prints one Markdown table, and writes it with what was run to ``--out`` (default
``benchmarks/results/serve_load.md``; ``--out ''`` for none): decisions/s (answered
decisions over the run's wall time), the client-measured latency of ``decide`` (p50/p95/p99;
of the whole batch request for the batch endpoint), rewards answered and the reward's p99, and
the server's CPU time per decision (its reward included; from ``/proc``), which depends less
than the rate on what else runs on the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import uvloop

from deepbandits._io import write_atomic
from deepbandits.serve import arrow
from deepbandits.serve.export import logged_ids

LINUCB = "linucb:reward_range=[0,1],seed=0"
#: LinUCB with a live experiment (issue 50): IGW exploration, a 5 % uniform control group and two
#: challengers in shadow (the words after the policy are ``deepbandits serve``'s own flags).
IGW = "linucb:explore=igw,min_propensity=0.01,reward_range=[0,1],seed=0"
EXPERIMENT = (
    f"{IGW} --control uniform "
    "--control-share 0.05 --challenger linucb:alpha=0.3,reward_range=[0,1] "
    "--challenger linucb:explore=igw,gamma=30,reward_range=[0,1]"
)
#: the default network; a training every 100 rewards (after 200) of 300 steps: one always runs
NEURAL = (
    "neural-sigma2-linucb:reward_range=[0,1],train_start=200,train_every=100,warmup_every=0,"
    "train_steps=300,seed=0"
)
OUT = Path(__file__).parent / "results" / "serve_load.md"
JSON = "application/json"


@dataclass
class Result:
    """What one case measured."""

    case: str
    durability: str
    endpoint: str
    concurrency: int
    rate: float | None = None
    backend: str = "local"
    decisions: int = 0
    rewards: int = 0
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    reward_latencies: list[float] = field(default_factory=list)
    training: float | None = None
    trainings: int | None = None
    lost: int = 0
    server_cpu: float | None = None
    ids: list[str] = field(default_factory=list)
    rewarded: list[str] = field(default_factory=list)

    def row(self) -> list[str]:
        def ms(values: list[float], q: float) -> str:
            return f"{np.percentile(values, q) * 1e3:.1f}" if values else "-"

        rate = self.decisions / self.seconds if self.seconds else 0.0
        train = "-"
        if self.training is not None:
            train = f"{self.training:.0%} ({self.trainings} swapped in)"
        return [
            self.case,
            self.backend,
            self.durability,
            self.endpoint,
            str(self.concurrency),
            "-" if self.rate is None else f"{self.rate:,.0f}",
            f"{self.decisions:,}",
            f"{self.seconds:.1f}",
            f"{rate:,.0f}",
            f"{ms(self.latencies, 50)} / {ms(self.latencies, 95)} / {ms(self.latencies, 99)}",
            f"{self.rewards:,}",
            ms(self.reward_latencies, 99),
            train,
            "-" if self.server_cpu is None else f"{self.server_cpu / self.decisions * 1e3:.3f}",
            "-" if self.lost < 0 else str(self.lost),
        ]


class Server:
    """``deepbandits serve`` as a process on a new state folder (``backend``: "local", "ray-1"
    or "ray-2" replicas, or "noop": the proxy ceiling's no-op deployment)."""

    def __init__(self, spec: str, durability: str, folder: Path, backend: str = "local") -> None:
        self.folder = folder
        self.backend = backend
        err = folder.with_suffix(".err")
        if backend == "noop":
            argv = [sys.executable, __file__, "--noop-server"]
        else:
            policy, *flags = shlex.split(spec)
            argv = [sys.executable, "-m", "deepbandits", "serve", "--policy", policy, *flags]
            argv += ["--state", str(folder), "--port", "0", "--durability", durability]
        if backend.startswith("ray"):
            argv += ["--backend", "ray", "--replicas", backend[-1], "--merge-every", "0"]
        with open(err, "w") as f:
            self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=f)
        deadline = time.monotonic() + 180
        while not (found := re.search(r" on (http://127\.0\.0\.1:\d+) ", err.read_text())):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"the service did not start: {err.read_text()}")
            time.sleep(0.05)
        self.url = found[1]

    def cpu(self) -> float | None:
        """Seconds of CPU the server used so far (Linux's /proc; None elsewhere, and for Ray,
        whose work runs in Ray's processes)."""
        if self.backend != "local":
            return None
        try:
            fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def kill(self) -> None:
        """SIGKILL (a local server), or SIGTERM and a wait (Ray: module notes)."""
        if self.process.poll() is None:
            local = self.backend == "local"
            os.kill(self.process.pid, signal.SIGKILL if local else signal.SIGTERM)
            self.process.wait(120)

    def logged(self) -> tuple[set[str], set[str]]:
        """The ids of the log's decisions (batch events included) and rewards (a Ray server's
        ids are ``"<replica>:<id>"``, each in its replica's log)."""
        if self.backend == "local":
            decided, rewarded = logged_ids(self.folder)
            return set(decided), set(rewarded)
        if self.backend == "noop":
            return set(), set()
        decisions: set[str] = set()
        rewards: set[str] = set()
        for i in range(int(self.backend[-1])):
            decided, rewarded = logged_ids(self.folder / f"replica-{i}")
            decisions.update(f"{i}:{d}" for d in decided)
            rewards.update(f"{i}:{r}" for r in rewarded)
        return decisions, rewards


class Connection:
    """One keep-alive HTTP/1.1 connection to ``host:port`` (one request at a time)."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str
    ) -> None:
        self.reader, self.writer, self.host = reader, writer, host

    @classmethod
    async def open(cls, url: str) -> Connection:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return cls(reader, writer, f"{host}:{port}")

    async def request(
        self, method: str, path: str, body: bytes = b"", media: str = JSON
    ) -> tuple[int, bytes]:
        """The status and body of the answer to one request."""
        head = f"{method} {path} HTTP/1.1\r\nhost: {self.host}\r\ncontent-length: {len(body)}\r\n"
        self.writer.write(f"{head}content-type: {media}\r\n\r\n".encode() + body)
        lines = (await self.reader.readuntil(b"\r\n\r\n")).split(b"\r\n")
        length = next(
            int(v)
            for k, _, v in (x.partition(b":") for x in lines)
            if k.lower() == b"content-length"
        )
        return int(lines[0].split(b" ", 2)[1]), await self.reader.readexactly(length)

    async def call(self, method: str, path: str, body: bytes = b"", media: str = JSON) -> bytes:
        """The answer's body; an error status raises."""
        status, data = await self.request(method, path, body, media)
        if status != 200:
            raise RuntimeError(f"{method} {path} answered {status}: {data[:300]!r}")
        return data

    async def json(self, method: str, path: str, body: bytes = b"") -> Any:
        """The answer's JSON; an error status raises."""
        return orjson.loads(await self.call(method, path, body))

    def close(self) -> None:
        self.writer.close()


#: Seconds a connection may sit idle in a pool (uvicorn closes keep-alive connections idle 5 s).
IDLE_SECONDS = 2.0


class Pool:
    """Connections to ``url``, one per request in flight (opened as needed, then reused while
    they were idle less than :data:`IDLE_SECONDS`)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.idle: list[tuple[Connection, float]] = []

    async def call(self, method: str, path: str, body: bytes = b"", media: str = JSON) -> bytes:
        conn = None
        while self.idle and conn is None:
            conn, since = self.idle.pop()
            if time.monotonic() - since > IDLE_SECONDS:
                conn.close()
                conn = None
        if conn is None:
            conn = await Connection.open(self.url)
        answer = await conn.call(method, path, body, media)
        self.idle.append((conn, time.monotonic()))
        return answer

    async def json(self, method: str, path: str, body: bytes = b"") -> Any:
        return orjson.loads(await self.call(method, path, body))


def bodies(n: int, arms: int, features: int, seed: int) -> list[tuple[bytes, np.ndarray]]:
    """``n`` decide bodies with their contexts."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.standard_normal((n, arms, features)), 6)
    return [(orjson.dumps({"contexts": x.tolist()}), x) for x in X]


def reward_of(contexts: np.ndarray, arm: int) -> float:
    """A reward in [0, 1] that depends on the arm's context (a logistic of its sum)."""
    return float(1.0 / (1.0 + np.exp(-contexts[arm].sum())))


async def wait_ready(url: str) -> None:
    deadline = time.monotonic() + 120
    while True:
        try:
            conn = await Connection.open(url)
            try:
                await conn.json("GET", "/v1/health")
                return
            finally:
                conn.close()
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the service at {url} does not answer") from None
            await asyncio.sleep(0.05)


async def training_seconds(url: str) -> tuple[float, int]:
    """``deepbandits_training_seconds_sum`` and ``deepbandits_trainings_total``."""
    conn = await Connection.open(url)
    try:
        text = (await conn.request("GET", "/metrics"))[1].decode()
    finally:
        conn.close()
    total = re.search(r"^deepbandits_training_seconds_sum (\S+)", text, re.M)
    count = re.search(r"^deepbandits_trainings_total (\S+)", text, re.M)
    return float(total[1]) if total else 0.0, int(float(count[1])) if count else 0


async def single(
    url: str, res: Result, work: list[tuple[bytes, np.ndarray]], args: argparse.Namespace
) -> None:
    """Concurrent clients deciding and rewarding until the work is done or time is up."""
    queue = list(reversed(work))
    deadline = time.monotonic() + args.max_seconds
    pending: set[asyncio.Task[None]] = set()
    first = time.perf_counter()
    started = 0

    async def reward(http: Pool, decision_id: str, value: float) -> None:
        if args.reward_delay:
            await asyncio.sleep(args.reward_delay)
        body = orjson.dumps({"decision_id": decision_id, "reward": value})
        start = time.perf_counter()
        await http.json("POST", "/v1/reward", body)
        res.reward_latencies.append(time.perf_counter() - start)
        res.rewarded.append(decision_id)

    async def worker() -> None:
        nonlocal started
        http = Pool(url)
        while queue and time.monotonic() < deadline:
            body, contexts = queue.pop()
            start = time.perf_counter()
            if res.rate is not None:  # due at n / rate: the latency counts from then
                due = first + started / res.rate
                started += 1
                if due > start:
                    await asyncio.sleep(due - start)
                start = due
            data = await http.json("POST", "/v1/decide", body)
            res.latencies.append(time.perf_counter() - start)
            res.ids.append(data["decision_id"])
            value = reward_of(contexts, data["arm"])
            if args.reward_delay:
                task = asyncio.create_task(reward(http, data["decision_id"], value))
                pending.add(task)
                task.add_done_callback(pending.discard)
            else:
                await reward(http, data["decision_id"], value)

    await asyncio.gather(*(worker() for _ in range(res.concurrency)))
    while pending:  # the rewards still on their way, whichever worker sent their decision
        await asyncio.gather(*list(pending))


async def batch(
    url: str, res: Result, work: list[tuple[bytes, np.ndarray]], args: argparse.Namespace
) -> None:
    """Concurrent clients sending batches of ``args.batch`` requests (as JSON, or as Arrow
    when the case's endpoint says so)."""
    size = args.batch
    chunks = [work[i : i + size] for i in range(0, len(work) - size + 1, size)]
    in_arrow = "Arrow" in res.endpoint
    if in_arrow:
        payloads = [arrow.requests_table(np.stack([x for _, x in c])) for c in chunks]
    else:
        payloads = [b'{"requests":[' + b",".join(b for b, _ in c) + b"]}" for c in chunks]
    media = arrow.MEDIA_TYPE if in_arrow else JSON
    queue = list(reversed(payloads))
    deadline = time.monotonic() + args.max_seconds

    async def worker() -> None:
        http = Pool(url)
        while queue and time.monotonic() < deadline:
            body = queue.pop()
            start = time.perf_counter()
            answer = await http.call("POST", "/v1/decide_batch", body, media)
            res.latencies.append(time.perf_counter() - start)
            if in_arrow:
                res.ids.extend(arrow.read_table(answer).column("decision_id").to_pylist())
            else:
                res.ids.extend(d["decision_id"] for d in orjson.loads(answer)["decisions"])

    await asyncio.gather(*(worker() for _ in range(res.concurrency)))


async def measure(res: Result, spec: str, args: argparse.Namespace, root: Path) -> Result:
    name = f"{res.case}-{res.backend}-{res.endpoint}-{res.durability}"
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
    server = Server(spec, res.durability, root / name, res.backend)
    try:
        await wait_ready(server.url)
        shape = (args.arms, args.features)
        run = single if res.endpoint == "decide" else batch
        n = args.decisions if run is single else args.batch_decisions
        if res.rate is not None:  # a fixed duration at the offered rate
            n = int(res.rate * args.offered_seconds)
        warm = Result(res.case, res.durability, res.endpoint, res.concurrency)
        await run(server.url, warm, bodies(max(args.batch, 300), *shape, seed=1), args)
        work = bodies(n, *shape, seed=2)
        before = await training_seconds(server.url)
        cpu = server.cpu()
        start = time.perf_counter()
        await run(server.url, res, work, args)
        res.seconds = time.perf_counter() - start
        if cpu is not None:
            res.server_cpu = server.cpu() - cpu  # type: ignore[operator]
        after = await training_seconds(server.url)
        if spec == NEURAL:
            res.training = min(1.0, (after[0] - before[0]) / res.seconds)
            res.trainings = after[1] - before[1]
        res.decisions, res.rewards = len(res.ids), len(res.rewarded)
    finally:
        server.kill()  # kill -9 (local): what was answered must be in the log
    if server.backend == "noop":
        res.lost = -1  # nothing is logged
        return res
    decisions, rewards = server.logged()
    res.lost = len(set(res.ids) - decisions) + len(set(res.rewarded) - rewards)
    return res


#: The answer of the no-op deployment (a decision of 10 arms, as the cases ask).
NOOP_ANSWER = orjson.dumps(
    {
        "decision_id": "0:" + "0" * 32,
        "arm": 0,
        "propensity": 1.0,
        "mean": [0.0] * 10,
        "width": [0.0] * 10,
        "model_version": 0,
        "rewards_learned": 0,
        "sigma2": 1.0,
    }
)


async def noop_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """An ASGI app that reads a request's body and answers :data:`NOOP_ANSWER` (``/metrics``:
    nothing)."""
    if scope["type"] != "http":
        return
    more = True
    while more:
        more = (await receive()).get("more_body", False)
    body = b"" if scope["path"] == "/metrics" else NOOP_ANSWER
    headers = [(b"content-type", JSON.encode()), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def noop_server() -> None:
    """``--noop-server``: a Ray instance started as ``deepbandits serve --backend ray`` starts
    it, Serve's proxy on a free loopback port, and a no-op ingress deployment (module notes),
    until SIGTERM."""
    import ray
    from ray import serve

    from deepbandits.serve.ray_app import ACTOR_OPTIONS, LOGGING
    from deepbandits.serve.ray_run import ray_init_options

    @serve.deployment(
        max_ongoing_requests=1024, ray_actor_options=ACTOR_OPTIONS, logging_config=LOGGING
    )
    @serve.ingress()
    class Noop:
        def __serve_build_asgi_app__(self) -> Any:
            return noop_app

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    ray.init(**ray_init_options("127.0.0.1", None))
    with socket.socket() as sock:  # once Ray's own processes hold their ports
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port}, logging_config=LOGGING)
        serve.run(Noop.bind(), name="noop", route_prefix="/")
        print(f"no-op on http://127.0.0.1:{port} (Ray Serve)", file=sys.stderr, flush=True)
        while not stop:
            time.sleep(0.2)
    finally:
        serve.shutdown()
        ray.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--decisions", type=int, default=8000, help="per single-endpoint case")
    parser.add_argument("--batch-decisions", type=int, default=100_000, help="per batch case")
    parser.add_argument("--batch", type=int, default=1000, help="decisions per batch request")
    parser.add_argument("--concurrency", type=int, default=16, help="async clients")
    parser.add_argument(
        "--offered-seconds", type=float, default=15.0, help="length of an offered-rate case"
    )
    parser.add_argument(
        "--linucb-rate", type=float, default=2000.0, help="decisions/s offered to LinUCB"
    )
    parser.add_argument(
        "--neural-rate", type=float, default=1000.0, help="decisions/s offered to the neural case"
    )
    parser.add_argument(
        "--ray-rate", type=float, default=1000.0, help="decisions/s offered to LinUCB on Ray"
    )
    parser.add_argument("--reward-delay", type=float, default=0.01, help="seconds")
    parser.add_argument("--max-seconds", type=float, default=20.0, help="per case")
    parser.add_argument("--arms", type=int, default=10)
    parser.add_argument("--features", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="a tenth of the work")
    parser.add_argument("--only", help="run only the cases whose name contains this")
    parser.add_argument(
        "--out", default=str(OUT), help="Markdown file written with the table ('' for none)"
    )
    parser.add_argument("--no-ray", action="store_true", help="the local backend only")
    parser.add_argument("--noop-server", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.noop_server:
        noop_server()
        return
    load_before = os.getloadavg()[0]
    if args.quick:
        args.decisions //= 10
        args.batch_decisions //= 10
        args.offered_seconds /= 10
    cases = [
        ("LinUCB", LINUCB, "normal", "decide", args.concurrency, None),
        ("LinUCB", LINUCB, "full", "decide", args.concurrency, None),
        ("LinUCB", LINUCB, "normal", "decide", args.concurrency, args.linucb_rate),
        ("LinUCB-IGW", IGW, "normal", "decide", args.concurrency, None),
        ("LinUCB-IGW", IGW, "normal", "decide", args.concurrency, args.linucb_rate),
        (
            "LinUCB-IGW + control + 2 challengers",
            EXPERIMENT,
            "normal",
            "decide",
            args.concurrency,
            None,
        ),
        (
            "LinUCB-IGW + control + 2 challengers",
            EXPERIMENT,
            "normal",
            "decide",
            args.concurrency,
            args.linucb_rate,
        ),
        ("Neural-σ²-LinUCB (training)", NEURAL, "normal", "decide", args.concurrency, None),
        (
            "Neural-σ²-LinUCB (training)",
            NEURAL,
            "normal",
            "decide",
            args.concurrency,
            args.neural_rate,
        ),
        ("LinUCB", LINUCB, "normal", "decide_batch (JSON)", 2, None),
        ("LinUCB", LINUCB, "normal", "decide_batch (Arrow)", 2, None),
        ("LinUCB", LINUCB, "full", "decide_batch (Arrow)", 2, None),
    ]
    cases = [(*case, "local") for case in cases]
    if not args.no_ray:
        for backend in ("ray-1", "ray-2"):
            cases += [
                ("LinUCB", LINUCB, "normal", "decide", args.concurrency, None, backend),
                ("LinUCB", LINUCB, "normal", "decide", args.concurrency, args.ray_rate, backend),
                ("LinUCB", LINUCB, "normal", "decide_batch (JSON)", 2, None, backend),
                ("LinUCB", LINUCB, "normal", "decide_batch (Arrow)", 2, None, backend),
            ]
        cases += [("no-op (proxy ceiling)", "", "-", "decide", args.concurrency, None, "noop")]
    results = []
    with tempfile.TemporaryDirectory(prefix="serve-load-") as tmp:
        for name, spec, durability, endpoint, concurrency, rate, backend in cases:
            offered = "closed" if rate is None else "offered"
            words = f"{name} {backend} {endpoint} {durability} {offered}".lower()
            if args.only and args.only.lower() not in words:
                continue
            res = Result(name, durability, endpoint, concurrency, rate, backend)
            res = uvloop.run(measure(res, spec, args, Path(tmp)))
            res.case = name
            print(" | ".join(res.row()), file=sys.stderr)
            results.append(res)
    report = render(results, args, load_before)
    print(report)
    if args.out:
        write_atomic(args.out, report)


def render(results: list[Result], args: argparse.Namespace, load_before: float) -> str:
    """The run as Markdown: what was run, on what, and one table row per case."""
    head = ["policy", "backend", "durability", "endpoint", "clients", "offered/s", "decisions"]
    head += ["s"]
    head += ["decisions/s"]
    head += ["decide p50 / p95 / p99 ms", "rewards", "reward p99 ms", "training"]
    head += ["server CPU ms per decision", "lost"]
    command = shlex.join(["python", "benchmarks/serve_load.py", *sys.argv[1:]])
    lines = [
        f"# `benchmarks/serve_load.py` (issues 24, 46), measured {time.strftime('%Y-%m-%d')}",
        "",
        f"`{command}`: {args.arms} arms x {args.features} features, reward delay "
        f"{args.reward_delay} s; {os.cpu_count()} CPUs shared by the server (its own process) "
        f"and the clients (one process), Python {sys.version.split()[0]}; load average "
        f"{load_before:.1f} at the start of the run, {os.getloadavg()[0]:.1f} at its end "
        "(the machine is shared). `server CPU ms per decision`: the server process's CPU time "
        "over the run divided by the decisions answered (their rewards included), from "
        "`/proc`. After each case the server was killed with SIGKILL and every answered "
        "decision and reward looked up in its log (`lost`).",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
        *("| " + " | ".join(res.row()) + " |" for res in results),
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
