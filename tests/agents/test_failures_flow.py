"""Agent failures through the real flow: an agent's `SystemExit` / `KeyboardInterrupt` fails its case run only,
an HTTP backend's 503 is retried until it answers, and a backend that is down is a transport failure."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from agent_eval import evaluate
from tests.agents import failing_agents
from tests.agents.http_servers import serve
from tests.flows.helpers import write_echo_set

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_server")]

AGENTS = "tests.agents.failing_agents"


def test_system_exit_and_keyboard_interrupt_fail_their_case_runs_only(tmp_path: Path, sqlite_url: str) -> None:
    eval_file, _ = write_echo_set(tmp_path, ["exit", "interrupt", "fine"])

    report = evaluate(eval_file, agent=f"{AGENTS}:exit_or_interrupt", db_url=sqlite_url)

    by_case = {case.eval_id: case for case in report.cases}
    assert by_case["fine"].passed
    assert by_case["exit"].agent_run.error == "turn 1: SystemExit: 3 raised by the agent"
    assert by_case["interrupt"].agent_run.error == "turn 1: KeyboardInterrupt raised by the agent"
    assert [by_case[name].agent_run.error_kind for name in ("exit", "interrupt")] == ["agent", "agent"]
    assert [by_case[name].agent_run.attempts for name in ("exit", "interrupt")] == [1, 1]  # not retried
    assert "sys.exit(3)" in (by_case["exit"].agent_run.error_traceback or "")
    assert (report.summary.total, report.summary.passed, report.summary.failed) == (3, 1, 2)


def test_a_backend_answering_503_then_200_is_retried_and_passes(tmp_path: Path, sqlite_url: str) -> None:
    eval_file, _ = write_echo_set(tmp_path, ["only"])
    statuses = iter([503])

    def handle(method: str, path: str, body: Any) -> tuple[int, Any]:
        return next(statuses, 200), {}

    with serve(handle) as (base_url, requests):
        failing_agents.UPSTREAM["url"] = base_url + "/backend"
        report = evaluate(eval_file, agent=f"{AGENTS}:http_backed_agent", db_url=sqlite_url)

    case = report.cases[0]
    assert (case.passed, case.agent_run.attempts, len(requests)) == (True, 2, 2)


def test_a_backend_that_is_down_is_a_transport_failure(tmp_path: Path, sqlite_url: str) -> None:
    eval_file, _ = write_echo_set(tmp_path, ["only"])
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        failing_agents.UPSTREAM["url"] = f"http://127.0.0.1:{sock.getsockname()[1]}/backend"

    report = evaluate(eval_file, agent=f"{AGENTS}:http_backed_agent", db_url=sqlite_url)

    run = report.cases[0].agent_run
    assert (run.error_kind, run.attempts) == ("transport", 4)
    assert (run.error or "").startswith("ConnectError: ")
