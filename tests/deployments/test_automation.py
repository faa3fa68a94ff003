"""Alerting end to end, as a user sets it up: a real `prefect server start`, `deployments/setup_alerts.py`, the
manual `envsubst | prefect automation create --from-file` way, and the regression event emitted exactly as the
flow emits it, until the local webhook receiver gets the notification.

Run it with `pytest -m e2e tests/deployments/test_automation.py`. It takes about 30 s.
"""

from __future__ import annotations

import json
import os
import shutil
import string
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_eval.compare.alerts import ALERT_BLOCK_ID_ENV, alert_payload
from tests.compare.test_alerts import FLIPPED, METRIC, WebhookReceiver, regression_report
from tests.conftest import REPO_ROOT
from tests.deployments.prefect_stack import PrefectStack
from tests.prefect_http import prefect_api

pytestmark = pytest.mark.e2e

AUTOMATION = "agent-eval regression alert"
RUN_URL = "http://127.0.0.1:4200/runs/flow-run/0000"
EMIT = """
import json, sys, time
from agent_eval.compare.alerts import emit_regression_event
event_id = emit_regression_event(json.load(sys.stdin))
print(json.dumps({"event_id": event_id, "emitted_at": time.time()}), flush=True)
"""


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[PrefectStack]:
    """A Prefect server on a free port with its own PREFECT_HOME; stopped by process group afterwards."""
    stack = PrefectStack.start(tmp_path, {"COLUMNS": "250"})  # wide enough for `prefect automation ls`' table
    try:
        yield stack
    finally:
        stack.stop()


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    """The webhook the notification block POSTs to."""
    with WebhookReceiver() as running:
        yield running


def python(stack: PrefectStack, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The venv's Python, from the repository root, in the stack's environment (its PREFECT_API_URL)."""
    return subprocess.run([sys.executable, *args], cwd=REPO_ROOT, env=stack.env, input=stdin, capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip


def setup_alerts(stack: PrefectStack, receiver: WebhookReceiver) -> str:
    """Run `deployments/setup_alerts.py --webhook URL`; its output."""
    done = python(stack, "deployments/setup_alerts.py", "--webhook", receiver.url)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def automation_ids(stack: PrefectStack) -> list[str]:
    """The ids of the automations named AUTOMATION, from the server's REST API."""
    automations = prefect_api(stack.env["PREFECT_API_URL"] + "/automations/filter", {})
    return [item["id"] for item in automations if item["name"] == AUTOMATION]


def wait_for_posts(receiver: WebhookReceiver, timeout: float) -> list[bytes]:
    """Poll the receiver until it got a POST, at most `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not receiver.bodies() and time.monotonic() < deadline:
        time.sleep(0.1)
    return receiver.bodies()


def test_a_regression_event_reaches_the_webhook(stack: PrefectStack, receiver: WebhookReceiver) -> None:
    first = setup_alerts(stack, receiver)
    assert f"created automation {AUTOMATION!r}" in first
    block_id = first.split("notification block 'agent-eval-alerts': ")[1].split()[0]
    [automation_id] = automation_ids(stack)

    # The manual way works with the same file: fill in the block's id, then `prefect automation create`
    # (which refuses the file as committed: the placeholder is not a UUID).
    refused = stack.run("automation", "create", "--from-file", "deployments/automations.yaml")
    assert refused.returncode != 0 and "block_document_id" in refused.stdout + refused.stderr
    text = (REPO_ROOT / "deployments" / "automations.yaml").read_text()
    if envsubst := shutil.which("envsubst"):
        text = subprocess.run([envsubst], input=text, env={**os.environ, ALERT_BLOCK_ID_ENV: block_id},
                              capture_output=True, text=True, check=True).stdout  # fmt: skip
    else:
        text = string.Template(text).substitute({ALERT_BLOCK_ID_ENV: block_id})
    resolved = stack.home / "automations.yaml"
    resolved.write_text(text)
    created = stack.run("automation", "create", "--from-file", str(resolved))
    assert created.returncode == 0, created.stdout + created.stderr
    assert len(automation_ids(stack)) == 2  # `create` always adds one

    # Running the script again updates the automation (and drops the duplicate) instead of adding another.
    again = setup_alerts(stack, receiver)
    assert f"notification block 'agent-eval-alerts': {block_id}" in again
    assert f"updated automation {AUTOMATION!r}" in again and "deleted 1 duplicate" in again
    assert len(automation_ids(stack)) == 1
    listed = stack.run("automation", "ls")
    assert listed.returncode == 0 and listed.stdout.count(AUTOMATION) == 1, listed.stdout
    assert automation_ids(stack)[0] in listed.stdout
    assert automation_id != block_id

    # The event, as the flow emits it.
    payload = alert_payload(regression_report(), ["home"], RUN_URL)
    emitted = python(stack, "-c", EMIT, stdin=json.dumps(payload))
    assert emitted.returncode == 0, emitted.stdout + emitted.stderr
    emitted_at = json.loads(emitted.stdout.splitlines()[-1])["emitted_at"]

    posts = wait_for_posts(receiver, timeout=30)

    assert posts, f"no POST within 30 s; see {stack.home}/server.log"
    print(f"event → webhook: {receiver.received_at[0] - emitted_at:.2f} s")
    time.sleep(3)  # one automation: one notification
    [post] = receiver.bodies()
    body = json.loads(post)
    assert body["subject"] == "agent-eval regression: home"
    assert body["text"] == body["subject"] + "\n" + body["body"]
    assert f"Regressed metrics: {METRIC}" in body["body"]
    assert f"Flipped to failing: {', '.join(FLIPPED)}" in body["body"]
    assert f"Run: {RUN_URL}" in body["body"]
    assert payload["summary"] in body["body"]
