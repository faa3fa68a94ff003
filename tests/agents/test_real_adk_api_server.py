"""agent-eval against a REAL `adk api_server` (google-adk's own FastAPI server in a subprocess), not a fake.

The server serves `tests/agents/real_adk_apps/app`: an ADK `LlmAgent` whose scripted model calls the tool
`lookup` with the user's message, then answers `answer: <message>`, and appends one line per model call to the
file named by `$REAL_ADK_MODEL_CALLS_LOG` (so a test counts the requests the agent really received). One server
is started for the module (its own process group, SIGKILLed and waited for at teardown), while the session's
Prefect server starts; the last test kills it mid-run (a test after it would start it again, same port).

Each test fails on the code before issue 18 (commit 383fc3c, before 1989efe and 1c1a3be; checked by running
this file on an export of that commit); the reason is given in each test's docstring. Skipped when google-adk
is missing (a failure with `AGENT_EVAL_REQUIRE_ADK=1`).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from agent_eval import evaluate, rescore
from agent_eval.agents import KEEP_SESSIONS_ENV, server_session_of
from agent_eval.cli import main
from agent_eval.compare.run_history import show
from agent_eval.errors import EvalInputError, InfrastructureError
from agent_eval.render import write_outputs
from agent_eval.store import get_engine, get_run, list_runs
from agent_eval.store.queries import choose_baseline
from tests.flows.helpers import echo_case

pytestmark = [pytest.mark.flow]

APPS_DIR = Path(__file__).resolve().parent / "real_adk_apps"
APP = "app"
CALLS_LOG_ENV = "REAL_ADK_MODEL_CALLS_LOG"  # the names real_adk_apps/app/agent.py reads
SLOW_FILE_ENV = "REAL_ADK_SLOW_FILE"
STARTUP_SECONDS = 90.0


# ------------------------------------------------------------------------------------------------ the server
class AdkApiServer:
    """A real `adk api_server` over `APPS_DIR` on a fixed port, in its own process group (in-memory sessions,
    nothing written into the apps folder), and the model-call log of its agent.

    Its agent's slow turns (messages containing `slow`) sleep as many seconds as `slow_switch` says while that
    file exists. Killed (SIGKILL to the process group), it is started again on the same port by `serving()`.
    """

    def __init__(self, folder: Path) -> None:
        self.base_url = f"http://127.0.0.1:{free_port()}"
        self.calls_log, self.slow_switch, self.output = (folder / n for n in ("calls.log", "slow", "server.log"))
        self.process: subprocess.Popen[bytes] | None = None

    def launch(self) -> None:
        """Start the server process (without waiting for it)."""
        port = self.base_url.rsplit(":", 1)[1]
        command = [_adk_command(), "api_server", "--host", "127.0.0.1", "--port", port]
        command += ["--session_service_uri", "memory://", "--artifact_service_uri", "memory://"]
        command += ["--memory_service_uri", "memory://", str(APPS_DIR)]
        own = {CALLS_LOG_ENV: str(self.calls_log), SLOW_FILE_ENV: str(self.slow_switch), "PYTHONDONTWRITEBYTECODE": "1"}
        with self.output.open("ab") as sink:
            self.process = subprocess.Popen(
                command, env=os.environ | own, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
            )

    def serving(self) -> AdkApiServer:
        """The server once `GET /list-apps` lists `APP` (started again first if it was killed)."""
        if self.process is None or self.process.poll() is not None:
            self.launch()
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline and self.process is not None and self.process.poll() is None:
            try:
                if self.get("/list-apps").json() == [APP]:
                    return self
            except (httpx.HTTPError, ValueError):
                pass
            time.sleep(0.2)
        tail = self.output.read_text(encoding="utf-8", errors="replace")[-2000:]
        pytest.fail(f"adk api_server did not list [{APP!r}] within {STARTUP_SECONDS:g} s:\n{tail}")

    def kill(self) -> None:
        """SIGKILL the server's process group (uvicorn and anything it started) and reap it."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        if self.process is not None:
            self.process.wait(timeout=30)

    def reference(self, app: str = APP) -> str:
        """The agent reference of one of its apps."""
        return f"adk-api+{self.base_url}/{app}"

    def calls(self) -> list[str]:
        """Every model call so far, `<step>\\t<user message>` (step 1: the tool call, 2: the answer)."""
        return self.calls_log.read_text(encoding="utf-8").splitlines() if self.calls_log.exists() else []

    def get(self, path: str) -> httpx.Response:
        return httpx.get(f"{self.base_url}{path}", timeout=10)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _adk_command() -> str:
    beside = Path(sys.executable).with_name("adk")
    found = str(beside) if beside.exists() else shutil.which("adk")
    assert found, "google-adk is installed but its `adk` command is not on PATH"
    return found


@pytest.fixture(scope="module")
def module_server(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[AdkApiServer]:
    """ONE real `adk api_server` for the module; the session's Prefect server starts while it boots."""
    pytest.importorskip("google.adk")
    server = AdkApiServer(tmp_path_factory.mktemp("adk_api_server"))
    server.launch()
    try:
        request.getfixturevalue("prefect_server")  # ~10-30 s, as long as the api_server's start: overlapped
        yield server.serving()
    finally:
        server.kill()


@pytest.fixture
def adk_server(module_server: AdkApiServer) -> AdkApiServer:
    """The module's server, serving (started again if a test killed it), with its slow turns off."""
    module_server.slow_switch.unlink(missing_ok=True)
    return module_server.serving()


# ------------------------------------------------------------------------------------------------- helpers
def write_set(folder: Path, eval_ids: list[str], user_id: str) -> tuple[Path, str, dict[str, str]]:
    """An eval set of echo cases (unique messages: fresh cache keys) run as `user_id`, with its config beside.

    Returns the file, the eval set id and the message of each case.
    """
    token = uuid.uuid4().hex[:8]
    messages = {eval_id: f"{eval_id} {token}" for eval_id in eval_ids}
    session_input = {"app_name": APP, "user_id": user_id, "state": {}}
    cases = [echo_case(eval_id, message) | {"session_input": session_input} for eval_id, message in messages.items()]
    eval_set_id = f"real_{token}"
    path = folder / f"{eval_set_id}.evalset.json"
    path.write_text(json.dumps({"eval_set_id": eval_set_id, "eval_cases": cases}), encoding="utf-8")
    criteria = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}
    (folder / "test_config.json").write_text(json.dumps({"criteria": criteria}), encoding="utf-8")
    return path, eval_set_id, messages


def both_steps(messages: list[str]) -> list[str]:
    """The model calls one turn per message makes: the tool call and the answer."""
    return sorted(f"{step}\t{message}" for message in messages for step in (1, 2))


def stored_run_ids(db_url: str) -> list[str]:
    if not Path(db_url.removeprefix("sqlite:///")).exists():
        return []
    return [run.id for run in list_runs(get_engine(db_url))]


# --------------------------------------------------------------------------------------------------- tests
def test_every_evaluation_invokes_the_real_agent_and_reuse_is_only_on_request(
    adk_server: AdkApiServer, tmp_path: Path, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before issue 18 the invoke task's cache (agent fingerprint, case, run index) answered every later
    evaluation: the second run sent no request (measured on 383fc3c: the log grew by [6, 0, 0]), there was no
    `reuse_max_age_hours` and nothing told reused answers apart; nor was the server's session recorded."""
    monkeypatch.delenv(KEEP_SESSIONS_ENV, raising=False)
    eval_file, _, messages = write_set(tmp_path, ["one", "two", "three"], user_id="fresh")
    reference, counts, reports = adk_server.reference(), [], []
    for reuse in (None, None, 24.0):
        before = len(adk_server.calls())
        reports.append(evaluate(eval_file, agent=reference, db_url=sqlite_url, reuse_max_age_hours=reuse))
        counts.append(len(adk_server.calls()) - before)
    first, second, third = reports

    assert counts == [6, 6, 0]
    assert sorted(adk_server.calls()[-12:-6]) == sorted(adk_server.calls()[-6:]) == both_steps([*messages.values()])
    assert [report.summary.cached_case_runs for report in reports] == [0, 0, 3]
    assert [(r.summary.total, r.summary.passed) for r in reports] == [(3, 3)] * 3
    (source,) = third.summary.cache_sources  # the second evaluation's answers replaced the first's in the cache
    assert (source.run_id, source.case_runs) == (second.run_id, 3)
    assert [getattr(case.agent_run.cached_from, "run_id", None) for case in third.cases] == [second.run_id] * 3
    assert [case.agent_run.cached_from for case in first.cases + second.cases] == [None] * 6
    assert len(set(stored_run_ids(sqlite_url))) == 3
    # without AGENT_EVAL_KEEP_SESSIONS each case run's server session is recorded, then deleted
    recorded = [server_session_of(case.agent_run) or {} for case in first.cases + second.cases]
    assert [(session["user_id"], session["kept"]) for session in recorded] == [("fresh", False)] * 6
    assert len({session["session_id"] for session in recorded}) == 6
    assert adk_server.get("/apps/app/users/fresh/sessions").json() == []
    assert {adk_server.get(f"/apps/app/users/fresh/sessions/{s['session_id']}").status_code for s in recorded} == {404}


def test_a_wrong_app_name_is_bad_input_naming_the_servers_apps(
    adk_server: AdkApiServer, tmp_path: Path, sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before issue 18 nothing checked the app before the first case: the real server creates a session for
    any app name, `/run` answered each case 404 "Agent not found", and a run with 3 failed cases was stored
    (measured on 383fc3c: no EvalInputError raised)."""
    eval_file, _, _ = write_set(tmp_path, ["one", "two", "three"], user_id="wrong_app")
    reference, calls = adk_server.reference("nope_agent"), len(adk_server.calls())
    expected = (
        f"field 'agent': the ADK api_server at {adk_server.base_url} has no app 'nope_agent'; "
        f"its apps are ['app']: use adk-api+{adk_server.base_url}/APP_NAME"
    )

    with pytest.raises(EvalInputError) as caught:
        evaluate(eval_file, agent=reference, db_url=sqlite_url)
    capsys.readouterr()
    code = main(["run", str(eval_file), "--agent", reference, "--db-url", sqlite_url])

    assert str(caught.value) == expected
    assert (code, capsys.readouterr().err) == (2, f"agent-eval: error: {expected}\n")
    assert stored_run_ids(sqlite_url) == []
    assert len(adk_server.calls()) == calls
    assert adk_server.get("/apps/nope_agent/users/wrong_app/sessions").json() == []


def test_a_server_that_is_down_is_an_infrastructure_error_and_nothing_is_stored(
    tmp_path: Path, sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before issue 18 every case run failed to connect (after its retries) and a completed run of 3 failed
    cases was stored (measured on 383fc3c: no InfrastructureError raised)."""
    eval_file, _, _ = write_set(tmp_path, ["one", "two", "three"], user_id="down")
    base_url = f"http://127.0.0.1:{free_port()}"
    reference = f"adk-api+{base_url}/{APP}"
    expected_start = f"cannot reach the ADK api_server at {base_url}: ConnectError: "

    with pytest.raises(InfrastructureError) as caught:
        evaluate(eval_file, agent=reference, db_url=sqlite_url)
    capsys.readouterr()
    code = main(["run", str(eval_file), "--agent", reference, "--db-url", sqlite_url])

    assert str(caught.value).startswith(expected_start)
    err = capsys.readouterr().err
    assert code == 4
    assert err.startswith(f"agent-eval: error: {expected_start}") and err.count("\n") == 1
    assert stored_run_ids(sqlite_url) == []


def test_kept_server_sessions_are_the_recorded_ones_and_adk_files_are_named_after_the_app(
    adk_server: AdkApiServer, tmp_path: Path, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before issue 18 the server's session id was not recorded (no `agent_eval:server_session`: measured on
    383fc3c, a KeyError), and the ADK result files were named `adk-api_http_...` (`app_name_of` read the
    reference's scheme)."""
    monkeypatch.setenv(KEEP_SESSIONS_ENV, "1")
    eval_file, eval_set_id, messages = write_set(tmp_path, ["one", "two", "three"], user_id="keeper")
    report = show(evaluate(eval_file, agent=adk_server.reference(), db_url=sqlite_url).run_id, db_url=sqlite_url)

    recorded = {case.eval_id: server_session_of(case.agent_run) or {} for case in report.cases}
    on_server = adk_server.get("/apps/app/users/keeper/sessions").json()
    assert sorted(session["id"] for session in on_server) == sorted(s["session_id"] for s in recorded.values())
    assert len(on_server) == 3
    for eval_id, session in recorded.items():
        assert {key: value for key, value in session.items() if key != "session_id"} == {
            "base_url": adk_server.base_url,
            "app_name": APP,
            "user_id": "keeper",
            "kept": True,
        }
        events = adk_server.get(f"/apps/app/users/keeper/sessions/{session['session_id']}").json()["events"]
        texts = [part["text"] for event in events for part in event["content"]["parts"] if part.get("text")]
        assert texts == [messages[eval_id], f"answer: {messages[eval_id]}"]  # this case's own conversation
        assert len(events) == 4  # the user's message, the tool call, the tool's answer, the final answer

    written = write_outputs(report, tmp_path / "out")
    result_id = f"app_{eval_set_id}_{report.completed_at.timestamp()}"
    adk_files = [path for path in written if path.name.endswith(".evalset_result.json")]
    assert [path.name for path in adk_files] == [f"{result_id}.evalset_result.json"]
    result = json.loads(adk_files[0].read_text(encoding="utf-8"))
    assert result["eval_set_result_id"] == result_id
    assert [case["final_eval_status"] for case in result["eval_case_results"]] == [1, 1, 1]
    # the files name the kept sessions, so `adk web` opens what they describe
    assert {case["eval_id"]: case["session_id"] for case in result["eval_case_results"]} == {
        eval_id: session["session_id"] for eval_id, session in recorded.items()
    }


def _kill_when(server: AdkApiServer, ready: Callable[[], bool]) -> threading.Thread:
    """A thread that SIGKILLs the server as soon as `ready()` holds (or after 60 s)."""

    def watch() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not ready():
            time.sleep(0.05)
        server.kill()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


# Last in the module: it kills the module's server (a test after it would wait for its restart).
def test_a_server_killed_mid_run_makes_an_errored_run_that_is_never_compared_nor_a_baseline(
    adk_server: AdkApiServer, tmp_path: Path, sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before issue 18 the second run took the baseline's cached answers (measured on 383fc3c: no request
    reached the server, the run was stored `completed`, 6 passed, compared with the baseline, exit 0); and
    with fresh answers there was no outage rule: a `completed` run with 4 failed cases, a false regression,
    and the next run's baseline."""
    fast, slow = ["fast0", "fast1"], ["slow0", "slow1", "slow2", "slow3"]
    eval_file, eval_set_id, messages = write_set(tmp_path, [*fast, *slow], user_id="outage")
    baseline = evaluate(eval_file, agent=adk_server.reference(), db_url=sqlite_url)
    adk_server.slow_switch.write_text("60", encoding="utf-8")  # from now on the slow cases' turns take a minute
    before = len(adk_server.calls())

    def fast_done_slow_in_progress() -> bool:
        """The slow turns have begun and the fast case runs are over (their sessions deleted)."""
        if not all(f"1\t{messages[i]}" in adk_server.calls()[before:] for i in slow):
            return False
        try:
            return len(adk_server.get("/apps/app/users/outage/sessions").json()) == len(slow)
        except (httpx.HTTPError, ValueError):
            return False

    killer = _kill_when(adk_server, fast_done_slow_in_progress)
    capsys.readouterr()
    code = main(["run", str(eval_file), "--agent", adk_server.reference(), "--db-url", sqlite_url])
    killer.join(timeout=5)

    engine = get_engine(sqlite_url)
    (errored_id,) = [run_id for run_id in stored_run_ids(sqlite_url) if run_id != baseline.run_id]
    errored, report = get_run(errored_id, engine), show(errored_id, db_url=sqlite_url)
    assert (baseline.status, baseline.summary.passed) == ("completed", 6)
    killed_run_calls = sorted(adk_server.calls()[before:])
    assert killed_run_calls == sorted([*both_steps([messages[i] for i in fast]), *(f"1\t{messages[i]}" for i in slow)])
    assert code == 4
    assert (errored.status, report.errored) == ("errored", True)
    assert (errored.error or "").startswith(
        f"could not evaluate: 4 of 6 case runs could not reach the agent (first: {eval_set_id}/slow0: "
    )
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"agent-eval: error: {errored.error}"
    outcomes = {
        case.eval_id: (case.agent_run.error_kind, case.agent_run.attempts, case.passed) for case in report.cases
    }
    assert outcomes == {"fast0": (None, 1, True), "fast1": (None, 1, True)} | dict.fromkeys(
        slow, ("transport", 4, False)
    )
    assert (errored.baseline_run_id, errored.regressed, errored.regression) == (None, None, None)
    # a later run of the same agent, eval set and criteria takes the healthy run as baseline, never the errored
    later = rescore(baseline.run_id, db_url=sqlite_url)
    assert get_run(later.run_id, engine).baseline_run_id == baseline.run_id
    assert choose_baseline(later.run_id, engine).run_id == baseline.run_id
    assert (later.regressed, get_run(baseline.run_id, engine).status) == (False, "completed")
