"""The `agent-eval-judge-check` flow (the `judge-check` deployment) run in-process against the test Prefect server:
it checks every labelled judge (here final_response_match_v2 on 24 labelled echo cases, judged through the fake
Gemini server: `tests.judges.test_judge_check`), stores each check, and on drift emits `agent-eval.judge-drift`
and POSTs the alert to a local webhook receiver; `fail_on_drift` ends it Failed."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.objects import State
from prefect.events.filters import EventFilter, EventNameFilter

from agent_eval.compare.alerts import ALERT_WEBHOOK_ENV, emit_regression_event
from agent_eval.flows import judge_check as judge_check_module
from agent_eval.flows.judge_check import JUDGE_DRIFT_EVENT, JudgeCheckRequest, judge_check_flow
from agent_eval.store import get_engine
from agent_eval.store.labels import judge_checks
from tests.compare.test_alerts import WebhookReceiver
from tests.fakes.gemini_server import FakeGeminiServer
from tests.flows.judge_scripts import JudgeRouter
from tests.judges.test_judge_check import FINAL, FIRST_DRIFT, WORSE, Verdicts, judge_router, label, run_judged

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_server")]

BELOW_FLOOR = f"judge drift: {FINAL} kappa 0.33 → 0.33 on 24 labels (below the floor 0.50)"


@pytest.fixture
def verdicts() -> Verdicts:
    return Verdicts()


@pytest.fixture
def judge(
    fake_gemini: FakeGeminiServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, verdicts: Verdicts
) -> Iterator[JudgeRouter]:
    monkeypatch.delenv(ALERT_WEBHOOK_ENV, raising=False)
    yield from judge_router(fake_gemini, monkeypatch, tmp_path / "home", verdicts)


@pytest.fixture
def emitted(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any], str | None]]:
    """Each event the flow emits: its name, payload and id (emitted for real, to the test server)."""
    found: list[tuple[str, dict[str, Any], str | None]] = []

    def recording(payload: dict[str, Any], event_name: str) -> str | None:
        event_id = emit_regression_event(payload, event_name)
        found.append((event_name, payload, event_id))
        return event_id

    monkeypatch.setattr(judge_check_module, "emit_regression_event", recording)
    return found


def run_flow(**fields: Any) -> State[Any]:
    """The flow run's final state."""

    async def run() -> State[Any]:
        return await judge_check_flow(JudgeCheckRequest(**fields), return_state=True)

    return asyncio.run(run())


def stored_drift_events(event_ids: list[str], timeout: float = 20.0) -> dict[str, dict[str, Any]]:
    """The `agent-eval.judge-drift` events the server holds with these ids (polled: events are stored in batches)."""

    async def read() -> dict[str, dict[str, Any]]:
        async with get_client() as client:
            page = await client.read_events(
                filter=EventFilter(event=EventNameFilter(name=[JUDGE_DRIFT_EVENT])), limit=50
            )
        return {str(event.id): {"resource": event.resource.id, **event.payload} for event in page.events}

    deadline = time.monotonic() + timeout
    while True:
        found = asyncio.run(read())
        if set(event_ids) <= set(found) or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def test_the_judge_check_flow_stores_each_check_and_alerts_on_drift(
    judge: JudgeRouter,
    verdicts: Verdicts,
    tmp_path: Path,
    sqlite_url: str,
    emitted: list[tuple[str, dict[str, Any], str | None]],
) -> None:
    report = run_judged(tmp_path, sqlite_url, verdicts)
    engine = get_engine(sqlite_url)
    label(report.run_id, engine)

    with WebhookReceiver() as receiver:
        # no drift: Completed, nothing sent
        steady = run_flow(db_url=sqlite_url, alert_webhook=receiver.url)
        assert steady.is_completed(), steady
        assert steady.message == "1 judge(s) checked, 0 drifted"
        (summary,) = steady.result()
        assert summary["metric"] == FINAL and summary["labels"] == 24 and summary["drift"] is None
        assert summary["kappa"] == pytest.approx(2 / 3) and summary["change"] is None
        assert receiver.bodies() == [] and emitted == []
        assert judge.count(FINAL) == 2 * 24 * 3  # every labelled item asked again (3 samples)

        # the judge now disagrees more: one POST, one event, still Completed
        verdicts.by_case.update(WORSE)
        drifted = run_flow(db_url=sqlite_url, alert_webhook=receiver.url)
        assert drifted.is_completed(), drifted
        assert drifted.message == "1 judge(s) checked, 1 drifted"
        (body,) = [json.loads(raw) for raw in receiver.bodies()]
        assert body["summary"].startswith(f"judge drift: {FINAL} kappa")
        assert body["summary"] == FIRST_DRIFT
        assert body["text"] == f":warning: agent-eval {FIRST_DRIFT}"
        assert (body["metric"], body["labels"], body["drift"]) == (FINAL, 24, FIRST_DRIFT)
        assert body["kappa"] == pytest.approx(1 / 3) and body["change"] == pytest.approx(-1 / 3)
        assert body["eval_set_ids"] == [f"judge-{FINAL}"]
        newest = judge_checks(engine, limit=1)[0]
        assert body["check_id"] == newest.id and newest.kappa == pytest.approx(1 / 3)
        assert [summary["drift"] for summary in drifted.result()] == [FIRST_DRIFT]

        # below a floor with fail_on_drift, the webhook from $AGENT_EVAL_ALERT_WEBHOOK: Failed, a second POST
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(ALERT_WEBHOOK_ENV, receiver.url)
            failed = run_flow(db_url=sqlite_url, metrics=[FINAL], min_kappa=0.5, fail_on_drift=True)
        assert failed.is_failed(), failed
        assert failed.message == BELOW_FLOOR
        assert [json.loads(raw)["summary"] for raw in receiver.bodies()] == [FIRST_DRIFT, BELOW_FLOOR]

    # every check stored, newest first
    assert [c.kappa for c in judge_checks(engine)] == pytest.approx([1 / 3, 1 / 3, 2 / 3])
    assert judge.count(FINAL) == 4 * 24 * 3

    # one event per drift, stored by the server
    assert [(name, payload["summary"]) for name, payload, _ in emitted] == [
        (JUDGE_DRIFT_EVENT, FIRST_DRIFT),
        (JUDGE_DRIFT_EVENT, BELOW_FLOOR),
    ]
    event_ids = [event_id for _, _, event_id in emitted]
    assert all(event_ids)
    events = stored_drift_events([str(event_id) for event_id in event_ids])
    assert {event_id: events[str(event_id)]["summary"] for event_id in event_ids} == {
        event_ids[0]: FIRST_DRIFT,
        event_ids[1]: BELOW_FLOOR,
    }
    assert {events[str(event_id)]["resource"] for event_id in event_ids} == {f"agent-eval.judge-{FINAL}"}


def test_a_webhook_that_fails_loses_no_check(
    judge: JudgeRouter, verdicts: Verdicts, tmp_path: Path, sqlite_url: str
) -> None:
    report = run_judged(tmp_path, sqlite_url, verdicts)
    engine = get_engine(sqlite_url)
    label(report.run_id, engine)
    run_flow(db_url=sqlite_url)  # the first check: kappa 2/3
    verdicts.by_case.update(WORSE)

    with WebhookReceiver(status=500) as receiver:
        drifted = run_flow(db_url=sqlite_url, alert_webhook=receiver.url)

    assert drifted.is_completed(), drifted
    assert drifted.message == "1 judge(s) checked, 1 drifted"
    assert len(receiver.bodies()) == 1
    assert [c.kappa for c in judge_checks(engine)] == pytest.approx([1 / 3, 2 / 3])
