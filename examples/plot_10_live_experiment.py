"""
# A live experiment: control group, lift, a challenger in shadow, promotion

A served policy answers three questions from its own traffic when it explores with exact
propensities above a floor: is it better than what we had (its lift over a control group, with
an interval), would a candidate be better still (the candidate's value estimated in shadow,
before it serves a single request), and can the candidate take over without losing anything
(a promotion, recorded in the log). This example runs that workflow against a simulated
environment whose mean rewards are known, so every estimate can be put beside the truth.

The service runs in this process: `deepbandits.serve.state.ServiceState` is what
`deepbandits serve` puts behind HTTP, with the same state folder and log. Its decision ids are
random, as a service's are, and so is the seed of the hash that puts 5 % of them in the control
group; the numbers below therefore change a little from one run to the next (the environment
and the policies are seeded), and the truth they are compared with is computed in the same run.
"""

import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch
from threadpoolctl import threadpool_limits

import deepbandits as db
from deepbandits.serve.state import ServiceState

# Rounds are many small operations: one thread each for torch and BLAS, as db.run does.
threadpool_limits(1, "blas")
torch.set_num_threads(1)

# %%
# The environment: 4 arms, each a context of 10 features, and the mean reward of arm a is
# μ(x, a) = xₐᵀθ, θ unknown to the policies, with Gaussian noise (standard deviation 0.5).
# `next_round()` gives the contexts and every arm's mean μ; `reward(arm)` the noisy reward.
#
# The service: LinUCB's ridge model with inverse gap weighting (`explore=igw`), every arm kept
# at a probability of at least 0.05 (`min_propensity`), so that its log can evaluate any other
# policy; 5 % of the requests are decided by a uniform control. The lift's sliding window holds
# the last 2000 rewards.

env = db.make_env("linear", d=10, n_arms=4, noise="fixed", noise_std=0.5, seed=0)
folder = Path(tempfile.mkdtemp()) / "state"
CHAMPION = "linucb:explore=igw,min_propensity=0.05,seed=0"
state = ServiceState(
    folder, policy=CHAMPION, control="uniform", control_share=0.05, lift_window=2000
)

# %%
# The truth. Before each request the simulation asks the served policy for its probability of
# every arm, π(a | x) (`probabilities` reads and changes nothing), and keeps Σₐ π(a | x) μ(x, a),
# its expected reward on that request; the uniform control's is the mean of μ over the arms. The
# true lift is the difference of the two, averaged over every request (those of both groups):
# the lift the service would measure with unlimited traffic. A challenger's true value is the
# same sum with its own probabilities, as it stands at each request, averaged over the requests
# it saw. (The service evaluates a challenger a little later, once the round's batch of 32
# rewards is complete, as it stands then: what it learns in between moves the two apart a
# little.) Only a simulation can do this: a service does not know μ.

CHALLENGER = "igw-floor-0.01"
true_served: list[float] = []  # per request: the served policy's expected reward
true_lift: list[float] = []  # per request: the served policy's expected reward − the control's
true_challenger: list[float] = []  # per request seen by the challenger: its expected reward
trace: list[dict] = []  # the service's reports every 250 requests, beside the truth


def serve(n: int, challenger: str | None = None) -> None:
    """Serve ``n`` requests, each rewarded at once; track the truth of the lift (and of
    ``challenger``'s value)."""
    for _ in range(n):
        rnd = env.next_round()
        X, mu = rnd.contexts, rnd.expected_rewards
        true_served.append(float(state.policy.probabilities(X) @ mu))
        true_lift.append(true_served[-1] - float(mu.mean()))
        if challenger is not None:
            shadow = state.experiment.challengers[challenger].policy
            true_challenger.append(float(shadow.probabilities(X) @ mu))
        decision, commit = state.decide(X)
        commit.result()  # on disk: a service answers only now
        _, commit = state.learn(decision.id, env.reward(decision.arm))
        commit.result()
        if len(true_lift) % 250 == 0:
            row = {
                "t": len(true_lift),
                "lift": state.lift()["all"],
                "true_lift": np.mean(true_lift),
            }
            if challenger is not None:
                report = state.challengers()["challengers"][0]
                row["estimates"] = {e["estimator"]: e for e in report["estimates"]}
                row["true_challenger"] = np.mean(true_challenger)
                row["true_champion"] = np.mean(true_served[-len(true_challenger) :])
            trace.append(row)


def interval(d: dict, key: str = "lift") -> str:
    return f"{d[key]:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]"


# %%
# Serve 3000 requests, then read the lift (`GET /v1/lift` of a service): each group's rewards
# and mean, the lift (served policy's mean reward minus the control's) and Welch's 95 %
# interval, over all time and over the window.

serve(3000)
lift = state.lift()
for group in ("policy", "control"):
    g = lift["all"][group]
    print(f"{group:8s} {g['rewards']:5d} rewards, mean {g['mean']:+.3f}")
print(f"lift (all time)     {interval(lift['all'])}")
print(f"true lift           {np.mean(true_lift):+.3f}")
covered = lift["all"]["low"] <= np.mean(true_lift) <= lift["all"]["high"]
print("the interval covers the true lift:", covered)

# %%
# The served policy keeps every arm at 5 % or more: with 4 arms, at least 15 % of its
# probability goes to the three it thinks are worse. A challenger with a floor of 0.01 explores less
# (and still keeps a floor, so the log stays evaluable once it serves). It is registered in
# shadow (`POST /v1/challengers`): from now on it looks at every request, learns from every
# reward (it starts from nothing), and never serves. Its value on the served traffic is
# estimated by IPS, SNIPS and DR, each with a 95 % interval.

state.add_challenger("linucb:explore=igw,min_propensity=0.01,seed=1", name=CHALLENGER)
serve(3000, CHALLENGER)
board = state.challengers()  # GET /v1/challengers
report = board["challengers"][0]
print(f"challenger {report['name']!r}, {report['rounds']} rounds")
truth = np.mean(true_challenger)
for e in report["estimates"]:
    covers = "covers" if e["low"] <= truth <= e["high"] else "misses"
    print(f"  {e['estimator']:6s} {interval(e, 'value')}  {covers} the true value")
print(f"  true value {truth:+.3f}")
support = report["support"]
print(
    f"  support: effective sample size {support['ess']:.0f}, largest weight"
    f" {support['max_weight']:.1f}, smallest propensity {support['min_propensity']:.3f},"
    f" warnings {support['warnings']}"
)
champion = board["champion"]  # its rewards since the folder was created
print(
    f"champion: mean reward {champion['mean_reward']:+.3f} over its {champion['rewards']}"
    f" rewards; true value on the challenger's requests {np.mean(true_served[3000:]):+.3f}"
)

# %%
# The challenger is estimated above what the champion earns: promote it (`POST /v1/promote`).
# It serves from the next request on, the champion's version goes from 0 to 1 in every answer
# and in the log, and the former champion becomes a challenger under its own name, so promoting
# it back would be a rollback. Then serve 1000 more requests: the window (the last 2000
# rewards) shows the new champion's lift before the all-time figure does.

print(state.promote(CHALLENGER))
serve(1000)
lift = state.lift()
print(f"lift (all time)     {interval(lift['all'])}, true {np.mean(true_lift):+.3f}")
print(f"lift (last 2000)    {interval(lift['window'])}, true {np.mean(true_lift[-2000:]):+.3f}")
print("challengers now:", [c["name"] for c in state.challengers()["challengers"]])

# %%
# Stop without a checkpoint, as a `kill -9` would leave the folder, and open it again: the log
# is replayed, the promotion included, and the service resumes with the same champion, version,
# challengers and figures.

before = (state.lift(), state.challengers()["challengers"])
state.close()
state = ServiceState(folder)
health = state.health()
print(f"replayed {state.replayed} events")
print("champion:", health["champion"], "version", health["champion_version"])
print("challengers:", health["challengers"])
print(
    "same lift and challengers as before:",
    (state.lift(), state.challengers()["challengers"]) == before,
)
state.close(snapshot=True)

# %%
# The lift's estimate and interval as the requests came in, against the true lift, and the
# challenger's estimates against its true value (dashed) and the champion's (dotted) on the same
# requests, from its registration to its promotion.

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6))
t = [r["t"] for r in trace]
ax1.plot(t, [r["lift"]["lift"] for r in trace], label="lift (all time)")
ax1.fill_between(
    t, [r["lift"]["low"] for r in trace], [r["lift"]["high"] for r in trace], alpha=0.25
)
ax1.plot(t, [r["true_lift"] for r in trace], "k--", label="true lift")
ax1.axvline(3000, color="grey", lw=0.8)
ax1.axvline(6000, color="grey", lw=0.8)
ax1.text(3000, ax1.get_ylim()[1], " challenger added", va="top", fontsize=8)
ax1.text(6000, ax1.get_ylim()[1], " promoted", va="top", fontsize=8)
ax1.set_xlabel("requests")
ax1.set_ylabel("served policy − control (mean reward)")
ax1.legend(loc="lower right")
shadow = [r for r in trace if "estimates" in r]
ts = [r["t"] - 3000 for r in shadow]
for name in ("ips", "dr"):
    ax2.plot(ts, [r["estimates"][name]["value"] for r in shadow], label=name.upper())
    ax2.fill_between(
        ts,
        [r["estimates"][name]["low"] for r in shadow],
        [r["estimates"][name]["high"] for r in shadow],
        alpha=0.2,
    )
ax2.plot(ts, [r["true_challenger"] for r in shadow], "k--", label="true value")
ax2.plot(ts, [r["true_champion"] for r in shadow], "k:", label="champion's true value")
ax2.set_xlabel("requests since the challenger was added")
ax2.set_ylabel("challenger's value (mean reward)")
ax2.legend(loc="lower right")
fig.tight_layout()
plt.show()
