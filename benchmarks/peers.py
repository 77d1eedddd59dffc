"""Speed against the peers, in one run (not a test): ``python benchmarks/peers.py [--quick]``.

The same classification stream (reward 1 for the arm of the true class, 0 otherwise) is played
one round at a time, decide then learn, by deepbandits' disjoint LinUCB (one ridge per arm on the
context x, fed ``np.repeat(x[None], K, axis=0)``) and by the LinUCB of MABWiser, Open Bandit
Pipeline (obp), contextualbandits and bayesianbandits, and by Vowpal Wabbit's
``cb_explore_adf``; deepbandits is also timed with ``decide_batch`` (B = 1000 decisions per call,
then ``learn_batch``). Two shapes: covertype (D = 54, K = 7) and shuttle (D = 9, K = 7).

The stream is synthetic (seeded: x ~ N(0, I), label = argmax of a random linear map of x), or
the real dataset, standardised, when ``--data real`` or ``--data auto`` and ``DEEPBANDITS_DATA``
holds it (nothing is downloaded).

Rounds per second is the best of 3 repeats of N rounds each (a fresh policy per repeat), N chosen
from a pilot run so that one repeat takes about 2 s (0.3 s with ``--quick``). BLAS and torch run
on one thread for every contender. "× fastest peer" divides a row's rate by the fastest peer's at
that shape.

Agreement: for each LinUCB peer, the first 300 rounds are played with the same α and λ; each
round compares the peer's scores with deepbandits' θᵀx + α‖x‖_{A⁻¹} (``policy.predict``; the
relative difference of a round is the largest difference over the arms divided by the largest
score magnitude), checks that the arm the peer chose is one of deepbandits' top-scored arms,
and both then learn that arm. How each peer is mapped to the same algorithm:

* MABWiser ``LearningPolicy.LinUCB(alpha=α, l2_lambda=λ, scale=False)``: its
  ``predict_expectations`` is xᵀβ + α√(xᵀA⁻¹x), the same index, except for an arm never played:
  MABWiser starts it at A⁻¹ = λI instead of I/λ, so it is compared (and timed) at λ = 1.
* obp ``LinUCB(epsilon=α)``: ``epsilon`` is the α of the index; λ is fixed at 1 (A⁻¹ starts at
  I), so obp is compared at λ = 1. obp does not return its scores: they are recomputed from its
  state (``A_inv``, ``b``) by the formula of its ``select_action``.
* contextualbandits ``LinUCB(alpha=α, lambda_=λ, fit_intercept=False, use_float=False,
  method="sm", ucb_from_empty=True)``: ``decision_function`` is the index (an arm never played
  scores α‖x‖/√λ plus noise below 1e-12 that breaks ties). Before its first fit it scores at
  random, so that round is not compared.
* bayesianbandits ``ContextualAgent`` with one ``NormalRegressor(alpha=λ, beta=1)`` per arm (prior
  precision λ, noise precision 1: posterior mean θ, covariance A⁻¹) and
  ``UpperConfidenceBound(alpha=Φ(α))``: the arm maximising the Φ(α)-quantile of the posterior of
  xᵀθ, i.e. θᵀx + α‖x‖_{A⁻¹}, but estimated from 1000 Monte Carlo draws. The exact scores are
  read from each arm's posterior (``coef_``, ``cov_``); its chosen arm differs from the exact
  argmax when two arms are within the Monte Carlo error (on the covertype shape, seed 0, its arm
  was among deepbandits' top-scored in 176 of 300 rounds with 1000 draws, 276 with 100,000).
* Vowpal Wabbit ``--cb_explore_adf -q sa`` (ε-greedy, ε = 0.05, on a per-arm linear model of the
  context learned by SGD) is NOT LinUCB: timed for speed only. Its examples are built as text
  and parsed once per round (predict, then the label set on the parsed example, learn), which is
  part of its time.

Peers are a benchmark-only extra, never runtime dependencies; a peer that is not installed gets
a row saying so. Install them with ``pip install -e ".[peers]"``.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray
from threadpoolctl import threadpool_limits

import deepbandits as db
from deepbandits._io import write_atomic
from deepbandits.envs.classification import column_statistics
from deepbandits.errors import DataError

Array = NDArray[np.float64]
Labels = NDArray[np.int64]

#: Shapes (D, K) of the paper's datasets the benchmark is run at.
SHAPES: dict[str, tuple[int, int]] = {"covertype": (54, 7), "shuttle": (9, 7)}
#: α and λ of every contender (timing and agreement); MABWiser and obp are run at λ = 1.
ALPHA, LAM = 0.5, 2.0
BATCH = 1000
STREAM_ROWS = 50 * BATCH
AGREE_ROUNDS = 300
#: Relative tolerance of the score agreement.
RTOL = 1e-9
#: Where the output of a full run (not ``--quick``) is written; the manual includes it
OUT = Path(__file__).parent / "results" / "peers.md"
PEER_PACKAGES = ("mabwiser", "obp", "contextualbandits", "bayesianbandits", "vowpalwabbit")


class Unavailable(Exception):
    """A contender that cannot run here (peer not installed, API not there yet)."""


@dataclass(frozen=True)
class Stream:
    """Contexts ``X`` ``[n, D]`` (float64) and labels ``y`` ``[n]`` in 0..K−1, played in order."""

    X: Array
    y: Labels
    n_arms: int
    source: str


def synthetic_stream(n_features: int, n_arms: int, n: int, seed: int) -> Stream:
    """x ~ N(0, I); the label is the argmax of a random linear map of x (seeded)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, n_features))
    y = np.argmax(X @ rng.standard_normal((n_features, n_arms)), axis=1)
    return Stream(X, y.astype(np.int64), n_arms, "synthetic")


def real_stream(name: str, n: int, seed: int) -> Stream:
    """``n`` rows of the real dataset in a seeded random order, standardised (column statistics
    of the whole dataset). Raises ``DataError`` when it is not in the data directory."""
    data = db.load_dataset(name, download=False)
    mean, scale = column_statistics(data.X)
    rows = np.random.default_rng(seed).permutation(len(data.y))[:n]
    rows = np.resize(rows, n)  # a dataset smaller than n is cycled
    X = (np.asarray(data.X[rows], dtype=np.float64) - mean) / scale
    source = f"real {name} ({len(data.y)} rows)"
    return Stream(X, data.y[rows].astype(np.int64), data.n_classes, source)


def make_stream(name: str, data: str, seed: int) -> Stream:
    """The stream of shape ``SHAPES[name]``: real (``data="real"``, or ``"auto"`` when
    ``DEEPBANDITS_DATA`` holds the dataset) or synthetic."""
    if data == "real" or (data == "auto" and os.environ.get("DEEPBANDITS_DATA")):
        try:
            return real_stream(name, STREAM_ROWS, seed)
        except DataError:
            if data == "real":
                raise
    return synthetic_stream(*SHAPES[name], STREAM_ROWS, seed)


# ---------------------------------------------------------------------------- contenders
class OneAtATime:
    """A contender that decides and learns one round at a time.

    Subclasses implement ``decide(x) -> arm`` and ``learn(x, arm, reward)`` (the reward of the
    arm just decided), and ``scores(x)`` (its LinUCB index of every arm, None when it has none
    to show) when it is a LinUCB peer.
    """

    def decide(self, x: Array) -> int:
        raise NotImplementedError

    def learn(self, x: Array, arm: int, reward: float) -> None:
        raise NotImplementedError

    def scores(self, x: Array) -> Array | None:
        return None

    def play(self, X: Array, y: Labels) -> None:
        """Decide and learn each row of ``X`` in order."""
        decide, learn = self.decide, self.learn
        for x, label in zip(X, y, strict=True):
            arm = decide(x)
            learn(x, arm, float(arm == label))


def deepbandits_policy(alpha: float, lam: float, seed: int) -> db.Policy:
    """Disjoint LinUCB: one ridge per arm on x."""
    return db.make_policy("linucb", per_arm=True, alpha=alpha, lam=lam, seed=seed)


class DeepBandits(OneAtATime):
    """``decide`` + ``learn`` (``api="decide"``), or the synchronous shortcut ``select`` +
    ``update`` (``api="select"``)."""

    def __init__(
        self,
        n_features: int,
        n_arms: int,
        alpha: float,
        lam: float,
        seed: int,
        api: str = "decide",
    ):
        self.policy = deepbandits_policy(alpha, lam, seed)
        self.n_arms, self.alpha = n_arms, alpha
        self._decisions = api == "decide"
        self._last: Any = None

    def _contexts(self, x: Array) -> Array:
        return np.repeat(x[None], self.n_arms, axis=0)

    def decide(self, x: Array) -> int:
        contexts = self._contexts(x)
        if self._decisions:
            self._last = self.policy.decide(contexts)
            return int(self._last.arm)
        self._last = contexts
        return self.policy.select(contexts)

    def learn(self, x: Array, arm: int, reward: float) -> None:
        if self._decisions:
            self.policy.learn(self._last, reward)
        else:
            self.policy.update(self._last, arm, reward)

    def scores(self, x: Array) -> Array:
        mean, width = self.policy.predict(self._contexts(x))
        return mean + self.alpha * width


class DeepBanditsBatch:
    """``decide_batch`` on B = 1000 requests, then ``learn_batch`` of their rewards."""

    def __init__(self, n_features: int, n_arms: int, alpha: float, lam: float, seed: int):
        self.policy = deepbandits_policy(alpha, lam, seed)
        self.n_arms = n_arms

    def play(self, X: Array, y: Labels) -> None:
        for start in range(0, len(y), BATCH):
            block = X[start : start + BATCH]
            decisions = self.policy.decide_batch(np.repeat(block[:, None], self.n_arms, axis=1))
            arms = np.fromiter((d.arm for d in decisions), np.int64, len(decisions))
            rewards = (arms == y[start : start + BATCH]).astype(np.float64)
            self.policy.learn_batch(decisions, rewards)


def _import(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise Unavailable(f"{module.split('.')[0]} not installed") from error


class MABWiser(OneAtATime):
    #: MABWiser starts an arm with A⁻¹ = λI instead of I/λ (``_RidgeRegression.init`` sets
    #: ``A_inv = A.copy()``), so an arm never played scores α√λ‖x‖ instead of α‖x‖/√λ: its
    #: index is LinUCB's only at λ = 1, where it is compared and timed.
    lam = 1.0

    def __init__(self, n_features: int, n_arms: int, alpha: float, lam: float, seed: int):
        mab = _import("mabwiser.mab")
        policy = mab.LearningPolicy.LinUCB(alpha=alpha, l2_lambda=lam, scale=False)
        self.model = mab.MAB(list(range(n_arms)), policy, seed=seed, n_jobs=1)
        # an empty fit sets every arm to its prior, so that it can predict from round 0
        self.model.fit(np.empty(0, np.int64), np.empty(0), np.empty((0, n_features)))

    def decide(self, x: Array) -> int:
        return int(self.model.predict(x[None]))

    def learn(self, x: Array, arm: int, reward: float) -> None:
        self.model.partial_fit(np.array([arm]), np.array([reward]), x[None])

    def scores(self, x: Array) -> Array:
        expectations = self.model.predict_expectations(x[None])
        return np.array([expectations[arm] for arm in sorted(expectations)])


class OBP(OneAtATime):
    #: obp's ridge starts at A = I: λ is 1 whatever is asked
    lam = 1.0

    def __init__(self, n_features: int, n_arms: int, alpha: float, lam: float, seed: int):
        linear = _import("obp.policy.linear")
        self.model = linear.LinUCB(
            dim=n_features, n_actions=n_arms, epsilon=alpha, batch_size=1, random_state=seed
        )
        self.alpha = alpha

    def decide(self, x: Array) -> int:
        return int(self.model.select_action(x[None])[0])

    def learn(self, x: Array, arm: int, reward: float) -> None:
        self.model.update_params(arm, reward, x[None])

    def scores(self, x: Array) -> Array:
        """obp's ``select_action`` formula on its state: xᵀA⁻¹b + ε√(xᵀA⁻¹x) per arm."""
        A_inv, b = self.model.A_inv, self.model.b
        mean = np.einsum("i,kij,jk->k", x, A_inv, b)
        width = np.sqrt(np.einsum("i,kij,j->k", x, A_inv, x))
        return mean + self.alpha * width


class ContextualBandits(OneAtATime):
    def __init__(self, n_features: int, n_arms: int, alpha: float, lam: float, seed: int):
        online = _import("contextualbandits.online")
        self.model = online.LinUCB(
            n_arms,
            alpha=alpha,
            lambda_=lam,
            fit_intercept=False,
            use_float=False,
            method="sm",
            ucb_from_empty=True,
            random_state=seed + 1,  # it wants a seed > 0
        )

    def decide(self, x: Array) -> int:
        return int(self.model.predict(x[None])[0])

    def learn(self, x: Array, arm: int, reward: float) -> None:
        self.model.partial_fit(x[None], np.array([arm]), np.array([reward]))

    def scores(self, x: Array) -> Array | None:
        if not self.model.is_fitted:  # it scores at random before its first fit
            return None
        return np.asarray(self.model.decision_function(x[None])[0], dtype=np.float64)


class BayesianBandits(OneAtATime):
    def __init__(self, n_features: int, n_arms: int, alpha: float, lam: float, seed: int):
        bb = _import("bayesianbandits")
        from scipy.stats import norm

        arms = [bb.Arm(k, learner=bb.NormalRegressor(alpha=lam, beta=1.0)) for k in range(n_arms)]
        policy = bb.UpperConfidenceBound(alpha=float(norm.cdf(alpha)))
        self.agent = bb.ContextualAgent(arms, policy, random_seed=seed)
        self.alpha, self.prior_precision = alpha, lam

    def decide(self, x: Array) -> int:
        return int(self.agent.pull(x[None])[0])

    def learn(self, x: Array, arm: int, reward: float) -> None:
        self.agent.select_for_update(arm).update(x[None], np.array([reward]))

    def scores(self, x: Array) -> Array:
        """Exact posterior index per arm: coef_ᵀx + α√(xᵀ cov_ x) (the prior before the arm's
        first update). ``cov_`` is the posterior covariance (``cov_inv_`` holds only the upper
        triangle of the precision)."""
        out = []
        for arm in self.agent.arms:
            learner = arm.learner
            if hasattr(learner, "coef_"):
                mean = float(x @ learner.coef_)
                variance = float(x @ learner.cov_.covariance @ x)
            else:
                mean, variance = 0.0, float(x @ x) / self.prior_precision
            out.append(mean + self.alpha * math.sqrt(variance))
        return np.array(out)


class VowpalWabbit(OneAtATime):
    """``--cb_explore_adf -q sa``: ε-greedy contextual bandit, not LinUCB (speed only)."""

    def __init__(self, n_features: int, n_arms: int, alpha: float, lam: float, seed: int):
        vw = _import("vowpalwabbit")
        self.model = vw.Workspace(f"--cb_explore_adf -q sa --quiet --random_seed {seed}")
        self.actions = [f"|a a{k}" for k in range(n_arms)]
        self.rng = np.random.default_rng(seed)
        self._last: tuple[list[Any], list[float]] = ([], [])

    def decide(self, x: Array) -> int:
        features = " ".join(map("%d:%.7g".__mod__, enumerate(x.tolist())))
        examples = self.model.parse([f"shared |s {features}", *self.actions])
        pmf = self.model.predict(examples)
        self._last = (examples, pmf)
        arm = int(np.searchsorted(np.cumsum(pmf), self.rng.random() * sum(pmf), side="right"))
        return min(arm, len(pmf) - 1)

    def learn(self, x: Array, arm: int, reward: float) -> None:
        examples, pmf = self._last
        examples[1 + arm].set_label_string(f"0:{-reward}:{pmf[arm]}")
        self.model.learn(examples)
        self.model.finish_example(examples)


Factory = Callable[[int, int, float, float, int], Any]


@dataclass(frozen=True)
class Contender:
    name: str
    factory: Factory
    note: str
    package: str | None = None  # the peer's package (None: deepbandits)
    compare: bool = False  # a LinUCB peer whose scores are checked against deepbandits'
    batch: int = 1  # rounds per call: N is a multiple of it


CONTENDERS = (
    Contender("deepbandits, decide + learn", DeepBandits, "disjoint LinUCB"),
    Contender(
        f"deepbandits, decide_batch (B={BATCH}) + learn_batch",
        DeepBanditsBatch,
        "disjoint LinUCB",
        batch=BATCH,
    ),
    Contender(
        "deepbandits, select + update",
        partial(DeepBandits, api="select"),
        "disjoint LinUCB (synchronous shortcut)",
    ),
    Contender("MABWiser", MABWiser, "LinUCB (λ = 1)", "mabwiser", compare=True),
    Contender("obp (Open Bandit Pipeline)", OBP, "LinUCB (λ = 1)", "obp", compare=True),
    Contender("contextualbandits", ContextualBandits, "LinUCB", "contextualbandits", compare=True),
    Contender(
        "bayesianbandits",
        BayesianBandits,
        "Bayesian UCB, Φ(α)-quantile from 1000 draws",
        "bayesianbandits",
        compare=True,
    ),
    Contender(
        "Vowpal Wabbit cb_explore_adf",
        VowpalWabbit,
        "ε-greedy, not LinUCB (speed only)",
        "vowpalwabbit",
    ),
)


def contender_lam(factory: Factory) -> float:
    """The λ a contender is timed and compared at: ``LAM``, or the only one its peer supports."""
    return float(getattr(factory, "lam", LAM))


# ---------------------------------------------------------------------------- timing
def cyclic(stream: Stream, n: int) -> list[tuple[Array, Labels]]:
    """``n`` rounds of the stream, wrapping around: slices, no copies."""
    parts = []
    for start in range(0, n, len(stream.y)):
        stop = min(n - start, len(stream.y))
        parts.append((stream.X[:stop], stream.y[:stop]))
    return parts


def seconds(factory: Factory, stream: Stream, n: int, seed: int) -> float:
    """Wall time of ``n`` rounds played by a fresh contender."""
    runner = factory(stream.X.shape[1], stream.n_arms, ALPHA, contender_lam(factory), seed)
    parts = cyclic(stream, n)
    start = time.perf_counter()
    for X, y in parts:
        runner.play(X, y)
    return time.perf_counter() - start


def rounds_per_second(
    contender: Contender, stream: Stream, target_s: float, repeats: int, seed: int
) -> float:
    """Best of ``repeats`` rates over N rounds, N from a pilot run so that one repeat takes
    about ``target_s``."""
    pilot = max(300, 2 * contender.batch)
    rate = pilot / seconds(contender.factory, stream, pilot, seed)
    n = max(pilot, math.ceil(rate * target_s / pilot) * pilot)
    return n / min(seconds(contender.factory, stream, n, seed) for _ in range(repeats))


# ---------------------------------------------------------------------------- agreement
@dataclass(frozen=True)
class Agreement:
    rounds: int  # rounds whose scores were compared
    arms_in_best: int  # rounds whose peer arm is one of deepbandits' top-scored arms
    max_abs: float
    max_rel: float

    @property
    def ok(self) -> bool:
        return self.max_rel <= RTOL


def agreement(factory: Factory, stream: Stream, n_rounds: int, seed: int) -> Agreement:
    """Play ``n_rounds`` with the peer choosing; deepbandits learns the peer's arm each round."""
    shape = (stream.X.shape[1], stream.n_arms, ALPHA, contender_lam(factory), seed)
    peer, ours = factory(*shape), DeepBandits(*shape)
    compared = in_best = 0
    max_abs = max_rel = 0.0
    for x, label in zip(stream.X[:n_rounds], stream.y[:n_rounds], strict=True):
        mine, theirs = ours.scores(x), peer.scores(x)
        arm = peer.decide(x)
        if theirs is not None:
            diff = float(np.max(np.abs(mine - theirs)))
            scale = max(float(np.max(np.abs(mine))), float(np.max(np.abs(theirs))))
            compared += 1
            max_abs = max(max_abs, diff)
            max_rel = max(max_rel, diff / scale if scale > 0 else diff)
            in_best += bool(mine[arm] >= mine.max() - RTOL * abs(mine.max()))
        reward = float(arm == label)
        peer.learn(x, arm, reward)
        ours.policy.update(ours._contexts(x), arm, reward)
    return Agreement(compared, in_best, max_abs, max_rel)


# ---------------------------------------------------------------------------- report
def version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def measure(
    streams: dict[str, Stream], target_s: float, repeats: int, seed: int
) -> dict[tuple[str, str], float | str]:
    """Rounds per second of every contender at every shape (or why it cannot run)."""
    rates: dict[tuple[str, str], float | str] = {}
    for shape, stream in streams.items():
        for contender in CONTENDERS:
            try:
                rates[contender.name, shape] = rounds_per_second(
                    contender, stream, target_s, repeats, seed
                )
            except Unavailable as why:
                rates[contender.name, shape] = str(why)
            print(f"  timed {contender.name} at {shape}", file=sys.stderr, flush=True)
    return rates


def speed_table(rates: dict[tuple[str, str], float | str]) -> list[str]:
    """Markdown rows: rounds/s at each shape, and the ratio to the fastest peer there."""
    fastest = {
        shape: max(
            [rates[c.name, shape] for c in CONTENDERS if c.package is not None],
            key=lambda v: v if isinstance(v, float) else -1.0,
        )
        for shape in SHAPES
    }
    heads = " | ".join(
        f"{s} (D={d}, K={k}) rounds/s | × fastest peer" for s, (d, k) in SHAPES.items()
    )
    lines = [f"| contender | algorithm | {heads} |", "|---|---|" + "---|---|" * len(SHAPES)]
    for contender in CONTENDERS:
        cells = []
        for shape in SHAPES:
            rate, best = rates[contender.name, shape], fastest[shape]
            if not isinstance(rate, float):
                cells += [f"— ({rate})", "—"]
            elif isinstance(best, float):
                cells += [f"{rate:,.0f}", f"{rate / best:.2f}×"]
            else:
                cells += [f"{rate:,.0f}", "— (no peer installed)"]
        lines.append(f"| {contender.name} | {contender.note} | {' | '.join(cells)} |")
    return lines


def agreement_table(streams: dict[str, Stream], seed: int) -> tuple[list[str], bool]:
    """Markdown rows of the agreement of every LinUCB peer, and whether all scores agree."""
    lines = [
        "| peer | shape | rounds compared | peer's arm among deepbandits' top-scored | "
        "max abs score diff | max rel score diff | scores agree |",
        "|---|---|---|---|---|---|---|",
    ]
    ok = True
    for shape, stream in streams.items():
        for contender in CONTENDERS:
            if not contender.compare:
                continue
            try:
                result = agreement(contender.factory, stream, AGREE_ROUNDS, seed)
            except Unavailable as why:
                lines.append(f"| {contender.name} | {shape} | — ({why}) | — | — | — | — |")
                continue
            ok &= result.ok
            lines.append(
                f"| {contender.name} | {shape} | {result.rounds} | "
                f"{result.arms_in_best}/{result.rounds} | {result.max_abs:.1e} | "
                f"{result.max_rel:.1e} | {'yes' if result.ok else 'NO'} |"
            )
    return lines, ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="0.3 s per measurement, 2 repeats")
    parser.add_argument(
        "--data",
        choices=("auto", "synthetic", "real"),
        default="auto",
        help="the stream: real datasets from DEEPBANDITS_DATA (never downloaded), synthetic, or "
        "real when DEEPBANDITS_DATA is set and holds them (the default)",
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    target_s, repeats = (0.3, 2) if args.quick else (2.0, 3)
    torch.set_num_threads(1)
    try:
        streams = {name: make_stream(name, args.data, args.seed) for name in SHAPES}
    except DataError as error:
        parser.error(str(error))
    with threadpool_limits(1):
        rates = measure(streams, target_s, repeats, args.seed)
        agree_lines, ok = agreement_table(streams, args.seed)

    versions = ", ".join(f"{p} {version(p)}" for p in ("deepbandits", "numpy", *PEER_PACKAGES))
    text = [
        f"`python benchmarks/peers.py` on {date.today().isoformat()}, {os.cpu_count()} CPU cores. "
        f"Python {sys.version.split()[0]}; {versions}; BLAS and torch on 1 thread.",
        "Streams: " + "; ".join(f"{s}: {st.source}" for s, st in streams.items()) + ".",
        f"α = {ALPHA}, λ = {LAM} (MABWiser and obp: λ = 1). Rounds/s: best of {repeats} repeats "
        f"of N rounds (~{target_s} s each); one-at-a-time rows decide and learn each round.",
    ]
    missing = [p for p in PEER_PACKAGES if version(p) == "not installed"]
    if missing:
        text.append(f"Not installed: {', '.join(missing)} (pip install -e '.[peers]').")
    if not hasattr(deepbandits_policy(ALPHA, LAM, args.seed), "decide"):
        text.append(
            "This deepbandits has no decide API: its 'decide + learn' row is select + update."
        )
    text += ["", *speed_table(rates), ""]
    text.append(
        f"Agreement with deepbandits' disjoint LinUCB: first {AGREE_ROUNDS} rounds, same α and "
        "λ, both learning the peer's arm; scores agree when the relative difference is "
        f"≤ {RTOL:g}. Vowpal Wabbit's cb_explore_adf is not LinUCB: timed only, not compared.\n"
    )
    text += agree_lines
    print("\n".join(text))
    if not args.quick:
        write_atomic(OUT, "\n".join(text) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
