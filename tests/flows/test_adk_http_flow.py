"""The `agent-eval` flow on the real Prefect engine with the ADK adapter (the ADK demo) and an HTTP agent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, select

from agent_eval import evaluate
from agent_eval.store import CaseRecord, get_engine
from tests.agents.http_servers import JsonAgentServer, serve
from tests.flows.helpers import write_echo_set

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_server")]

ADK_DEMO_DIR = Path(__file__).resolve().parents[2] / "examples" / "home_automation_adk"


def _stored_calls(db_url: str, run_id: str, eval_id: str) -> list[list[str]]:
    with Session(get_engine(db_url)) as session:
        record = session.exec(
            select(CaseRecord).where(CaseRecord.run_id == run_id, CaseRecord.eval_id == eval_id)
        ).one()
        return [[use["name"] for use in inv["intermediate_data"]["tool_uses"]] for inv in record.actual_invocations]


def test_adk_demo_runs_through_the_flow_with_its_designed_failure(sqlite_url: str) -> None:
    pytest.importorskip("google.adk")

    report = evaluate(ADK_DEMO_DIR, db_url=sqlite_url)

    assert (report.summary.total, report.summary.passed, report.summary.failed) == (9, 8, 1)
    failed = {case.eval_id: [m.metric_name for m in case.metrics if m.gates] for case in report.failed_cases()}
    assert failed == {"set_living_room_temperature_lowercase": ["tool_trajectory_avg_score"]}
    # the calls made inside the memory_agent AgentTool are stored with the AgentTool call
    assert _stored_calls(sqlite_url, report.run_id, "remember_and_recall") == [
        ["memory_agent", "remember"],
        ["memory_agent", "recall"],
    ]
    assert _stored_calls(sqlite_url, report.run_id, "climate_then_device") == [
        ["transfer_to_agent", "set_temperature"],
        ["transfer_to_agent", "set_device_info"],
    ]


def _echo(body: dict[str, Any]) -> dict[str, Any]:
    prompt = body["prompt"]
    return {"response": f"answer: {prompt}", "trajectory": [{"tool_name": "lookup", "tool_input": {"query": prompt}}]}


def test_http_agent_503_is_retried_by_the_flow(tmp_path: Path, sqlite_url: str) -> None:
    eval_file, messages = write_echo_set(tmp_path, ["remote"])
    server = JsonAgentServer(_echo, failures=1)

    with serve(server.handle) as (base_url, requests):
        report = evaluate(eval_file, agent=f"{base_url}/agent", db_url=sqlite_url)

    assert [request.body["prompt"] for request in requests] == [messages["remote"]] * 2  # a 503, then the retry
    assert (report.summary.total, report.summary.passed) == (1, 1)
    assert report.cases[0].agent_run.error is None
