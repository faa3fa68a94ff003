"""A run's budget through the command line and the flows (issue 31 item 5): `--budget USD`, `--max-tokens N`, the
config's `budget` section and the deployments' `budget_usd` parameter. Once the spend so far plus the calls in
flight would pass the budget, no case run starts; those in flight finish and are stored; the run is stored
`stopped` (exit 5) with the case runs it did not start NOT_EVALUATED ("not started: ..."), never compared, never a
baseline; `rerun --only-failed` with a larger budget finishes it. A judge model with no price is refused before
the run (exit 2); an agent model with no price stops a dollar budget at the next call.

Every agent here answers "ok" and reports one call of `my-model`, 1,000 input and 100 output tokens: priced by
the config at $1 / $10 per million, one case run costs $0.002 and 1,100 tokens. A budget of $0.009, one case run
at a time: the 5th would make $0.010, so 4 run and 6 do not start.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agent_eval.agents import AgentSession, AgentTurn
from agent_eval.plan.eval_plan import EvalRequest
from agent_eval.results.pricing import price_table
from agent_eval.runtime.processes import process_alive
from agent_eval.schema import EvalStatus, ModelUsage
from agent_eval.store import CaseRecord, RunCreate, RunRead, get_engine, get_run, list_runs, load_case_records
from agent_eval.store.spend import run_spend_of
from tests.fakes.gemini_server import CREDENTIAL_VARIABLES, FAKE_API_KEY
from tests.flows.helpers import cli, workstation_env

# Not `tests.conftest.REPO_ROOT`: importing the conftest in an `agent-eval` process would reset its
# AGENT_EVAL_HOME and AGENT_EVAL_DB_URL to the test session's.
REPO_ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_server", "quiet_cli_env")]

MODEL = "my-model"
PRICING = {MODEL: {"input_per_mtok": 1.0, "output_per_mtok": 10.0}}
UNPRICED_MODEL = "mystery-model-x"
CALL_LOG_ENV = "AGENT_EVAL_TEST_BUDGET_CALL_LOG"
HERE = "tests.flows.test_budget_cli"

CALLS: Counter[str] = Counter()
"""Calls per message of this module's agents (run in this process); every test's messages are its own."""

EXAMPLE_AGENT = f"""
import os
from agent_eval.agents import AgentSession, AgentTurn
from agent_eval.schema import ModelUsage

def answer(message: str, session: AgentSession | None) -> AgentTurn:
    with open(os.environ[{CALL_LOG_ENV!r}], "a", encoding="utf-8") as log:
        log.write(message + "\\n")
    usage = ModelUsage(calls=1, input_tokens=1000, output_tokens=100)
    return AgentTurn(response="ok", input_tokens=1000, output_tokens=100, model_usage={{{MODEL!r}: usage}})
"""
"""The README's example agent, which also logs each message it gets to `$AGENT_EVAL_TEST_BUDGET_CALL_LOG`."""


def _turn(message: str, model: str = MODEL) -> AgentTurn:
    CALLS[message] += 1
    usage = ModelUsage(calls=1, input_tokens=1000, output_tokens=100)
    return AgentTurn(response="ok", input_tokens=1000, output_tokens=100, model_usage={model: usage})


def priced_agent(message: str, session: AgentSession) -> AgentTurn:
    """One `my-model` call of 1,000 in / 100 out: $0.002, 1,100 tokens."""
    return _turn(message)


def unpriced_agent(message: str, session: AgentSession) -> AgentTurn:
    """As `priced_agent`, on a model no price covers."""
    return _turn(message, UNPRICED_MODEL)


def failing_agent(message: str, session: AgentSession) -> AgentTurn:
    """Counts the call and fails (so no judge is asked to score it)."""
    CALLS[message] += 1
    raise ValueError("the agent ran")


# -------------------------------------------------------------------------------------------------------------- inputs
def write_cases(folder: Path, count: int = 10) -> tuple[Path, list[str]]:
    """An eval set of `count` single-turn cases c0, c1, ... expecting "ok" (fresh messages); its messages."""
    token = uuid.uuid4().hex[:8]
    messages = [f"c{index} {token}" for index in range(count)]
    cases = [
        {
            "eval_id": f"c{index}",
            "conversation": [
                {
                    "user_content": {"role": "user", "parts": [{"text": message}]},
                    "final_response": {"role": "model", "parts": [{"text": "ok"}]},
                }
            ],
        }
        for index, message in enumerate(messages)
    ]
    path = folder / f"budget_{token}.evalset.json"
    path.write_text(json.dumps({"eval_set_id": f"budget_{token}", "eval_cases": cases}), encoding="utf-8")
    return path, messages


def write_config(folder: Path, **sections: Any) -> Path:
    """response_match_score at 0.5 and my-model's price, with `sections` (`budget`, more `criteria`...)."""
    config: dict[str, Any] = {"criteria": {"response_match_score": 0.5}, "pricing": PRICING}
    for name, value in sections.items():
        config[name] = {**config[name], **value} if isinstance(config.get(name), dict) else value
    path = folder / f"config_{uuid.uuid4().hex[:6]}.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


# -------------------------------------------------------------------------------------------------------- reading back
def only_run(db_url: str) -> RunRead:
    [run] = list_runs(get_engine(db_url), limit=None)
    return run


def outcomes(run_id: str, db_url: str) -> list[tuple[str, EvalStatus, str | None, int]]:
    """Each case record of the run: case, status, error kind, attempts; in case order."""
    records = sorted(load_case_records(run_id, get_engine(db_url)), key=lambda r: int(r.eval_id[1:]))
    return [(r.eval_id, EvalStatus(r.status), r.error_kind, r.attempts) for r in records]


def not_started(run_id: str, db_url: str) -> list[CaseRecord]:
    return [record for record in load_case_records(run_id, get_engine(db_url)) if record.error_kind == "budget"]


def passed_then_not_started(passed: int, total: int) -> list[tuple[str, EvalStatus, str | None, int]]:
    """The records of a run, one case run at a time, whose budget let the first `passed` start."""
    return [
        (f"c{i}", EvalStatus.PASSED, None, 1) if i < passed else (f"c{i}", EvalStatus.NOT_EVALUATED, "budget", 0)
        for i in range(total)
    ]


# -------------------------------------------------------------------------------------- the example, as a user runs it
@pytest.fixture
def local_cli(tmp_path: Path, sqlite_url: str) -> Iterator[Callable[..., subprocess.CompletedProcess[str]]]:
    """`agent-eval` processes as on a workstation: agent-eval's local Prefect server (started by the first run,
    reused by the next) in a fresh AGENT_EVAL_HOME, the test's store; afterwards the server is stopped and no
    process of it is left."""
    env, home = workstation_env(tmp_path, sqlite_url, "agent-eval", **{CALL_LOG_ENV: str(tmp_path / "calls.log")})
    (tmp_path / "calls.log").touch()

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "agent_eval.cli", *argv],
            capture_output=True, text=True, timeout=300, cwd=REPO_ROOT, env=env, check=False,
        )  # fmt: skip
        assert "Traceback" not in done.stderr, done.stderr[-4000:]
        return done

    state_file = home / "prefect-server.json"
    try:
        yield run
    finally:
        server = json.loads(state_file.read_text("utf-8")) if state_file.exists() else None
        stopped = run("server", "stop")
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
        assert not state_file.exists()
        assert server is None or not process_alive(int(server["pid"]))


def test_the_readme_example_stops_at_its_budget_is_never_compared_and_a_rerun_finishes_it(
    tmp_path: Path, sqlite_url: str, local_cli: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    (tmp_path / "budget_agent.py").write_text(EXAMPLE_AGENT, encoding="utf-8")
    agent = f"{tmp_path / 'budget_agent.py'}:answer"
    eval_file, messages = write_cases(tmp_path)
    config = write_config(tmp_path)
    junit = tmp_path / "junit.xml"
    calls_log = tmp_path / "calls.log"

    done = local_cli("run", str(eval_file), "--agent", agent, "--config", str(config), "--budget", "0.009",
                     "--max-concurrency", "1", "--junit", str(junit))  # fmt: skip

    assert done.returncode == 5, done.stdout[-3000:] + done.stderr[-3000:]
    run = only_run(sqlite_url)
    stopped_by = "budget of $0.0090 reached: $0.0080 spent, 6 case runs not started"
    lines = done.stdout.splitlines()
    assert lines[2] == "Total: 10  Passed: 4  Failed: 0  Not evaluated: 6  Pass rate: 100.0%"
    rerun_hint = f"`agent-eval rerun {run.id[:12]} --only-failed` with a larger --budget or --max-tokens"
    assert lines[3] == f"Stopped: {stopped_by} ({rerun_hint} finishes it)"
    assert "Tokens, agent: my-model 4 calls, 4,000 in / 400 out" in lines
    assert done.stderr.splitlines()[-1] == f"agent-eval: stopped: {stopped_by}"
    # the store: the run stopped, never compared; 4 case runs passed, 6 never started
    assert (run.status, run.error, run.total, run.passed, run.failed) == ("stopped", stopped_by, 10, 4, 0)
    assert (run.regression, run.baseline_run_id, run.regressed) == (None, None, None)
    assert outcomes(run.id, sqlite_url) == passed_then_not_started(4, 10)
    assert {r.error for r in not_started(run.id, sqlite_url)} == {
        "not started: budget of $0.0090 reached ($0.0080 spent)"
    }
    assert calls_log.read_text("utf-8").splitlines() == messages[:4]
    # JUnit: the case runs not started are skipped, not errors
    suites = ET.parse(junit).getroot()
    assert {k: suites.get(k) for k in ("tests", "failures", "errors", "skipped")} == {
        "tests": "10", "failures": "0", "errors": "0", "skipped": "6",
    }  # fmt: skip
    skipped = [element.get("message") for element in suites.iter("skipped")]
    assert skipped == ["not started: budget of $0.0090 reached ($0.0080 spent)"] * 6

    history = local_cli("history", "--json")

    assert history.returncode == 0, history.stderr[-2000:]
    [row] = json.loads(history.stdout)
    assert {k: row[k] for k in ("run_id", "status", "passed", "not_evaluated", "tokens", "regression")} == {
        "run_id": run.id, "status": "stopped", "passed": 4, "not_evaluated": 6, "tokens": 4_400, "regression": None,
    }  # fmt: skip
    assert row["cost_usd"] == pytest.approx(0.008)

    later = local_cli("run", str(eval_file), "--agent", agent, "--config", str(config))

    assert later.returncode == 0, later.stdout[-3000:] + later.stderr[-3000:]
    later_run = get_run(list_runs(get_engine(sqlite_url), limit=1)[0].id, get_engine(sqlite_url))
    reason = "no earlier completed run of this agent (never a baseline: 1 stopped)"
    assert later_run.regression is not None
    assert {k: later_run.regression[k] for k in ("baseline_run_id", "baseline_reason", "regressed")} == {
        "baseline_run_id": None, "baseline_reason": reason, "regressed": False,
    }  # fmt: skip
    assert f"Regression check: no comparable baseline: {reason}" in later.stdout
    before_rerun = len(calls_log.read_text("utf-8").splitlines())
    assert before_rerun == 4 + 10

    finished = local_cli("rerun", run.id, "--only-failed", "--budget", "1")

    assert finished.returncode == 0, finished.stdout[-3000:] + finished.stderr[-3000:]
    assert "Total: 6  Passed: 6  Failed: 0  Pass rate: 100.0%" in finished.stdout
    assert sorted(calls_log.read_text("utf-8").splitlines()[before_rerun:]) == sorted(messages[4:])
    rerun_run = list_runs(get_engine(sqlite_url), limit=1)[0]
    assert (rerun_run.status, rerun_run.source_run_id, rerun_run.passed) == ("completed", run.id, 6)
    assert sorted(r.eval_id for r in load_case_records(rerun_run.id, get_engine(sqlite_url))) == sorted(
        f"c{i}" for i in range(4, 10)
    )


# ----------------------------------------------------------------------------------- the config's budget, --max-tokens
def test_the_configs_budget_section_stops_a_run_as_budget_does_and_budget_overrides_it(
    tmp_path: Path, sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    eval_file, messages = write_cases(tmp_path)
    config = write_config(tmp_path, budget={"usd": 0.009})
    common = ["--agent", f"{HERE}:priced_agent", "--config", str(config), "--db-url", sqlite_url]

    code, out, _ = cli(capsys, "run", str(eval_file), *common, "--max-concurrency", "1", "-q")

    assert code == 5, out
    first = only_run(sqlite_url)
    assert (first.status, first.error) == (
        "stopped",
        "budget of $0.0090 reached: $0.0080 spent, 6 case runs not started",
    )
    assert outcomes(first.id, sqlite_url) == passed_then_not_started(4, 10)

    # --budget 0.005 over the config's 0.009: the 3rd would make 0.002 + 2 x 0.002 = $0.006
    code, out, _ = cli(capsys, "run", str(eval_file), *common, "--max-concurrency", "1", "--budget", "0.005", "-q")

    assert code == 5, out
    second = list_runs(get_engine(sqlite_url), limit=1)[0]
    assert (second.status, second.error) == (
        "stopped", "budget of $0.0050 reached: $0.0040 spent, 8 case runs not started",
    )  # fmt: skip
    assert outcomes(second.id, sqlite_url) == passed_then_not_started(2, 10)
    assert [CALLS[message] for message in messages] == [2, 2, 1, 1] + [0] * 6


def test_max_tokens_runs_the_first_call_alone_then_counts_the_calls_in_flight(
    tmp_path: Path, sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """1,100 tokens a case run, at most 3,000, three at a time: the first runs alone (nothing is known of a call's
    cost yet); then 1,100 + 1 x 1,100 = 2,200 starts and, whether it finished or not, a third would make 3,300."""
    eval_file, messages = write_cases(tmp_path)
    common = ["--agent", f"{HERE}:priced_agent", "--config", str(write_config(tmp_path)), "--db-url", sqlite_url]

    code, out, _ = cli(capsys, "run", str(eval_file), *common, "--max-tokens", "3000", "--max-concurrency", "3")

    assert code == 5, out
    run = only_run(sqlite_url)
    assert (run.status, run.error) == (
        "stopped",
        "budget of 3,000 tokens reached: 2,200 tokens spent, 8 case runs not started",
    )
    assert Counter((status, kind, attempts) for _, status, kind, attempts in outcomes(run.id, sqlite_url)) == {
        (EvalStatus.PASSED, None, 1): 2,
        (EvalStatus.NOT_EVALUATED, "budget", 0): 8,
    }
    assert sum(CALLS[message] for message in messages) == 2
    # refused while the second was in flight (1,100 spent) or after it finished (2,200)
    refusals = {record.error for record in not_started(run.id, sqlite_url)}
    assert refusals <= {f"not started: budget of 3,000 tokens reached ({n:,} tokens spent)" for n in (1_100, 2_200)}
    assert "Stopped: budget of 3,000 tokens reached: 2,200 tokens spent, 8 case runs not started" in out


def test_the_cost_per_case_run_of_a_stopped_run_is_that_of_the_case_runs_it_ran(
    tmp_path: Path, sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    eval_file, _ = write_cases(tmp_path, 4)
    common = ["--agent", f"{HERE}:priced_agent", "--config", str(write_config(tmp_path)), "--db-url", sqlite_url]

    code, out, _ = cli(capsys, "run", str(eval_file), *common, "--budget", "0.005", "--max-concurrency", "1")

    assert code == 5, out
    assert f"Cost: $0.0040 (agent $0.0040), $0.0020 per case run; prices: {price_table()}" in out.splitlines()


# ---------------------------------------------------------------------------------------------- models without a price
def test_an_agent_model_without_a_price_stops_a_dollar_budget_at_the_next_call_naming_it(
    tmp_path: Path, sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    eval_file, messages = write_cases(tmp_path, 4)
    common = ["--agent", f"{HERE}:unpriced_agent", "--config", str(write_config(tmp_path)), "--db-url", sqlite_url]

    code, out, err = cli(capsys, "run", str(eval_file), *common, "--budget", "1", "--max-concurrency", "1", "-q")

    assert code == 5, out + err
    reason = f"budget of $1.00: the cost of {UNPRICED_MODEL} is unknown (add it to the config's `pricing`)"
    run = only_run(sqlite_url)
    assert run.status == "stopped"
    assert run.error is not None and run.error.startswith(reason)
    assert run.error.endswith("3 case runs not started")
    assert outcomes(run.id, sqlite_url) == passed_then_not_started(1, 4)
    assert all((r.error or "").startswith(f"not started: {reason}") for r in not_started(run.id, sqlite_url))
    assert [CALLS[message] for message in messages] == [1, 0, 0, 0]


@pytest.fixture
def judge_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fake Gemini key (a judged criterion needs one to be planned) and an endpoint nothing listens on: no judge
    call may leave this machine."""
    for name in CREDENTIAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GOOGLE_API_KEY", FAKE_API_KEY)
    monkeypatch.setenv("AGENT_EVAL_GEMINI_BASE_URL", "http://127.0.0.1:9")


def unpriced_judge_config(folder: Path) -> Path:
    judged = {"threshold": 0.8, "judge_model_options": {"judge_model": "my-unpriced-judge"}}
    return write_config(folder, criteria={"final_response_match_v2": judged})


UNPRICED_JUDGE = (
    "a budget of $1.00 needs a price for my-unpriced-judge: none is known; give it in the config's `pricing` "
    'section, e.g. "pricing": {"MODEL": {"input_per_mtok": 0.3, "output_per_mtok": 2.5}}'
)


@pytest.mark.usefixtures("judge_key")
def test_a_judge_model_without_a_price_exits_2_before_the_run_naming_it_and_pricing(
    tmp_path: Path, sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    eval_file, messages = write_cases(tmp_path, 2)
    config = unpriced_judge_config(tmp_path)

    code, out, err = cli(capsys, "run", str(eval_file), "--agent", f"{HERE}:priced_agent", "--config", str(config),
                         "--db-url", sqlite_url, "--budget", "1")  # fmt: skip

    assert (code, out) == (2, "")
    assert err.splitlines() == [f"agent-eval: error: field 'budget': {UNPRICED_JUDGE}"]
    assert [CALLS[message] for message in messages] == [0, 0]
    assert list_runs(get_engine(sqlite_url), limit=None) == []


# ----------------------------------------------------------------------------------------- the deployments' parameters
def run_flow(request: EvalRequest) -> Any:
    """The `agent-eval` flow with `request` as a deployment passes it (JSON); its final state."""
    from agent_eval.flows import agent_eval_flow

    return asyncio.run(agent_eval_flow(request=request.model_dump(mode="json"), return_state=True))


def test_the_deployments_budget_parameter_stops_the_run(tmp_path: Path, sqlite_url: str) -> None:
    eval_file, messages = write_cases(tmp_path)
    request = EvalRequest(paths=[str(eval_file)], agent=f"{HERE}:priced_agent", config=str(write_config(tmp_path)),
                          db_url=sqlite_url, max_concurrency=1, budget_usd=0.009)  # fmt: skip

    state = run_flow(request)

    stopped_by = "budget of $0.0090 reached: $0.0080 spent, 6 case runs not started"
    assert state.is_completed()
    assert state.message == f"stopped: {stopped_by}"
    report = state.result()
    assert (report.status, report.error, report.regression) == ("stopped", stopped_by, None)
    run = only_run(sqlite_url)
    assert (run.status, run.error) == ("stopped", stopped_by)
    assert outcomes(run.id, sqlite_url) == passed_then_not_started(4, 10)
    assert sum(CALLS[message] for message in messages) == 4


@pytest.mark.usefixtures("judge_key")
def test_the_deployments_budget_with_a_judge_model_without_a_price_is_refused_before_the_run(
    tmp_path: Path, sqlite_url: str
) -> None:
    eval_file, messages = write_cases(tmp_path, 2)
    request = EvalRequest(paths=[str(eval_file)], agent=f"{HERE}:failing_agent", db_url=sqlite_url,
                          config=str(unpriced_judge_config(tmp_path)), budget_usd=1.0)  # fmt: skip

    state = run_flow(request)

    assert state.is_failed()
    assert UNPRICED_JUDGE in (state.message or "")
    assert [CALLS[message] for message in messages] == [0, 0]
    assert list_runs(get_engine(sqlite_url), limit=None) == []


def test_the_shards_of_a_run_share_its_budget_through_the_store(tmp_path: Path, sqlite_url: str) -> None:
    """The two shards of a run, called one after the other with the parameters the parent gives them (its request
    with `shards=1` and its share of the concurrency). $0.009: shard 1 (c0, c2, c4, c6, c8) runs four, $0.008;
    shard 2's first would make $0.010, so it starts none."""
    from agent_eval.flows.shard import shard_flow
    from agent_eval.store import start_run

    eval_file, messages = write_cases(tmp_path)
    request = EvalRequest(paths=[str(eval_file)], agent=f"{HERE}:priced_agent", config=str(write_config(tmp_path)),
                          db_url=sqlite_url, max_concurrency=1, budget_usd=0.009)  # fmt: skip
    run_id = uuid.uuid4().hex
    start_run(RunCreate(id=run_id, agent_reference=request.agent or "", agent_fingerprint="f", config_hash="h",
                        started_at=datetime.now(UTC)), engine=get_engine(sqlite_url))  # fmt: skip

    for shard in (0, 1):
        asyncio.run(shard_flow(request=request, run_id=run_id, shard=shard, shards=2))

    assert [CALLS[message] for message in messages] == [1, 0, 1, 0, 1, 0, 1, 0, 0, 0]
    spent = run_spend_of(run_id, get_engine(sqlite_url))
    assert (spent.finished, spent.in_flight) == ({"agent": 4}, {"agent": 0})
    assert spent.agent == {MODEL: ModelUsage(calls=4, input_tokens=4_000, output_tokens=400)}
    assert len(not_started(run_id, sqlite_url)) == 6
