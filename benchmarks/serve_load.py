"""A bounded load test of ``deepbandits serve`` on loopback (not a test):
``python benchmarks/serve_load.py [--quick] [--decisions N] [--concurrency C]
[--reward-delay S] [--max-seconds T]``.

Each case starts ``deepbandits serve`` as its own process on a new state folder (127.0.0.1, a
free port), warms it up, then runs concurrent async clients (``httpx.AsyncClient``, one
connection per client) in this process: each decides (``POST /v1/decide``) and sends the
decision's reward (``POST /v1/reward``) ``--reward-delay`` seconds after the answer, until
``--decisions`` decisions were answered or ``--max-seconds`` passed (then it stops by itself).
Request bodies are encoded before the clock starts. The batch case sends ``POST
/v1/decide_batch`` requests of ``--batch`` decisions (no rewards: the API has no batch reward).

After the run the server is killed with SIGKILL and its log read with ``sqlite3``: every
decision and reward that was answered must be there (``lost``, must be 0). Neural-σ²-LinUCB
trains on a schedule that keeps a training running; ``training`` is the share of the measured
time a training ran (``deepbandits_training_seconds`` of ``/metrics``).

Prints one Markdown table: decisions/s (answered decisions over the run's wall time), the
client-measured latency of ``decide`` (p50/p95/p99; of the whole batch request for the batch
endpoint), rewards answered and the reward's p99, and the server's CPU time per decision (its
reward included; from ``/proc``), which does not depend on what else runs on the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np

LINUCB = "linucb:reward_range=[0,1],seed=0"
#: the default network; a training every 100 rewards (after 200) of 300 steps: one always runs
NEURAL = (
    "neural-sigma2-linucb:reward_range=[0,1],train_start=200,train_every=100,warmup_every=0,"
    "train_steps=300,seed=0"
)
HEADERS = {"content-type": "application/json"}
NODELAY = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]


@dataclass
class Result:
    """What one case measured."""

    case: str
    durability: str
    endpoint: str
    concurrency: int
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
            self.durability,
            self.endpoint,
            str(self.concurrency),
            f"{self.decisions:,}",
            f"{self.seconds:.1f}",
            f"{rate:,.0f}",
            f"{ms(self.latencies, 50)} / {ms(self.latencies, 95)} / {ms(self.latencies, 99)}",
            f"{self.rewards:,}",
            ms(self.reward_latencies, 99),
            train,
            "-" if self.server_cpu is None else f"{self.server_cpu / self.decisions * 1e3:.3f}",
            str(self.lost),
        ]


class Server:
    """``deepbandits serve`` as a process on a new state folder."""

    def __init__(self, spec: str, durability: str, folder: Path) -> None:
        self.folder = folder
        err = folder.with_suffix(".err")
        argv = [sys.executable, "-m", "deepbandits", "serve", "--policy", spec, "--state"]
        argv += [str(folder), "--port", "0", "--durability", durability]
        with open(err, "w") as f:
            self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=f)
        deadline = time.monotonic() + 120
        while not (found := re.search(r" on (http://127\.0\.0\.1:\d+) ", err.read_text())):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"the service did not start: {err.read_text()}")
            time.sleep(0.05)
        self.url = found[1]

    def cpu(self) -> float | None:
        """Seconds of CPU the server used so far (Linux's /proc; None elsewhere)."""
        try:
            fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def kill(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(30)

    def logged(self) -> tuple[set[str], set[str]]:
        """The decision ids of the log's decision and reward events."""
        path = f"file:{self.folder / 'events.sqlite'}?mode=ro"
        with closing(sqlite3.connect(path, uri=True)) as conn:
            rows = conn.execute("SELECT kind, decision_id FROM events").fetchall()
        return {i for k, i in rows if k == "decision"}, {i for k, i in rows if k == "reward"}


def bodies(n: int, arms: int, features: int, seed: int) -> list[bytes]:
    rng = np.random.default_rng(seed)
    X = np.round(rng.standard_normal((n, arms, features)), 6)
    return [json.dumps({"contexts": x.tolist()}).encode() for x in X]


def reward_of(body: bytes, arm: int) -> float:
    """A reward in [0, 1] that depends on the arm's context (a logistic of its sum)."""
    return float(1.0 / (1.0 + np.exp(-sum(json.loads(body)["contexts"][arm]))))


def client(url: str) -> httpx.AsyncClient:
    transport = httpx.AsyncHTTPTransport(socket_options=NODELAY, retries=0)
    return httpx.AsyncClient(base_url=url, headers=HEADERS, transport=transport, timeout=30.0)


async def wait_ready(url: str) -> None:
    async with client(url) as http:
        deadline = time.monotonic() + 120
        while True:
            try:
                if (await http.get("/v1/health")).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the service at {url} does not answer")
            await asyncio.sleep(0.05)


async def training_seconds(http: httpx.AsyncClient) -> tuple[float, int]:
    """``deepbandits_training_seconds_sum`` and ``deepbandits_trainings_total``."""
    text = (await http.get("/metrics")).text
    total = re.search(r"^deepbandits_training_seconds_sum (\S+)", text, re.M)
    count = re.search(r"^deepbandits_trainings_total (\S+)", text, re.M)
    return float(total[1]) if total else 0.0, int(float(count[1])) if count else 0


async def single(url: str, res: Result, work: list[bytes], args: argparse.Namespace) -> None:
    """Concurrent clients deciding and rewarding until the work is done or time is up."""
    queue = list(reversed(work))
    deadline = time.monotonic() + args.max_seconds
    pending: set[asyncio.Task[None]] = set()

    async def reward(http: httpx.AsyncClient, decision_id: str, value: float) -> None:
        if args.reward_delay:
            await asyncio.sleep(args.reward_delay)
        body = json.dumps({"decision_id": decision_id, "reward": value}).encode()
        start = time.perf_counter()
        answer = await http.post("/v1/reward", content=body)
        res.reward_latencies.append(time.perf_counter() - start)
        answer.raise_for_status()
        res.rewarded.append(decision_id)

    async def worker() -> None:
        async with client(url) as http:
            while queue and time.monotonic() < deadline:
                body = queue.pop()
                start = time.perf_counter()
                answer = await http.post("/v1/decide", content=body)
                res.latencies.append(time.perf_counter() - start)
                answer.raise_for_status()
                data = answer.json()
                res.ids.append(data["decision_id"])
                value = reward_of(body, data["arm"])
                if args.reward_delay:
                    task = asyncio.create_task(reward(http, data["decision_id"], value))
                    pending.add(task)
                    task.add_done_callback(pending.discard)
                else:
                    await reward(http, data["decision_id"], value)
            while pending:
                await asyncio.gather(*list(pending))

    await asyncio.gather(*(worker() for _ in range(res.concurrency)))


async def batch(url: str, res: Result, work: list[bytes], args: argparse.Namespace) -> None:
    """Concurrent clients sending batches of ``args.batch`` requests."""
    size = args.batch
    chunks = [work[i : i + size] for i in range(0, len(work) - size + 1, size)]
    payloads = [b'{"requests":[' + b",".join(c) + b"]}" for c in chunks]
    queue = list(reversed(payloads))
    deadline = time.monotonic() + args.max_seconds

    async def worker() -> None:
        async with client(url) as http:
            while queue and time.monotonic() < deadline:
                body = queue.pop()
                start = time.perf_counter()
                answer = await http.post("/v1/decide_batch", content=body)
                res.latencies.append(time.perf_counter() - start)
                answer.raise_for_status()
                res.ids.extend(d["decision_id"] for d in answer.json()["decisions"])

    await asyncio.gather(*(worker() for _ in range(res.concurrency)))


async def measure(res: Result, spec: str, args: argparse.Namespace, root: Path) -> Result:
    server = Server(spec, res.durability, root / f"{res.case}-{res.endpoint}-{res.durability}")
    try:
        await wait_ready(server.url)
        shape = (args.arms, args.features)
        run = single if res.endpoint == "decide" else batch
        n = args.decisions if run is single else args.batch_decisions
        warm = Result(res.case, res.durability, res.endpoint, res.concurrency)
        await run(server.url, warm, bodies(max(args.batch, 300), *shape, seed=1), args)
        work = bodies(n, *shape, seed=2)
        async with client(server.url) as http:
            before = await training_seconds(http)
            cpu = server.cpu()
            start = time.perf_counter()
            await run(server.url, res, work, args)
            res.seconds = time.perf_counter() - start
            if cpu is not None:
                res.server_cpu = server.cpu() - cpu  # type: ignore[operator]
            after = await training_seconds(http)
        if spec != LINUCB:
            res.training = min(1.0, (after[0] - before[0]) / res.seconds)
            res.trainings = after[1] - before[1]
        res.decisions, res.rewards = len(res.ids), len(res.rewarded)
    finally:
        server.kill()  # kill -9: what was answered must be in the log
    decisions, rewards = server.logged()
    res.lost = len(set(res.ids) - decisions) + len(set(res.rewarded) - rewards)
    return res


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--decisions", type=int, default=8000, help="per single-endpoint case")
    parser.add_argument("--batch-decisions", type=int, default=100_000, help="per batch case")
    parser.add_argument("--batch", type=int, default=1000, help="decisions per batch request")
    parser.add_argument("--concurrency", type=int, default=16, help="async clients")
    parser.add_argument("--reward-delay", type=float, default=0.01, help="seconds")
    parser.add_argument("--max-seconds", type=float, default=20.0, help="per case")
    parser.add_argument("--arms", type=int, default=10)
    parser.add_argument("--features", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="a tenth of the work")
    parser.add_argument("--only", help="run only the cases whose name contains this")
    args = parser.parse_args()
    if args.quick:
        args.decisions //= 10
        args.batch_decisions //= 10
    cases = [
        ("LinUCB", LINUCB, "normal", "decide", args.concurrency),
        ("LinUCB", LINUCB, "full", "decide", args.concurrency),
        ("Neural-σ²-LinUCB (training)", NEURAL, "normal", "decide", args.concurrency),
        ("LinUCB", LINUCB, "normal", "decide_batch", 2),
        ("LinUCB", LINUCB, "full", "decide_batch", 2),
    ]
    results = []
    with tempfile.TemporaryDirectory(prefix="serve-load-") as tmp:
        for name, spec, durability, endpoint, concurrency in cases:
            if args.only and args.only.lower() not in f"{name} {endpoint} {durability}".lower():
                continue
            res = Result(name.split(" ")[0], durability, endpoint, concurrency)
            res = asyncio.run(measure(res, spec, args, Path(tmp)))
            res.case = name
            print(" | ".join(res.row()), file=sys.stderr)
            results.append(res)
    head = ["policy", "durability", "endpoint", "clients", "decisions", "s", "decisions/s"]
    head += ["decide p50 / p95 / p99 ms", "rewards", "reward p99 ms", "training"]
    head += ["server CPU ms per decision", "lost"]
    print(
        f"\n{args.arms} arms x {args.features} features, reward delay {args.reward_delay} s, "
        f"{os.cpu_count()} CPUs; server and clients on the same machine\n"
    )
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for res in results:
        print("| " + " | ".join(res.row()) + " |")


if __name__ == "__main__":
    main()
