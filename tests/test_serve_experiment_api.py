"""The live experiment over HTTP (issue 50 §2–§3): ``GET /v1/lift``, ``GET/POST
/v1/challengers``, ``DELETE /v1/challengers/{name}``, ``POST /v1/promote``, their Prometheus
gauges, the ``group`` and ``champion_version`` columns of ``export-log``, the client's calls, and
``deepbandits serve --control/--control-share/--lift-window/--challenger``. Every refused call
answers the library's error body and changes nothing."""

from __future__ import annotations

import json
from urllib.parse import quote

import httpx
import numpy as np
import pandas as pd
import pytest
from prometheus_client.parser import text_string_to_metric_families

import deepbandits as db
from deepbandits.cli import main
from deepbandits.client import ServiceClient
from deepbandits.errors import NotSupportedError
from deepbandits.serve.control import in_control
from deepbandits.serve.server import BackgroundServer
from deepbandits.serve.state import ServiceState
from serve_support import LINUCB, contexts_stream, reward_of, running

JSON = {"content-type": "application/json"}
SHARE = 0.3
EPS = "linucb:epsilon=0.2"
WIDE = "linucb:alpha=0.5"


def seed_of(folder) -> int:
    """The seed of the hash that draws the control group (``service.json``)."""
    return int(json.loads((folder / "service.json").read_text())["experiment"]["seed"])


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """The samples of a Prometheus text by name and sorted labels."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def play(client: ServiceClient, seed: int, n: int) -> dict[str, float]:
    """``n`` decisions (single and in batches) rewarded by :func:`reward_of`: id -> reward."""
    stream = contexts_stream(seed, n)
    decisions = [client.decide(X) for X in stream[: n // 2]]
    decisions += client.decide_batch(np.stack(stream[n // 2 :]))
    rewards = {}
    for d, X in zip(decisions, stream, strict=True):
        rewards[d.id] = reward_of(X, d.arm)
        client.learn(d, rewards[d.id])
    return rewards


# ---------------------------------------------------------------------------- the lift
def test_the_lift_counts_each_group_s_rewards_and_means_and_metrics_and_export_agree(
    tmp_path, capsys
):
    folder = tmp_path / "s"
    with running(folder, LINUCB, control="uniform", control_share=SHARE) as (_, client):
        seed = seed_of(folder)
        stream = contexts_stream(0, 30)
        decided = [client.decide(X) for X in stream[:20]]
        decided += client.decide_batch(np.stack(stream[20:]))
        groups = {d.id: in_control(d.id, seed, SHARE) for d in decided}
        for d in decided:  # the control plays uniformly over the 3 arms
            assert d.propensity == pytest.approx(1 / 3) or not groups[d.id]
        rewards = {d.id: reward_of(X, d.arm) for d, X in zip(decided, stream, strict=True)}
        for d in decided:
            client.learn(d, rewards[d.id])
        lift = client.lift()
        by_group = {
            group: [r for i, r in rewards.items() if groups[i] == (group == "control")]
            for group in ("policy", "control")
        }
        assert min(map(len, by_group.values())) >= 3  # both groups have rewards
        assert lift["control"] == "uniform" and lift["share"] == SHARE
        assert lift["champion"] == LINUCB and lift["champion_version"] == 0
        for window in ("all", "window"):
            for group, values in by_group.items():
                assert lift[window][group]["rewards"] == len(values)
                assert lift[window][group]["mean"] == pytest.approx(np.mean(values), rel=1e-12)
                assert lift[window][group]["sd"] == pytest.approx(np.std(values, ddof=1))
            assert lift[window]["lift"] == pytest.approx(
                np.mean(by_group["policy"]) - np.mean(by_group["control"]), rel=1e-9
            )
            assert lift[window]["low"] < lift[window]["lift"] < lift[window]["high"]
        raw = httpx.get(f"{client.url}/v1/lift")
        assert raw.status_code == 200 and raw.json() == lift
        metrics = samples(client.metrics())
        for label, window in (("all", "all"), ("recent", "window")):
            for group in ("policy", "control"):
                key = (("group", group), ("window", label))
                assert metrics[("deepbandits_group_rewards", key)] == len(by_group[group])
                assert metrics[("deepbandits_group_mean_reward", key)] == pytest.approx(
                    lift[window][group]["mean"], rel=1e-12
                )
            for name, field in (("lift", "lift"), ("lift_low", "low"), ("lift_high", "high")):
                value = metrics[(f"deepbandits_{name}", (("window", label),))]
                assert value == pytest.approx(lift[window][field], rel=1e-12)
        assert metrics[("deepbandits_champion_version", ())] == 0
    for fmt in ("csv", "parquet"):
        out = tmp_path / f"log.{fmt}"
        assert main(["export-log", str(folder), "--format", fmt, "--out", str(out)]) == 0
        table = pd.read_csv(out) if fmt == "csv" else pd.read_parquet(out)
        assert sorted(table["decision_id"]) == sorted(groups)  # in log order: a batch's
        expected = ["control" if groups[i] else "policy" for i in table["decision_id"]]
        assert list(table["group"]) == expected  # champion's decisions before the control's
        assert (table["champion_version"] == 0).all()
        control = table[table["group"] == "control"]
        np.testing.assert_allclose(control["propensity"], 1 / 3)
    capsys.readouterr()


def test_unknown_values_have_no_sample_and_a_service_without_control_reports_its_policy_only(
    tmp_path,
):
    with running(tmp_path / "s", LINUCB) as (_, client):
        lift = client.lift()
        assert lift["control"] is None and lift["share"] == 0.0
        assert lift["all"]["policy"]["mean"] is None and lift["all"]["lift"] is None
        text = client.metrics()
        assert 'deepbandits_group_rewards{group="policy",window="all"} 0.0' in text
        assert "deepbandits_group_mean_reward{" not in text and "deepbandits_lift{" not in text
        rewards = play(client, 1, 6)
        lift = client.lift()
        assert lift["all"]["policy"]["rewards"] == 6 and lift["all"]["control"]["rewards"] == 0
        assert lift["all"]["policy"]["mean"] == pytest.approx(np.mean(list(rewards.values())))
        text = client.metrics()
        assert 'deepbandits_group_mean_reward{group="policy",window="all"}' in text
        assert 'deepbandits_group_mean_reward{group="control"' not in text
        assert "deepbandits_lift{" not in text  # no control: no lift
        health = client.health()
        assert health["control"] is None and health["challengers"] == []
        assert health["champion"] == LINUCB and health["champion_version"] == 0


# ---------------------------------------------------------------------------- challengers
def test_challengers_are_added_listed_estimated_removed_and_promoted(tmp_path):
    folder = tmp_path / "s"
    with running(folder, LINUCB, control="uniform", control_share=0.2) as (state, client):
        report = client.add_challenger(EPS, name="eps")
        assert report["name"] == "eps" and report["spec"] == EPS and report["rounds"] == 0
        assert [e["estimator"] for e in report["estimates"]] == ["ips", "snips", "dr"]
        assert all(e["value"] is None for e in report["estimates"])
        raw = httpx.post(f"{client.url}/v1/challengers", json={"spec": WIDE}, headers=JSON)
        assert raw.status_code == 200 and raw.json()["name"] == WIDE  # the name is the spec
        listed = client.challengers()
        assert [c["name"] for c in listed["challengers"]] == ["eps", WIDE]
        assert listed["champion"]["name"] == LINUCB and listed["champion"]["rewards"] == 0
        rewards = play(client, 2, 40)  # a batch of 32 rounds given to the challengers, 8 queued
        listed = client.challengers()
        assert [c["rounds"] for c in listed["challengers"]] == [32, 32]
        assert listed["queued"] == 8
        policy_rewards = client.lift()["all"]["policy"]
        assert listed["champion"]["rewards"] == policy_rewards["rewards"]
        assert listed["champion"]["mean_reward"] == pytest.approx(policy_rewards["mean"])
        assert len(rewards) == 40
        metrics = samples(client.metrics())
        for challenger in listed["challengers"]:
            name = challenger["name"]
            assert metrics[("deepbandits_challenger_rounds", (("challenger", name),))] == 32
            for estimate in challenger["estimates"]:
                labels = (("challenger", name), ("estimator", estimate["estimator"]))
                assert estimate["value"] is not None
                for metric, field in (("estimate", "value"), ("low", "low"), ("high", "high")):
                    value = metrics[(f"deepbandits_challenger_{metric}", labels)]
                    assert value == pytest.approx(estimate[field], rel=1e-12)
        assert httpx.get(f"{client.url}/v1/health").json()["challengers"] == ["eps", WIDE]

        removed = httpx.delete(f"{client.url}/v1/challengers/{quote(WIDE, safe='')}")
        assert removed.status_code == 200 and removed.json() == {"removed": WIDE}
        assert [c["name"] for c in client.challengers()["challengers"]] == ["eps"]
        assert f'challenger="{WIDE}"' not in client.metrics()  # its samples went with it

        before_promotion = {d.id for d in client.decide_batch(np.stack(contexts_stream(3, 4)))}
        promoted = client.promote("eps")
        assert promoted == {"champion": "eps", "champion_version": 1, "former": LINUCB}
        health = client.health()
        assert health["champion"] == "eps" and health["champion_version"] == 1
        assert health["challengers"] == [LINUCB] and health["policy"] == LINUCB
        assert state.policy.get_params()["epsilon"] == 0.2  # the challenger serves now
        assert samples(client.metrics())[("deepbandits_champion_version", ())] == 1
        after = client.decide(contexts_stream(4, 1)[0])
        assert client.lift()["champion"] == "eps"
        back = httpx.post(f"{client.url}/v1/promote", json={"name": LINUCB}, headers=JSON)
        assert back.json() == {"champion": LINUCB, "champion_version": 2, "former": "eps"}
        assert client.remove_challenger("eps") == {"removed": "eps"}
        assert client.challengers()["challengers"] == []
        paths = httpx.get(f"{client.url}/openapi.json").json()["paths"]
        assert {"/v1/lift", "/v1/challengers", "/v1/challengers/{name}", "/v1/promote"} <= set(
            paths
        )
        assert "delete" in paths["/v1/challengers/{name}"]
    out = tmp_path / "log.parquet"
    assert main(["export-log", str(folder), "--out", str(out)]) == 0
    table = pd.read_parquet(out).set_index("decision_id")
    assert (table.loc[sorted(before_promotion), "champion_version"] == 0).all()
    assert table.loc[after.id, "champion_version"] == 1
    assert len(table) == 40 + 4 + 1  # the challenger and promote events are no rows
    with ServiceState(folder) as again:  # the log replays the same experiment
        assert again.health()["champion_version"] == 2 and again.health()["challengers"] == []


def test_export_names_the_policy_that_made_each_row_control_champion_and_promoted(tmp_path):
    """``logging_policy`` per row: the control as given, the folder's policy before the
    promotion, the challenger's specification after it, the folder's again after a rollback."""
    from deepbandits.logs.service import LoggingPolicy, read_logging_policy
    from deepbandits.serve.export import export_log, read_log_and_policy

    folder = tmp_path / "s"
    phases: dict[str, int] = {}  # decision id -> champion_version when it was made
    with ServiceState(folder, policy=LINUCB, control="uniform", control_share=0.5) as state:
        state.add_challenger(EPS, name="eps")
        for version, seed in ((0, 5), (1, 6), (2, 7)):
            if version == 1:
                state.promote("eps")
            elif version == 2:
                state.promote(LINUCB)  # the former champion, promoted back
            stream = contexts_stream(seed, 24)
            decided = [state.decide(X)[0] for X in stream[:12]]
            decided += state.decide_batch(stream[12:])[0]
            for d, X in zip(decided, stream, strict=True):
                state.learn(d.id, reward_of(X, d.arm))[1].result()
                phases[d.id] = version
        seed = seed_of(folder)
    out = tmp_path / "log.csv"
    table = export_log(folder, out, "csv").set_index("decision_id")
    written = pd.read_csv(out).set_index("decision_id")
    assert list(written["logging_policy"]) == list(table["logging_policy"])
    specs = {0: LINUCB, 1: EPS, 2: LINUCB}
    seen = set()
    for decision_id, version in phases.items():
        control = in_control(decision_id, seed, 0.5)
        row = table.loc[decision_id]
        assert row["group"] == ("control" if control else "policy")
        assert row["champion_version"] == version
        logged = LoggingPolicy.from_json(row["logging_policy"], "row")
        assert (logged.n_features, logged.n_arms) == (5, 3)  # the table's d and K
        if control:
            assert (logged.spec, logged.source, logged.name) == ("uniform", "control", "uniform")
            assert logged.describe().startswith("uniform (the control group)")
        else:
            assert (logged.spec, logged.source) == (specs[version], "spec")
            assert logged.reward_range == ((0.0, 1.0) if version != 1 else None)
        seen.add((control, version))
    assert len(seen) == 6  # each group in each phase
    # the readers describe the log by the folder's policy, as before the experiment
    for described in (read_logging_policy(out), read_log_and_policy(folder)[1]):
        assert (described.spec, described.reward_range) == (LINUCB, (0.0, 1.0))


def test_a_name_with_a_slash_or_a_dot_segment_is_removed_by_the_client(tmp_path):
    with running(tmp_path / "s", LINUCB) as (_, client):
        for name in ("a/b c?d#e%f", "..", "."):
            client.add_challenger(WIDE, name=name)
            assert client.remove_challenger(name) == {"removed": name}
        assert client.challengers()["challengers"] == []


# ---------------------------------------------------------------------------- refusals
#: Bodies each route must refuse with 422 and the library's error body.
BAD_BODIES = {
    "/v1/challengers": [
        b'{"spec": 1}',
        b'{"spec": null}',
        b'{"spec": ["linucb"]}',
        b'{"spec": "linucb", "name": 5}',
        b'{"spec": "linucb", "name": {"a": 1}}',
        b'{"name": "x"}',
        b'{"spec": "linucb", "weight": 1}',
        b"{}",
        b"[]",
        b"null",
        b'"linucb"',
        b"{not json",
        b"",
        b"[" * 5000 + b"]" * 5000,
        json.dumps({"spec": "linucb:alpha=" + "1" * 5000}).encode(),
        json.dumps({"spec": "linucb", "name": "x" * 10_000}).encode(),
        json.dumps({"spec": "linucb", "name": ""}).encode(),
        json.dumps({"spec": "linucb", "name": "tab\there"}).encode(),
        json.dumps({"spec": "nosuch"}).encode(),
        json.dumps({"spec": "linucb:alpha=-1"}).encode(),
        json.dumps({"spec": ""}).encode(),
        json.dumps({"spec": EPS, "name": "eps"}).encode(),  # a duplicate
        json.dumps({"spec": LINUCB}).encode(),  # the champion's name
    ],
    "/v1/promote": [
        b'{"name": 1}',
        b'{"name": null}',
        b'{"name": ["eps"]}',
        b'{"name": "eps", "now": true}',
        b"{}",
        b"[]",
        b"{not json",
        json.dumps({"name": "nope"}).encode(),
        json.dumps({"name": "x" * 100_000}).encode(),
        json.dumps({"name": LINUCB}).encode(),  # the champion is no challenger
    ],
}
CASES = [(path, body) for path, bodies in BAD_BODIES.items() for body in bodies]


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    """A service with a control group and challenger ``eps``, and a few rewards."""
    folder = tmp_path_factory.mktemp("experiment") / "s"
    with running(folder, LINUCB, control="uniform", control_share=SHARE) as (state, client):
        client.add_challenger(EPS, name="eps")
        play(client, 5, 8)
        yield state, client


def unchanged(state: ServiceState, client: ServiceClient):
    """What a refused call must leave as it was: the log, the experiment, the lift."""
    return state.log.seq, client.challengers(), client.health()["champion"], client.lift()


@pytest.mark.parametrize(
    ("path", "body"), CASES, ids=[f"{p}:{i}" for i, (p, _) in enumerate(CASES)]
)
def test_a_bad_body_is_422_with_the_library_s_error_and_changes_nothing(experiment, path, body):
    state, client = experiment
    before = unchanged(state, client)
    answer = httpx.post(f"{client.url}{path}", content=body, headers=JSON, timeout=30)
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"] == "InputValueError" and answer.json()["detail"]
    assert unchanged(state, client) == before


def test_refused_calls_raise_the_library_s_errors_and_change_nothing(experiment):
    state, client = experiment
    before = unchanged(state, client)
    cases = [
        (lambda: client.remove_challenger("nope"), "no challenger named 'nope'"),
        (lambda: client.promote("nope"), r"no challenger named 'nope' \(challengers: 'eps'\)"),
        (lambda: client.add_challenger(EPS, name="eps"), "is in the experiment already"),
        (lambda: client.add_challenger("nosuch"), "unknown policy 'nosuch'"),
        (lambda: client.add_challenger(WIDE, name="x" * 65), "1 to 64 printable"),
    ]
    for call, words in cases:
        with pytest.raises(db.InputValueError, match=words):
            call()
    with pytest.raises(db.InputTypeError):
        client.remove_challenger(3)  # type: ignore[arg-type]
    for path in ("/v1/challengers/nope", "/v1/challengers/"):
        answer = httpx.delete(f"{client.url}{path}")
        assert answer.status_code == 422 and answer.json()["error"] == "InputValueError"
    plain = httpx.post(
        f"{client.url}/v1/challengers", content=b'{"spec": "linucb"}', headers={}
    )  # no Content-Type
    assert plain.status_code == 422 and "Content-Type" in plain.json()["detail"]
    assert unchanged(state, client) == before


def test_at_most_eight_challengers_run(tmp_path):
    with running(tmp_path / "s", LINUCB) as (state, client):
        for i in range(8):
            client.add_challenger(f"linucb:alpha={i + 1}")
        seq = state.log.seq
        with pytest.raises(db.InputValueError, match="at most 8 challengers"):
            client.add_challenger("linucb:alpha=20")
        assert len(client.challengers()["challengers"]) == 8 and state.log.seq == seq


def test_the_token_guards_every_experiment_route(tmp_path):
    with running(tmp_path / "s", LINUCB, token="s3cret") as (_, client):
        client.add_challenger(EPS, name="eps")
        other = ServiceClient(client.url)
        calls = [
            other.lift,
            other.challengers,
            lambda: other.add_challenger(WIDE),
            lambda: other.remove_challenger("eps"),
            lambda: other.promote("eps"),
        ]
        for call in calls:
            with pytest.raises(db.AuthenticationError):
                call()
        assert httpx.delete(f"{client.url}/v1/challengers/eps").status_code == 401
        assert client.health()["challengers"] == ["eps"] and client.lift()["champion"] == LINUCB


def test_a_backend_without_an_experiment_answers_501(tmp_path):
    pytest.importorskip("ray.serve", reason='Ray Serve is not installed ("deepbandits[ray]")')
    from deepbandits.serve.app import create_app
    from deepbandits.serve.ray_backend import RayBackend

    backend = RayBackend(tmp_path, [], None)
    app = create_app(backend)
    assert app.state.metrics.experiment is None  # no experiment gauges on Ray
    with BackgroundServer(app) as server, ServiceClient(server.url) as client:
        calls = [
            client.lift,
            client.challengers,
            lambda: client.add_challenger(WIDE),
            lambda: client.remove_challenger("eps"),
            lambda: client.promote("eps"),
        ]
        for call in calls:
            with pytest.raises(NotSupportedError, match="need --backend local"):
                call()
        answer = httpx.get(f"{server.url}/v1/lift")
        assert answer.status_code == 501 and answer.json()["error"] == "NotSupportedError"


# ---------------------------------------------------------------------------- the command line
@pytest.fixture
def served(monkeypatch):
    """``serve`` returns at once instead of serving until stopped."""
    import deepbandits.serve.server as server

    calls = []
    monkeypatch.setattr(server, "run", lambda app, sock: calls.append(app))
    return calls


def serve(folder, *options: str) -> int:
    return main(["serve", "--policy", LINUCB, "--state", str(folder), "--port", "0", *options])


def test_serve_registers_each_challenger_once_across_restarts(served, tmp_path, capsys):
    folder = tmp_path / "s"
    flags = ["--control", "uniform", "--control-share", "0.2", "--lift-window", "50"]
    flags += ["--challenger", WIDE, "--challenger", EPS, "--challenger", WIDE]
    assert serve(folder, *flags) == 0
    err = capsys.readouterr().err
    assert "control group: uniform decides 0.2 of the requests" in err
    assert f"challengers in shadow: {WIDE} (registered now), {EPS} (registered now)" in err
    assert serve(folder, *flags) == 0  # the same flags again: nothing added, nothing refused
    err = capsys.readouterr().err
    assert f"challengers in shadow: {WIDE}, {EPS};" in err and "registered now" not in err
    with ServiceState(folder) as state:
        assert state.health()["challengers"] == [WIDE, EPS]
        assert state.lift()["share"] == 0.2 and state.lift()["window_rewards"] == 50
        added = [e for e in state.log.read() if e.kind == "challenger"]
        assert len(added) == 2
        state.promote(EPS)
    assert serve(folder, "--challenger", EPS, "--challenger", WIDE) == 0  # EPS is champion now
    with ServiceState(folder) as state:
        health = state.health()
        assert health["champion"] == EPS and health["challengers"] == [WIDE, LINUCB]
    assert len(served) == 3


def test_control_on_a_folder_made_without_one_exits_2(served, tmp_path, capsys):
    folder = tmp_path / "s"
    assert serve(folder) == 0
    capsys.readouterr()
    assert serve(folder, "--control", "uniform") == 2
    err = capsys.readouterr().err
    assert err.startswith("deepbandits: error: ") and "Traceback" not in err
    assert "was created with no control group" in err and "--control" in err
    with ServiceState(folder) as state:
        assert state.health()["control"] is None


@pytest.mark.parametrize(
    ("options", "words"),
    [
        (["--control", "nosuch"], "unknown policy 'nosuch'"),
        (["--control", "arm=x"], "arm index K"),
        (["--control", "uniform", "--control-share", "0.7"], "[0, 0.5]"),
        (["--control", "uniform", "--control-share", "nan"], "[0, 0.5]"),
        (["--control", "uniform", "--lift-window", "1"], ">= 2"),
        (["--control-share", "0.1"], "needs a control"),
        (["--lift-window", "100"], "needs a control"),
        (["--challenger", "nosuch"], "--challenger 'nosuch'"),
        (["--challenger", "x" * 70], "1 to 64"),
        ([f"--challenger=linucb:alpha={i + 1}" for i in range(9)], "at most 8"),
        (["--backend", "ray", "--control", "uniform"], "need --backend local"),
        (["--backend", "ray", "--challenger", WIDE], "need --backend local"),
    ],
)
def test_experiment_mistakes_exit_2_in_one_line_and_leave_no_folder(
    served, tmp_path, capsys, options, words
):
    folder = tmp_path / "new"
    assert serve(folder, *options) == 2
    err = capsys.readouterr().err
    assert err.startswith("deepbandits: error: ") and words in err, err
    assert "Traceback" not in err and err.count("\n") == 1
    assert not folder.exists() and not served
