"""Regression alerts: a Prefect event `agent-eval.regression`, and a JSON POST to a webhook.

The event's resource is `agent-eval.<eval_set_id>` (the first eval set of the run; all of them are in the
payload); inside a flow run Prefect links it to that run, and `deployments/automations.yaml` turns it into a
notification. The webhook (`alert_webhook` in the config's `regression` section, or `$AGENT_EVAL_ALERT_WEBHOOK`)
gets the same payload plus `text`, a Slack-compatible message, so a Slack incoming webhook works as is.

`setup_alerts` (the body of `deployments/setup_alerts.py`) wires the Prefect side from nothing: a
`CustomWebhookNotificationBlock` that POSTs `{"text", "subject", "body"}` to a URL, and the automations of
`deployments/automations.yaml` with that block's id in place of `${AGENT_EVAL_ALERT_BLOCK_ID}`, each created or,
when one of the same name exists, updated in place.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import UUID

import httpx

from agent_eval.compare.regression import RegressionReport
from agent_eval.secrets import ENV_PREFIX, redact_url, register_secret, resolve_secret, shown_reference
from agent_eval.settings import settings

if TYPE_CHECKING:
    from prefect.blocks.notifications import CustomWebhookNotificationBlock

__all__ = [
    "ALERT_BLOCK_ID_ENV",
    "ALERT_WEBHOOK_ENV",
    "DEFAULT_BLOCK_NAME",
    "DEFAULT_WEBHOOK_REFERENCE",
    "OUTAGE_EVENT",
    "REGRESSION_EVENT",
    "AlertSetup",
    "alert_payload",
    "emit_regression_event",
    "outage_payload",
    "post_webhook",
    "resolve_automations",
    "setup_alerts",
    "webhook_block",
    "webhook_reference",
]

REGRESSION_EVENT = "agent-eval.regression"
OUTAGE_EVENT = "agent-eval.outage"
"""Emitted (and POSTed to the webhook) when a run could not reach its agent: "could not evaluate"."""
ALERT_WEBHOOK_ENV = "AGENT_EVAL_ALERT_WEBHOOK"
DEFAULT_WEBHOOK_REFERENCE = ENV_PREFIX + ALERT_WEBHOOK_ENV
"""What is recorded as the webhook when the config names none."""
_WEBHOOK_FIELD = "regression.alert_webhook"
ALERT_BLOCK_ID_ENV = "AGENT_EVAL_ALERT_BLOCK_ID"
"""The variable `deployments/automations.yaml` names as `${AGENT_EVAL_ALERT_BLOCK_ID}` (for `envsubst`)."""
DEFAULT_BLOCK_NAME = "agent-eval-alerts"
_SEND_NOTIFICATION = "send-notification"
_ACTION_LISTS = ("actions", "actions_on_trigger", "actions_on_resolve")


def alert_payload(comparison: RegressionReport, eval_set_ids: list[str], run_url: str | None) -> dict[str, Any]:
    """The comparison's payload, with the eval sets, the run's URL (when known) and a Slack-ready `text`.

    Args:
        comparison: the run's comparison with its baseline.
        eval_set_ids: the run's eval sets; the first one names the event's resource.
        run_url: a link to the run (e.g. the flow run in the Prefect UI), or None.

    Returns:
        `comparison.to_payload()` plus `eval_set_ids`, `run_url` and `text`.
    """
    payload = comparison.to_payload()
    payload["eval_set_ids"] = eval_set_ids
    payload["run_url"] = run_url
    where = f" (<{run_url}|flow run>)" if run_url else ""
    payload["text"] = (
        f":rotating_light: agent-eval regression in {', '.join(eval_set_ids)}{where}\n" + payload["summary"]
    )
    return payload


def outage_payload(run_id: str, eval_set_ids: list[str], error: str, run_url: str | None) -> dict[str, Any]:
    """The alert of an errored run: a Slack-compatible `text`, the cause in `summary`."""
    return {
        "text": f"agent-eval {', '.join(eval_set_ids)}: {error}",
        "summary": error,
        "status": "errored",
        "current_run_id": run_id,
        "eval_set_ids": eval_set_ids,
        "run_url": run_url,
    }


def emit_regression_event(payload: dict[str, Any], event_name: str = REGRESSION_EVENT) -> str | None:
    """Emit `agent-eval.regression` (or `event_name`, e.g. `OUTAGE_EVENT`) for the run's first eval set.

    Args:
        payload: the event's payload, as `alert_payload` (or `outage_payload`) makes it.
        event_name: the event to emit.

    Returns:
        The event's id, or None when Prefect did not send it (e.g. events are disabled).
    """
    from prefect.events import emit_event

    eval_set_id = (payload.get("eval_set_ids") or ["unknown"])[0]
    event = emit_event(
        event=event_name,
        resource={"prefect.resource.id": f"agent-eval.{eval_set_id}", "prefect.resource.name": eval_set_id},
        payload=payload,
    )
    return str(event.id) if event is not None else None


def post_webhook(payload: dict[str, Any], url: str | None = None, *, timeout: float = 10.0) -> int | None:
    """POST the payload as JSON to a webhook.

    Args:
        payload: the JSON body, as `alert_payload` makes it.
        url: the webhook as `regression.alert_webhook` gives it: `env:NAME`, `${NAME}`, `prefect-secret:BLOCK`
            (read now) or a literal URL; default `$AGENT_EVAL_ALERT_WEBHOOK`.
        timeout: seconds to wait for the webhook.

    Returns:
        The HTTP status, or None when no webhook is set (then nothing is sent).

    Raises:
        SecretUnavailableError: `url` names a variable or block that gives nothing, or is a redacted literal.
        EvalInputError: with no `url`, an `AGENT_EVAL_*` variable is not valid, e.g. `AGENT_EVAL_ALERT_WEBHOOK`
            is no http(s) URL (`agent_eval.settings.settings`; the webhook is shown as `'***'`).
        httpx.HTTPError: the webhook could not be reached or answered with an error status, for the caller to
            record; its message may hold the URL: show it through `agent_eval.secrets.redact_text`.
    """
    target = _webhook_url(url)
    if not target:
        return None
    response = httpx.post(target, json=payload, timeout=timeout)
    response.raise_for_status()
    return response.status_code


def webhook_reference(url: str | None) -> str:
    """What may be stored or shown of a webhook setting: its reference, `env:AGENT_EVAL_ALERT_WEBHOOK` for the
    default, or a literal URL redacted (`https://hooks.slack.com/***`)."""
    return shown_reference(url) if url else DEFAULT_WEBHOOK_REFERENCE


def _webhook_url(url: str | None) -> str | None:
    """The URL to POST to, read from where the setting says (the default variable may be unset: no webhook).

    Raises:
        EvalInputError: with no `url`, an `AGENT_EVAL_*` variable is not valid (`agent_eval.settings.settings`).
    """
    if url:
        return resolve_secret(url, field=_WEBHOOK_FIELD)
    default = settings().alert_webhook
    if default is None:
        return None
    register_secret(default.get_secret_value())
    return default.get_secret_value()


# ------------------------------------------------------------------------------------------- Prefect setup
@dataclass(frozen=True)
class AlertSetup:
    """What `setup_alerts` did: the notification block's id and each automation's id, created or updated."""

    block_document_id: UUID
    created: dict[str, UUID]
    updated: dict[str, UUID]
    removed_duplicates: int = 0


def webhook_block(url: str, name: str = DEFAULT_BLOCK_NAME) -> CustomWebhookNotificationBlock:
    """A `CustomWebhookNotificationBlock` that POSTs `{"text", "subject", "body"}` as JSON to `url`.

    `text` is `subject` and `body` on two lines, which is what a Slack incoming webhook shows; `subject` and
    `body` are there separately for other receivers. The URL is kept in the block's secrets (a Slack hook's URL is
    a credential), so the UI shows it obfuscated.

    Args:
        url: the webhook's URL (http or https; localhost is allowed), or a reference to it (`env:NAME`,
            `${NAME}`, `prefect-secret:BLOCK`), read now.
        name: the name the block reports as `{{name}}`; `setup_alerts` also saves the block under it.

    Returns:
        The (unsaved) block.

    Raises:
        ValueError: the URL is not http(s), or the reference gives no URL (`SecretUnavailableError`).
    """
    from prefect.blocks.notifications import CustomWebhookNotificationBlock

    url = resolve_secret(url, field="the webhook")
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"the webhook URL must start with http:// or https://, got {redact_url(url)!r}")
    return CustomWebhookNotificationBlock(
        name=name,
        url="{{webhook_url}}",
        method="POST",
        json_data={"text": "{{subject}}\n{{body}}", "subject": "{{subject}}", "body": "{{body}}"},
        secrets={"webhook_url": url},
    )


def resolve_automations(path: Path, block_document_id: UUID | str) -> list[dict[str, Any]]:
    """Read an automations file and set the block of every send-notification action.

    The file is what `prefect automation create --from-file` takes: an `automations:` list, a list, or one
    automation. Each `send-notification` action (in `actions`, `actions_on_trigger` and `actions_on_resolve`)
    gets `block_document_id`, whatever it held (normally the `${AGENT_EVAL_ALERT_BLOCK_ID}` placeholder).

    Args:
        path: a YAML or JSON automations file.
        block_document_id: the notification block's id.

    Returns:
        The automations, as dicts ready for `AutomationCore.model_validate`.

    Raises:
        ValueError: the file holds no automation, or an automation has no send-notification action.
    """
    import yaml  # type: ignore[import-untyped]  # PyYAML, a Prefect dependency; no stubs installed

    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if isinstance(data, dict) and "automations" in data:
        data = data["automations"]
    automations: list[dict[str, Any]] = data if isinstance(data, list) else [data] if isinstance(data, dict) else []
    if not automations:
        raise ValueError(f"{path} holds no automation")
    for automation in automations:
        actions = list(_notification_actions(automation))
        if not actions:
            raise ValueError(f"automation {automation.get('name')!r} in {path} has no send-notification action")
        for action in actions:
            action["block_document_id"] = str(block_document_id)
    return automations


def _notification_actions(automation: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for key in _ACTION_LISTS:
        for action in automation.get(key) or []:
            if isinstance(action, dict) and action.get("type") == _SEND_NOTIFICATION:
                yield action


def setup_alerts(webhook_url: str, automations_file: Path, block_name: str = DEFAULT_BLOCK_NAME) -> AlertSetup:
    """Create or update the notification block and the file's automations on the Prefect API in use.

    Idempotent: the block is saved with `overwrite=True` (same name, same id); an automation whose name exists is
    updated in place (the most recently updated one; further ones of that name are deleted), otherwise created.

    Args:
        webhook_url: where the notifications go: the URL, or `env:NAME` / `${NAME}` / `prefect-secret:BLOCK`.
        automations_file: e.g. `deployments/automations.yaml`.
        block_name: the notification block's name.

    Returns:
        The block's id and the automations created and updated, by name.

    Raises:
        ValueError: a bad URL or automations file (nothing is saved for a bad file).
        pydantic.ValidationError: an automation Prefect does not accept.
    """
    from prefect.client.orchestration import get_client
    from prefect.events.schemas.automations import AutomationCore

    placeholder = "00000000-0000-0000-0000-000000000000"  # validate the file before saving anything
    for data in resolve_automations(automations_file, placeholder):
        AutomationCore.model_validate(data)
    block_id = webhook_block(webhook_url, block_name).save(block_name, overwrite=True)
    if not isinstance(block_id, UUID):  # `save` returns a coroutine when called from a running event loop
        raise TypeError("setup_alerts is synchronous: call it outside an event loop")
    automations = [AutomationCore.model_validate(d) for d in resolve_automations(automations_file, block_id)]
    created: dict[str, UUID] = {}
    updated: dict[str, UUID] = {}
    removed = 0
    with get_client(sync_client=True) as client:
        for automation in automations:
            existing = client.read_automations_by_name(automation.name)
            if not existing:
                created[automation.name] = client.create_automation(automation)
                continue
            keep, *duplicates = existing  # newest first
            client.update_automation(keep.id, automation)
            updated[automation.name] = keep.id
            for duplicate in duplicates:
                client.delete_automation(duplicate.id)
                removed += 1
    return AlertSetup(block_document_id=block_id, created=created, updated=updated, removed_duplicates=removed)
