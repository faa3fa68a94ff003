"""A webhook URL is a credential: whether the config holds it literally, names a variable or a Prefect Secret
block, the alert still reaches the webhook, and the secret is nowhere else: not in the store's runs, the report
(JSON, HTML, `show --json`), the console, nor Prefect's flow run parameters and logs."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from prefect.blocks.system import Secret
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
from prefect.logging.handlers import APILogWorker
from sqlalchemy import text

from agent_eval import evaluate
from agent_eval.cli import main
from agent_eval.compare.alerts import ALERT_WEBHOOK_ENV
from agent_eval.results.model import RunReport
from agent_eval.secrets import SecretUnavailableError, resolve_secret
from agent_eval.store import get_engine
from tests.compare.test_alerts import WebhookReceiver
from tests.flows import regression_agents
from tests.flows.helpers import write_echo_set

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_server")]

AGENT = "tests.flows.regression_agents:switchable_agent"
CRITERIA = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}
NAMES = ["alpha", "bravo", "charlie"]
BROKEN = ["bravo", "charlie"]
HOOK_PATH = "/hooks/T000/B000/XXXXSECRET"
SECRET = "XXXXSECRET"


@pytest.fixture(autouse=True)
def _no_alert_webhook(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No default webhook unless a test sets one; every agent mode switched back afterwards."""
    monkeypatch.delenv(ALERT_WEBHOOK_ENV, raising=False)
    yield
    regression_agents.MODES.clear()


def _hook_url(receiver: WebhookReceiver) -> str:
    """The receiver's address with a Slack-like secret path (the receiver answers on any path)."""
    return receiver.url.removesuffix("/hook") + HOOK_PATH


def _baseline_then_regression(tmp_path: Path, db_url: str, config: dict[str, Any]) -> tuple[RunReport, RunReport]:
    """A passing run, then the same eval set with two cases calling the wrong tool: a regression."""
    eval_file, messages = write_echo_set(tmp_path, NAMES)
    full_config = {"criteria": CRITERIA, **config}
    first = evaluate(eval_file, agent=AGENT, config=full_config, db_url=db_url)
    regression_agents.MODES.update({messages[name]: "wrong_tool" for name in BROKEN})
    second = evaluate(eval_file, agent=AGENT, config=full_config, db_url=db_url, refresh_cache=True)
    assert second.regressed, second.regression
    return first, second


def _stored_runs(db_url: str, run_ids: list[str]) -> str:
    """Every column of the runs' rows, as SQL gives them."""
    with get_engine(db_url).connect() as connection:
        rows = connection.execute(text("SELECT * FROM runs")).mappings().all()
    assert {row["id"] for row in rows} >= set(run_ids)
    return "\n".join(json.dumps(dict(row), default=str) for row in rows)


def _prefect_records(flow_run_ids: list[str | None]) -> tuple[str, str]:
    """The flow runs' parameters (as Prefect's API stores them) and every log line of them and their tasks."""
    APILogWorker.drain_all(timeout=10)

    async def read() -> tuple[str, str]:
        parameters, messages = [], []
        async with get_client() as client:
            for flow_run_id in flow_run_ids:
                assert flow_run_id is not None
                flow_run = await client.read_flow_run(UUID(flow_run_id))
                parameters.append(json.dumps(flow_run.parameters))
                logs = await client.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=[UUID(flow_run_id)])))
                messages.extend(log.message for log in logs)
        return "\n".join(parameters), "\n".join(messages)

    return asyncio.run(read())


def _shown_outputs(run_id: str, db_url: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> tuple[str, str]:
    """`agent-eval show --json` and the HTML report of a stored run."""
    page = tmp_path / "report.html"
    capfd.readouterr()
    assert main(["show", run_id, "--json", "--db-url", db_url]) == 0
    shown = capfd.readouterr().out
    assert json.loads(shown)["run_id"] == run_id
    assert main(["report", run_id, "-o", str(page), "--db-url", db_url]) == 0
    return shown, page.read_text(encoding="utf-8")


def test_a_literal_webhook_alerts_and_is_neither_stored_nor_printed_nor_sent_to_prefect(
    tmp_path: Path, sqlite_url: str, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_EVAL_TEST_API_TOKEN", "tok-XXXXSECRET-in-the-environment")
    with WebhookReceiver() as receiver:
        hook = _hook_url(receiver)
        first, second = _baseline_then_regression(tmp_path, sqlite_url, {"regression": {"alert_webhook": hook}})
        console = capfd.readouterr()

    [(path, _, body)] = receiver.requests
    assert path == HOOK_PATH and json.loads(body)["current_run_id"] == second.run_id  # the alert still works
    shown_hook = hook.removesuffix(HOOK_PATH) + "/***"
    assert second.config["regression"]["alert_webhook"] == shown_hook
    assert second.regression is not None
    assert (second.regression["alerts"]["webhook"], second.regression["alerts"]["webhook_status"]) == (shown_hook, 200)
    stored = _stored_runs(sqlite_url, [first.run_id, second.run_id])
    assert shown_hook in stored
    parameters, logs = _prefect_records([first.flow_run_id, second.flow_run_id])
    assert shown_hook in parameters
    assert "regression against run" in logs  # the alert's own log line reached Prefect
    shown, page = _shown_outputs(second.run_id, sqlite_url, tmp_path, capfd)
    leaks = {
        "store": stored,
        "report JSON": first.to_json() + second.to_json(),
        "show --json": shown,
        "HTML report": page,
        "stdout": console.out,
        "stderr": console.err,
        "Prefect parameters": parameters,
        "Prefect logs": logs,
    }
    assert [where for where, content in leaks.items() if SECRET in content or "/hooks/" in content] == []


def test_the_default_variable_is_recorded_by_name_and_a_failing_webhook_is_logged_redacted(
    tmp_path: Path, sqlite_url: str, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with WebhookReceiver(status=500) as receiver:
        monkeypatch.setenv(ALERT_WEBHOOK_ENV, _hook_url(receiver))
        first, second = _baseline_then_regression(tmp_path, sqlite_url, {})
        console = capfd.readouterr()

    assert [path for path, _, _ in receiver.requests] == [HOOK_PATH]
    assert second.regression is not None
    alerts = second.regression["alerts"]
    assert alerts["webhook"] == f"env:{ALERT_WEBHOOK_ENV}"
    host = receiver.url.removesuffix("/hook")
    assert alerts["webhook_error"].startswith(
        f"HTTPStatusError: Server error '500 Internal Server Error' for url '{host}/***'\n"
    )
    # Whether Prefect's console shows the error depends on logging settings that in-process CLI tests change;
    # what it shows is checked below: never the secret.
    stored = _stored_runs(sqlite_url, [first.run_id, second.run_id])
    parameters, logs = _prefect_records([first.flow_run_id, second.flow_run_id])
    assert f"the alert webhook env:{ALERT_WEBHOOK_ENV} failed" in logs
    shown, page = _shown_outputs(second.run_id, sqlite_url, tmp_path, capfd)
    places = [stored, second.to_json(), shown, page, console.out, console.err, parameters, logs]
    assert [i for i, content in enumerate(places) if SECRET in content or "/hooks/" in content] == []


def test_a_prefect_secret_block_is_loaded_when_the_alert_is_sent(tmp_path: Path, sqlite_url: str) -> None:
    block_name = f"agent-eval-test-hook-{uuid.uuid4().hex[:8]}"
    with WebhookReceiver() as receiver:
        Secret(value=_hook_url(receiver)).save(block_name)
        reference = f"prefect-secret:{block_name}"
        first, second = _baseline_then_regression(tmp_path, sqlite_url, {"regression": {"alert_webhook": reference}})

    assert [path for path, _, _ in receiver.requests] == [HOOK_PATH]
    assert second.regression is not None
    assert (second.regression["alerts"]["webhook"], second.regression["alerts"]["webhook_status"]) == (reference, 200)
    assert second.config["regression"]["alert_webhook"] == reference
    stored = _stored_runs(sqlite_url, [first.run_id, second.run_id])
    assert reference in stored and SECRET not in stored


def test_a_missing_prefect_secret_block_says_how_to_create_it() -> None:
    with pytest.raises(SecretUnavailableError) as raised:
        resolve_secret("prefect-secret:agent-eval-no-such-block", field="regression.alert_webhook")

    message = str(raised.value)
    assert message.startswith(
        "regression.alert_webhook: the Prefect Secret block 'agent-eval-no-such-block' could not be loaded ("
    )
    assert message.endswith("); create it with Secret(value=...).save(name)")
