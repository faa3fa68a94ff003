"""Every run is compared with its baseline: none at first, then the latest comparable run or a pinned one; a
regression is stored with the run, alerted to the webhook, and fails the flow run when the config asks."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.objects import StateType

from agent_eval import evaluate
from agent_eval.compare.alerts import ALERT_WEBHOOK_ENV
from agent_eval.results.model import RunReport
from agent_eval.store import get_engine, get_run
from tests.compare.test_alerts import WebhookReceiver
from tests.flows import regression_agents
from tests.flows.helpers import write_echo_set

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_server")]

AGENT = "tests.flows.regression_agents:switchable_agent"
NAMES = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
BROKEN = ["bravo", "delta", "foxtrot"]
CRITERIA = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}
TRAJECTORY, RESPONSE = "tool_trajectory_avg_score", "response_match_score"


@pytest.fixture(autouse=True)
def _no_alert_webhook(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No webhook unless a test sets one; every mode switched back afterwards."""
    monkeypatch.delenv(ALERT_WEBHOOK_ENV, raising=False)
    yield
    regression_agents.MODES.clear()


@pytest.fixture
def eval_set(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """Six echo cases with fresh messages."""
    return write_echo_set(tmp_path, NAMES)


def _run(eval_file: Path, url: str, config: dict[str, Any] | None = None, **options: Any) -> RunReport:
    return evaluate(eval_file, agent=AGENT, config={"criteria": CRITERIA, **(config or {})}, db_url=url, **options)


def _break(messages: dict[str, str], names: list[str], mode: str) -> None:
    regression_agents.MODES.update({messages[name]: mode for name in names})


def _labels(report: RunReport, names: list[str]) -> list[str]:
    return [f"{report.eval_set_ids[0]}/{name}" for name in names]


def _metric(payload: dict[str, Any], name: str) -> dict[str, Any]:
    return next(m for m in payload["metrics"] if m["metric_name"] == name)


def _flow_run_state(flow_run_id: str) -> tuple[StateType, str | None]:
    async def read() -> tuple[StateType, str | None]:
        async with get_client() as client:
            flow_run = await client.read_flow_run(UUID(flow_run_id))
        assert flow_run.state is not None
        return flow_run.state.type, flow_run.state.message

    return asyncio.run(read())


def test_runs_compare_with_the_latest_run_and_a_regression_is_stored_and_alerted(
    eval_set: tuple[Path, dict[str, str]], sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    eval_file, messages = eval_set
    engine = get_engine(sqlite_url)

    with WebhookReceiver() as receiver:
        monkeypatch.setenv(ALERT_WEBHOOK_ENV, receiver.url)
        first = _run(eval_file, sqlite_url)
        second = _run(eval_file, sqlite_url, refresh_cache=True)
        _break(messages, BROKEN, "wrong_tool")
        third = _run(eval_file, sqlite_url, refresh_cache=True)
        bodies = receiver.bodies()

    assert [regression_agents.CALLS[m] for m in messages.values()] == [3] * 6
    # no earlier run: nothing to compare with, and the stored run says so
    assert first.regression is not None and not first.regressed
    assert first.regression["summary"] == "no comparable baseline: no earlier completed run of this agent"
    assert get_run(first.run_id, engine).baseline_run_id is None
    # the same results again: compared with the first run, nothing regressed
    assert second.regression is not None
    assert (second.regressed, second.regression["baseline_run_id"]) == (False, first.run_id)
    assert second.regression["flipped_to_failing"] == [] and second.regression["regressed_metrics"] == []
    assert _metric(second.regression, TRAJECTORY)["difference"] == 0.0
    stored = get_run(second.run_id, engine)
    assert (stored.baseline_run_id, stored.regressed) == (first.run_id, False)
    assert "alerts" not in (stored.regression or {})
    # three cases call the wrong tool: compared with the second run, they flipped and the trajectory regressed
    assert third.summary.passed == 3
    assert third.regressed
    payload = third.regression
    assert payload is not None
    assert payload["baseline_run_id"] == second.run_id
    assert payload["flipped_to_failing"] == payload["hard_regressions"] == _labels(third, BROKEN)
    assert TRAJECTORY in payload["regressed_metrics"] and RESPONSE not in payload["regressed_metrics"]
    trajectory = _metric(payload, TRAJECTORY)
    assert (trajectory["baseline_mean"], trajectory["current_mean"], trajectory["difference"]) == (1.0, 0.5, -0.5)
    assert trajectory["ci_high"] < 0
    # one POST, with the flipped cases and a Slack-ready text
    assert len(bodies) == 1
    posted = json.loads(bodies[0])
    assert posted["flipped_to_failing"] == _labels(third, BROKEN)
    assert posted["regressed"] is True and posted["current_run_id"] == third.run_id
    assert "regression in " + third.eval_set_ids[0] in posted["text"]
    row = get_run(third.run_id, engine)
    assert (row.status, row.baseline_run_id, row.regressed) == ("completed", second.run_id, True)
    assert row.regression is not None
    assert row.regression["alerts"]["webhook_status"] == 200
    assert row.regression["flipped_to_failing"] == _labels(third, BROKEN)


def test_a_pinned_baseline_is_used_instead_of_the_latest_run(
    eval_set: tuple[Path, dict[str, str]], sqlite_url: str
) -> None:
    eval_file, messages = eval_set
    first = _run(eval_file, sqlite_url)
    _break(messages, BROKEN, "wrong_tool")
    second = _run(eval_file, sqlite_url, refresh_cache=True)

    latest = _run(eval_file, sqlite_url)  # the agent invoked again: still broken, the same results
    pinned = _run(eval_file, sqlite_url, baseline_run_id=first.run_id)

    assert [regression_agents.CALLS[m] for m in messages.values()] == [4] * 6
    assert second.regressed and second.regression is not None
    assert second.regression["baseline_run_id"] == first.run_id
    assert latest.regression is not None and latest.regression["baseline_run_id"] == second.run_id
    assert not latest.regressed
    assert pinned.regression is not None and pinned.regression["baseline_run_id"] == first.run_id
    assert pinned.regressed
    assert pinned.regression["flipped_to_failing"] == _labels(pinned, BROKEN)
    row = get_run(pinned.run_id, get_engine(sqlite_url))
    assert (row.baseline_run_id, row.regressed) == (first.run_id, True)


def test_fail_on_regression_fails_the_flow_run_and_still_returns_the_report(
    eval_set: tuple[Path, dict[str, str]], sqlite_url: str
) -> None:
    eval_file, messages = eval_set
    strict = {"regression": {"fail_on_regression": True}}
    first = _run(eval_file, sqlite_url, strict)
    _break(messages, BROKEN, "wrong_tool")

    second = _run(eval_file, sqlite_url, strict, refresh_cache=True)

    assert first.flow_run_id is not None and second.flow_run_id is not None
    assert _flow_run_state(first.flow_run_id)[0] is StateType.COMPLETED
    assert second.regressed and second.summary.failed == 3
    state, message = _flow_run_state(second.flow_run_id)
    assert state is StateType.FAILED
    assert message is not None and f"regression against run {first.run_id}" in message
    assert TRAJECTORY in message
    row = get_run(second.run_id, get_engine(sqlite_url))
    assert (row.status, row.regressed, row.baseline_run_id) == ("completed", True, first.run_id)


def test_a_drop_within_the_tolerance_is_not_a_regression(
    eval_set: tuple[Path, dict[str, str]], sqlite_url: str
) -> None:
    eval_file, messages = eval_set
    first = _run(eval_file, sqlite_url)
    _break(messages, NAMES, "wordy")  # every answer a little worse, every case still passing

    tolerant = _run(eval_file, sqlite_url, {"regression": {"tolerance": 0.2}}, refresh_cache=True)
    strict = _run(eval_file, sqlite_url, baseline_run_id=first.run_id)  # default tolerance 0.05, still wordy

    assert [regression_agents.CALLS[m] for m in messages.values()] == [3] * 6
    drop = 1.0 - regression_agents.WORDY_SCORE
    assert 0.05 < drop < 0.2
    assert tolerant.summary.passed == strict.summary.passed == 6
    assert tolerant.regression is not None and strict.regression is not None
    response = _metric(tolerant.regression, RESPONSE)
    assert response["difference"] == pytest.approx(-drop)
    assert (response["tolerance"], response["regressed"]) == (0.2, False)
    assert not tolerant.regressed and tolerant.regression["regressed_metrics"] == []
    assert get_run(tolerant.run_id, get_engine(sqlite_url)).regressed is False
    assert strict.regressed and strict.regression["regressed_metrics"] == [RESPONSE]
    assert strict.regression["flipped_to_failing"] == []
