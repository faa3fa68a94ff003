"""Regression alerts without a Prefect server: the webhook POST, the notification block, the automations file.

A real HTTP receiver on 127.0.0.1 records what is POSTed; `WebhookReceiver` and `regression_report` are reused by
the end-to-end test in tests/deployments/test_automation.py.
"""

from __future__ import annotations

import json
import os
import shutil
import string
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from uuid import uuid4

import httpx
import pytest
import yaml  # type: ignore[import-untyped]
from pydantic import ValidationError

from agent_eval.compare.alerts import (
    ALERT_BLOCK_ID_ENV,
    ALERT_WEBHOOK_ENV,
    alert_payload,
    post_webhook,
    resolve_automations,
    webhook_block,
)
from agent_eval.compare.regression import RegressionReport, compare_runs
from agent_eval.results.aggregate import summarize
from agent_eval.results.model import CaseResult, MetricResult, RunReport
from agent_eval.schema import AgentRun, EvalStatus
from tests.conftest import REPO_ROOT

AUTOMATIONS_FILE = REPO_ROOT / "deployments" / "automations.yaml"
METRIC = "response_match_score"
FLIPPED = ["home/lamp_on", "home/thermostat"]
RUN_URL = "http://127.0.0.1:4200/runs/flow-run/abc"


# ------------------------------------------------------------------------------------------------ helpers
class WebhookReceiver:
    """A stdlib HTTP server on 127.0.0.1 that records every POST (path, headers, body) and answers `status`.

    `received_at` holds each POST's arrival (`time.time()`).
    """

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.received_at: list[float] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver._lock:
                    receiver.requests.append((self.path, dict(self.headers), body))
                    receiver.received_at.append(time.time())
                self.send_response(receiver.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The receiver's `/hook` URL."""
        return f"http://127.0.0.1:{self._server.server_port}/hook"

    def bodies(self) -> list[bytes]:
        """The POSTed bodies so far."""
        with self._lock:
            return [body for _, _, body in self.requests]

    def __enter__(self) -> WebhookReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def _case(eval_id: str, score: float, *, passed: bool) -> CaseResult:
    status = EvalStatus.PASSED if passed else EvalStatus.FAILED
    metric = MetricResult(metric_name=METRIC, eval_set_id="home", eval_id=eval_id, score=score, status=status)
    agent_run = AgentRun(eval_set_id="home", eval_id=eval_id)
    return CaseResult(eval_set_id="home", eval_id=eval_id, status=status, agent_run=agent_run, metrics=[metric])


def _report(run_id: str, cases: list[CaseResult]) -> RunReport:
    moment = datetime(2026, 12, 2, 2, 0, tzinfo=UTC)
    return RunReport(
        run_id=run_id,
        eval_set_ids=["home"],
        agent_reference="pkg.bot:agent",
        agent_fingerprint="abc123",
        config={},
        config_hash="hash",
        num_runs=1,
        started_at=moment,
        completed_at=moment,
        cases=cases,
        summary=summarize(cases),
    )


def regression_report() -> RegressionReport:
    """Four cases whose `response_match_score` all drop (so it regresses); lamp_on and thermostat flip to failing."""
    ids = ["lamp_on", "thermostat", "office", "kitchen"]
    baseline = _report("baseline", [_case(eval_id, 1.0, passed=True) for eval_id in ids])
    current_scores = [(0.2, False), (0.3, False), (0.9, True), (0.9, True)]
    current = _report("nightly", [_case(i, s, passed=p) for i, (s, p) in zip(ids, current_scores, strict=True)])
    return compare_runs(baseline, current)


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    """A webhook receiver answering 200."""
    with WebhookReceiver() as running:
        yield running


@pytest.fixture
def payload() -> dict[str, Any]:
    """The alert payload of `regression_report()`."""
    return alert_payload(regression_report(), ["home"], RUN_URL)


# ---------------------------------------------------------------------------------------------- the report
def test_the_hand_built_comparison_regresses_and_flips_two_cases(payload: dict[str, Any]) -> None:
    assert payload["regressed"] is True
    assert payload["regressed_metrics"] == [METRIC]
    assert payload["flipped_to_failing"] == FLIPPED
    assert payload["eval_set_ids"] == ["home"] and payload["run_url"] == RUN_URL
    assert payload["text"].startswith(f":rotating_light: agent-eval regression in home (<{RUN_URL}|flow run>)\n")
    assert payload["text"].endswith(payload["summary"])
    json.dumps(payload)  # JSON-able as is


# -------------------------------------------------------------------------------------------- post_webhook
def test_post_webhook_posts_the_payload_as_json(receiver: WebhookReceiver, payload: dict[str, Any]) -> None:
    status = post_webhook(payload, receiver.url)

    assert status == 200
    [(path, headers, body)] = receiver.requests
    assert path == "/hook"
    assert headers["Content-Type"] == "application/json"
    assert json.loads(body) == payload
    assert "text" in json.loads(body)  # what a Slack incoming webhook shows


def test_post_webhook_returns_the_receivers_status(payload: dict[str, Any]) -> None:
    with WebhookReceiver(status=202) as receiver:
        assert post_webhook(payload, receiver.url) == 202


def test_post_webhook_uses_the_environment_variable_without_a_url(
    receiver: WebhookReceiver, payload: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ALERT_WEBHOOK_ENV, receiver.url)

    assert post_webhook(payload) == 200
    assert [json.loads(body) for body in receiver.bodies()] == [payload]


def test_an_explicit_url_wins_over_the_environment_variable(
    receiver: WebhookReceiver, payload: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ALERT_WEBHOOK_ENV, "http://127.0.0.1:9/never")

    assert post_webhook(payload, receiver.url) == 200
    assert len(receiver.bodies()) == 1


def test_an_error_status_raises(payload: dict[str, Any]) -> None:
    with WebhookReceiver(status=500) as receiver, pytest.raises(httpx.HTTPStatusError) as raised:
        post_webhook(payload, receiver.url)

    assert raised.value.response.status_code == 500
    assert len(receiver.bodies()) == 1


def test_no_url_and_no_variable_sends_nothing(
    receiver: WebhookReceiver, payload: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ALERT_WEBHOOK_ENV, raising=False)

    assert post_webhook(payload) is None
    assert receiver.requests == []


# -------------------------------------------------------------------------------------- notification block
def test_the_webhook_block_posts_text_subject_and_body(receiver: WebhookReceiver) -> None:
    block = webhook_block(receiver.url, "agent-eval-alerts")

    block.notify('line 1\nline 2 with "quotes" and {{braces}}', "agent-eval regression: home")

    [(path, _, body)] = receiver.requests
    assert path == "/hook"
    assert json.loads(body) == {
        "text": 'agent-eval regression: home\nline 1\nline 2 with "quotes" and {{braces}}',
        "subject": "agent-eval regression: home",
        "body": 'line 1\nline 2 with "quotes" and {{braces}}',
    }


def test_the_webhook_url_is_kept_as_a_secret() -> None:
    block = webhook_block("https://hooks.slack.com/services/T0/B0/secret-token")

    assert "secret-token" not in block.model_dump_json()
    assert block.secrets.get_secret_value() == {"webhook_url": "https://hooks.slack.com/services/T0/B0/secret-token"}


def test_the_webhook_block_rejects_a_url_that_is_not_http() -> None:
    with pytest.raises(ValueError, match="http:// or https://"):
        webhook_block("hooks.slack.com/services/x")


def test_setup_alerts_rejects_a_bad_webhook_before_calling_the_server(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env |= {"PREFECT_HOME": str(tmp_path), "PREFECT_API_URL": "http://127.0.0.1:9/api"}  # nothing listens there
    done = subprocess.run([sys.executable, "deployments/setup_alerts.py", "--webhook", "hooks.example.com/x"],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)  # fmt: skip

    assert done.returncode == 2, done.stderr
    assert "http:// or https://" in done.stderr


# ------------------------------------------------------------------------------------- automations file
def test_the_file_as_committed_needs_the_block_id_filled_in() -> None:
    from prefect.events.schemas.automations import AutomationCore

    raw = yaml.safe_load(AUTOMATIONS_FILE.read_text())["automations"][0]

    assert raw["actions"][0]["block_document_id"] == "${" + ALERT_BLOCK_ID_ENV + "}"
    with pytest.raises(ValidationError, match="block_document_id"):
        AutomationCore.model_validate(raw)


def test_resolving_sets_the_block_and_prefect_accepts_the_automation() -> None:
    from prefect.events.schemas.automations import AutomationCore, EventTrigger, Posture

    block_id = uuid4()

    [data] = resolve_automations(AUTOMATIONS_FILE, block_id)

    automation = AutomationCore.model_validate(data)
    assert automation.name == "agent-eval regression alert" and automation.enabled
    trigger = automation.trigger
    assert isinstance(trigger, EventTrigger)
    assert trigger.expect == {"agent-eval.regression"}
    assert trigger.model_dump(mode="json")["match"] == {"prefect.resource.id": "agent-eval.*"}
    assert (trigger.posture, trigger.threshold, trigger.within.total_seconds()) == (Posture.Reactive, 1, 0)
    [action] = automation.actions
    assert action.type == "send-notification" and action.block_document_id == block_id  # type: ignore[union-attr]


def test_envsubst_gives_the_same_automation_as_the_script(tmp_path: Path) -> None:
    block_id = str(uuid4())
    text = AUTOMATIONS_FILE.read_text()
    if envsubst := shutil.which("envsubst"):
        env = {**os.environ, ALERT_BLOCK_ID_ENV: block_id}
        text = subprocess.run([envsubst], input=text, env=env, capture_output=True, text=True, check=True).stdout
    else:  # same ${VAR} semantics
        text = string.Template(text).substitute({ALERT_BLOCK_ID_ENV: block_id})

    assert yaml.safe_load(text)["automations"] == resolve_automations(AUTOMATIONS_FILE, block_id)


def test_a_file_without_a_notification_action_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    path.write_text("automations:\n  - name: x\n    trigger: {type: event}\n    actions: [{type: do-nothing}]\n")

    with pytest.raises(ValueError, match="no send-notification action"):
        resolve_automations(path, uuid4())
    path.write_text("automations: []\n")
    with pytest.raises(ValueError, match="holds no automation"):
        resolve_automations(path, uuid4())


def test_the_templates_render_the_payload_as_the_server_does(payload: dict[str, Any]) -> None:
    from prefect.server.events.schemas.events import ReceivedEvent
    from prefect.server.utilities.user_templates import render_user_template_sync

    [data] = resolve_automations(AUTOMATIONS_FILE, uuid4())
    action = data["actions"][0]
    event = ReceivedEvent(
        occurred=datetime.now(UTC),
        event="agent-eval.regression",
        resource={"prefect.resource.id": "agent-eval.home", "prefect.resource.name": "home"},
        payload=payload,
        id=uuid4(),
    )

    subject = render_user_template_sync(action["subject"], {"event": event})
    body = render_user_template_sync(action["body"], {"event": event})

    assert subject == "agent-eval regression: home"
    assert body == (
        payload["summary"] + "\n\n"
        f"Regressed metrics: {METRIC}\n"
        f"Flipped to failing: {', '.join(FLIPPED)}\n"
        f"Run: {RUN_URL}"
    )
    quiet = {**payload, "regressed_metrics": [], "flipped_to_failing": [], "run_url": None}
    body = render_user_template_sync(action["body"], {"event": event.model_copy(update={"payload": quiet})})
    assert body.endswith("Regressed metrics: none\nFlipped to failing: none\nRun: not recorded")
