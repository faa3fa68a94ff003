"""`agent-eval run ... --estimate` (issue 31 item 4) after a real run: the projected tokens and dollars printed
from the stored run's tokens and the config's `pricing`, with nothing run: no agent call (the agent logs each
call to a file), no run stored, no Prefect server started; with an empty store it says what it cannot know; a
bad path is one line. The `agent-eval` flow with `EvalRequest(estimate=True)` (as a deployment starts it)
returns the same estimate as `agent_eval.estimate` and keeps it as the `cost-estimate` artifact.

The agent answers every case as `echo_agent` does and reports, per call, `my-model` tokens set by the case's
name: alpha 1,000 in / 100 out, beta 3,000 / 300, gamma 9,000 / 900 (gamma is never run before an estimate).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from agent_eval.agents import AgentSession, AgentTurn, ToolCallRecord
from agent_eval.results.pricing import price_table
from agent_eval.schema import ModelUsage
from agent_eval.store import get_engine, list_runs
from tests.flows.helpers import cli, echo_case, workstation_env

# Not `tests.conftest.REPO_ROOT`: the `agent-eval` processes below import this module for its agent, and importing
# the conftest would reset their AGENT_EVAL_HOME and AGENT_EVAL_DB_URL to the test session's.
REPO_ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_server", "quiet_cli_env")]

AGENT = "tests.flows.test_estimate_cli:priced_agent"
CALL_LOG_ENV = "AGENT_EVAL_TEST_ESTIMATE_CALL_LOG"
MODEL = "my-model"
TOKENS = {"alpha": (1_000, 100), "beta": (3_000, 300), "gamma": (9_000, 900)}
# $ per million tokens
PRICING = {MODEL: {"input_per_mtok": 2.0, "output_per_mtok": 8.0}}
NO_EARLIER_RUN = "no earlier completed run of this agent on these eval sets: tokens and cost cannot be projected"


def priced_agent(message: str, session: AgentSession) -> AgentTurn:
    """Appends the message to `$AGENT_EVAL_TEST_ESTIMATE_CALL_LOG`, answers `answer: <message>` after
    `lookup(query=message)`, and reports the case's `TOKENS` on `my-model`."""
    with open(os.environ[CALL_LOG_ENV], "a", encoding="utf-8") as log:
        log.write(message + "\n")
    input_tokens, output_tokens = TOKENS[message.split(maxsplit=1)[0]]
    return AgentTurn(
        response=f"answer: {message}",
        tool_calls=[ToolCallRecord(name="lookup", args={"query": message}, response={"ok": True})],
        model_usage={MODEL: ModelUsage(calls=1, input_tokens=input_tokens, output_tokens=output_tokens)},
    )


@pytest.fixture
def call_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The file the agent logs its calls to (one line each)."""
    path = tmp_path / "calls.log"
    path.touch()
    monkeypatch.setenv(CALL_LOG_ENV, str(path))
    monkeypatch.setenv("AGENT_EVAL_WARM", "0")
    return path


def calls(call_log: Path) -> list[str]:
    return call_log.read_text("utf-8").splitlines()


def write_eval_set(folder: Path) -> Path:
    """alpha, beta and gamma (fresh messages: no answer cached by another test), response_match_score, and the
    `pricing` of my-model, in `test_config.json` beside them."""
    token = uuid.uuid4().hex[:8]
    cases = [echo_case(name, f"{name} {token}") for name in TOKENS]
    path = folder / "priced.evalset.json"
    path.write_text(json.dumps({"eval_set_id": f"priced_{token}", "eval_cases": cases}), "utf-8")
    config = {"criteria": {"response_match_score": 0.8}, "pricing": PRICING}
    (folder / "test_config.json").write_text(json.dumps(config), "utf-8")
    return path


def stored_run_ids(sqlite_url: str) -> list[str]:
    return [run.id for run in list_runs(get_engine(sqlite_url), limit=None)]


def estimate_env(tmp_path: Path, sqlite_url: str, call_log: Path) -> tuple[dict[str, str], Path]:
    """The environment of an `agent-eval` process as on a workstation: no Prefect server configured (a fresh
    PREFECT_HOME, no PREFECT_API_URL, not CI), so an evaluating command would start agent-eval's local server
    and keep its state in a fresh AGENT_EVAL_HOME (returned)."""
    return workstation_env(tmp_path, sqlite_url, "estimate", **{CALL_LOG_ENV: str(call_log)})


def run_cli_process(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent_eval.cli", *argv],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO_ROOT,
        env=env,
        check=False,
    )


def test_estimate_prints_the_projection_from_the_last_run_and_runs_nothing(
    tmp_path: Path, sqlite_url: str, call_log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    eval_file = write_eval_set(tmp_path)
    code, out, _ = cli(capsys, "run", f"{eval_file}:alpha,beta", "--agent", AGENT, "--db-url", sqlite_url, "-q")
    assert code == 0, out
    assert sorted(line.split()[0] for line in calls(call_log)) == ["alpha", "beta"]
    [run_id] = stored_run_ids(sqlite_url)
    env, home = estimate_env(tmp_path, sqlite_url, call_log)

    done = run_cli_process(env, "run", f"{eval_file}:alpha,beta", "--agent", AGENT, "--estimate", "--num-runs", "2")

    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    assert "Traceback" not in done.stderr, done.stderr[-4000:]
    # 2 x (alpha 1,000 / 100 + beta 3,000 / 300) = 8,000 in / 800 out; at 2.0 / 8.0 $/Mtok: $0.016 + $0.0064
    assert done.stdout.splitlines() == [
        f"Estimate for 4 case runs, from run {run_id} (nothing was run: no agent or judge was called)",
        "  agent: 8,800 tokens (8,800 to 8,800), $0.0224 ($0.0224 to $0.0224)",
        f"  total: $0.0224 ($0.0224 to $0.0224); prices: {price_table()}",
        f"Tokens, agent: {MODEL} 4 calls, 8,000 in / 800 out",
    ]
    assert len(calls(call_log)) == 2  # the agent was not called
    assert stored_run_ids(sqlite_url) == [run_id]  # no run stored
    # no Prefect server: neither agent-eval's local server (its state, lock and log in AGENT_EVAL_HOME) nor any
    # server's database in PREFECT_HOME
    started = sorted(str(path) for path in home.rglob("prefect-server*")) if home.exists() else []
    if started:  # stop what the estimate should not have started before failing
        run_cli_process(env, "server", "stop")
    assert started == []
    prefect_home = tmp_path / "estimate-prefect"
    assert not prefect_home.exists() or sorted(str(p) for p in prefect_home.rglob("*.db")) == []

    # the whole file: gamma, never run, at the mean of alpha's (1,100 tokens) and beta's (3,300) means
    code, out, _ = cli(
        capsys, "run", str(eval_file), "--agent", AGENT, "--db-url", sqlite_url, "--estimate", "--num-runs", "2"
    )

    assert code == 0
    # point 2 x (1,000 + 3,000 + 2,000) = 12,000 in / 1,200 out; low 2 x (1,100 + 3,300 + 1,100), high
    # 2 x (1,100 + 3,300 + 3,300); dollars (in x 2.0 + out x 8.0) / 1e6
    assert out.splitlines() == [
        f"Estimate for 6 case runs, from run {run_id} (nothing was run: no agent or judge was called)",
        "  agent: 13,200 tokens (11,000 to 15,400), $0.0336 ($0.0280 to $0.0392)",
        f"  total: $0.0336 ($0.0280 to $0.0392); prices: {price_table()}",
        f"Tokens, agent: {MODEL} 6 calls, 12,000 in / 1,200 out",
        f"1 case(s) with no usable answer in run {run_id} (not in it, failed, or reused): "
        "projected at the mean of its cases",
    ]
    assert (len(calls(call_log)), stored_run_ids(sqlite_url)) == (2, [run_id])


def test_estimate_learns_only_from_runs_of_the_same_agent(
    tmp_path: Path, sqlite_url: str, call_log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    eval_file = write_eval_set(tmp_path)
    code, out, _ = cli(capsys, "run", f"{eval_file}:alpha", "--agent", AGENT, "--db-url", sqlite_url, "-q")
    assert code == 0, out
    other = "tests.flows.agents_for_tests:echo_agent"

    code, out, _ = cli(capsys, "run", str(eval_file), "--agent", other, "--db-url", sqlite_url, "--estimate")

    assert code == 0
    assert out.splitlines() == [
        "Estimate for 3 case runs (nothing was run: no agent or judge was called)",
        NO_EARLIER_RUN,
    ]


def test_estimate_on_an_empty_store_says_what_it_cannot_know(
    tmp_path: Path, sqlite_url: str, call_log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    eval_file = write_eval_set(tmp_path)

    code, out, err = cli(
        capsys,
        "run",
        f"{eval_file}:alpha,beta",
        "--agent",
        AGENT,
        "--db-url",
        sqlite_url,
        "--estimate",
        "--num-runs",
        "3",
    )

    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "Estimate for 6 case runs (nothing was run: no agent or judge was called)",
        NO_EARLIER_RUN,
    ]
    assert (calls(call_log), stored_run_ids(sqlite_url)) == ([], [])


def test_estimate_of_a_path_that_names_nothing_exits_2_with_one_line(
    tmp_path: Path, sqlite_url: str, call_log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nowhere" / "missing.evalset.json"

    code, out, err = cli(capsys, "run", str(missing), "--agent", AGENT, "--db-url", sqlite_url, "--estimate")

    assert (code, out) == (2, "")
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("agent-eval: error: ") and str(missing) in err
    assert calls(call_log) == []


def test_the_flow_asked_for_an_estimate_returns_the_apis_estimate_keeps_it_as_an_artifact_and_stores_no_run(
    tmp_path: Path, sqlite_url: str, call_log: Path
) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterKey

    from agent_eval import estimate, evaluate
    from agent_eval.flows import agent_eval_flow
    from agent_eval.plan.eval_plan import EvalRequest
    from agent_eval.render.estimate import estimate_lines

    eval_file = write_eval_set(tmp_path)
    first = evaluate(f"{eval_file}:alpha,beta", agent=AGENT, db_url=sqlite_url)
    assert len(calls(call_log)) == 2
    expected = estimate(eval_file, agent=AGENT, db_url=sqlite_url, num_runs=2)
    assert expected.from_run_id == first.run_id
    assert expected.agent is not None and expected.agent.total_tokens == 13_200
    # the deployment's parameters: the request as JSON
    parameters = EvalRequest(paths=[str(eval_file)], agent=AGENT, db_url=sqlite_url, num_runs=2, estimate=True)

    state = asyncio.run(agent_eval_flow(request=parameters.model_dump(mode="json"), return_state=True))

    assert state.is_completed()
    assert state.result() == expected
    assert len(calls(call_log)) == 2  # the agent was not called
    assert stored_run_ids(sqlite_url) == [first.run_id]

    async def artifacts() -> list[str | None]:
        key = ArtifactFilterKey(any_=["cost-estimate"])
        flow_run = ArtifactFilterFlowRunId(any_=[state.state_details.flow_run_id])
        async with get_client() as client:
            found = await client.read_artifacts(artifact_filter=ArtifactFilter(key=key, flow_run_id=flow_run))
        return [artifact.data for artifact in found]  # type: ignore[misc]

    assert asyncio.run(artifacts()) == ["\n".join(f"- {line}" for line in estimate_lines(expected))]


def on_model(input_tokens: int, output_tokens: int, calls: int) -> dict[str, ModelUsage]:
    return {MODEL: ModelUsage(calls=calls, input_tokens=input_tokens, output_tokens=output_tokens)}


def set_status(sqlite_url: str, run_id: str, status: str) -> None:
    """Give a stored run another end state, as an outage (`errored`) or a crash would have."""
    from sqlalchemy import update
    from sqlmodel import Session, col

    from agent_eval.store.models import Run

    with Session(get_engine(sqlite_url)) as session, session.begin():
        session.execute(update(Run).where(col(Run.id) == run_id).values(status=status))


def test_the_estimate_learns_from_the_newest_completed_run_sharing_the_most_eval_sets(
    tmp_path: Path, sqlite_url: str, call_log: Path
) -> None:
    from agent_eval import estimate, evaluate

    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        folder.mkdir()
    this_set, other_set = write_eval_set(first), write_eval_set(second)
    both = evaluate([str(this_set), str(other_set)], agent=AGENT, db_url=sqlite_url)
    alpha_only = evaluate(f"{this_set}:alpha", agent=AGENT, db_url=sqlite_url)

    # of both eval sets: the run that evaluated both, though older
    assert estimate([str(this_set), str(other_set)], agent=AGENT, db_url=sqlite_url).from_run_id == both.run_id
    # of one: the newest of the two, which lacks beta and gamma
    newest = estimate(f"{this_set}:alpha,beta", agent=AGENT, db_url=sqlite_url)
    assert newest.from_run_id == alpha_only.run_id
    assert newest.notes == [
        f"1 case(s) with no usable answer in run {alpha_only.run_id} (not in it, failed, or reused): "
        "projected at the mean of its cases"
    ]
    assert newest.agent is not None and newest.agent.tokens == on_model(2_000, 200, calls=2)

    set_status(sqlite_url, alpha_only.run_id, "errored")  # an outage: never learned from
    older = estimate(f"{this_set}:alpha,beta", agent=AGENT, db_url=sqlite_url)
    assert (older.from_run_id, older.notes) == (both.run_id, [])
    assert older.agent is not None and older.agent.tokens == on_model(4_000, 400, calls=2)

    set_status(sqlite_url, both.run_id, "crashed")
    none_left = estimate(f"{this_set}:alpha,beta", agent=AGENT, db_url=sqlite_url)
    assert (none_left.from_run_id, none_left.agent, none_left.notes) == (None, None, [NO_EARLIER_RUN])
    assert len(calls(call_log)) == 6 + 1  # the two runs' calls only


def test_a_rescore_does_not_hide_the_agents_tokens_from_the_estimate(
    tmp_path: Path, sqlite_url: str, call_log: Path
) -> None:
    from agent_eval import estimate, evaluate, rescore

    eval_file = write_eval_set(tmp_path)
    evaluate(f"{eval_file}:alpha,beta", agent=AGENT, db_url=sqlite_url)
    rescore(stored_run_ids(sqlite_url)[0], db_url=sqlite_url)

    projected = estimate(f"{eval_file}:alpha,beta", agent=AGENT, db_url=sqlite_url)

    assert projected.agent is not None
    assert projected.agent.tokens == on_model(4_000, 400, calls=2)
    assert projected.notes == []
