"""Secrets are never stored nor printed: the redaction rules with exact outputs, references resolved when used,
and every object that leaves the process (flow parameters, reports, alert records, judge errors) redacted."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from agent_eval.compare.alerts import ALERT_WEBHOOK_ENV, post_webhook, webhook_block, webhook_reference
from agent_eval.metrics.judged.backends import JudgeCallError, TransientJudgeError
from agent_eval.plan.eval_plan import EvalRequest
from agent_eval.results.model import RunReport
from agent_eval.secrets import (
    SecretUnavailableError,
    is_reference,
    redact_config,
    redact_text,
    redact_url,
    redact_url_credentials,
    register_secret,
    resolve_secret,
    shown_reference,
)
from tests.compare.test_alerts import WebhookReceiver
from tests.render.builders import sample_report

SLACK = "https://hooks.slack.com/services/T000/B000/XXXXSECRET"
GEMINI_KEY = "AIzaSyA1234567890abcdefghijklmnopqrstu"
OPENAI_KEY = "sk-proj-abcdefghijklmnop1234"


# ------------------------------------------------------------------------------------------------------ URLs
@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (SLACK, "https://hooks.slack.com/***"),
        ("https://user:pw@host:8443/p?q=1#f", "https://***@host:8443/***"),
        ("https://ghp_token@github.com", "https://***@github.com"),
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000"),
        ("http://127.0.0.1:8000/", "http://127.0.0.1:8000"),
        ("http://host?key=abc", "http://host/***"),
        ("postgresql://app:p/w@d@db:5432/evals", "postgresql://***@db:5432/***"),
        ("hooks.slack.com/services/T0/B0/x", "hooks.slack.com/***"),
        ("https://hooks.slack.com/***", "https://hooks.slack.com/***"),
        ("", ""),
    ],
)
def test_redact_url_keeps_only_the_scheme_host_and_port(url: str, expected: str) -> None:
    assert redact_url(url) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql://app:pw@db:5432/evals", "postgresql://app:***@db:5432/evals"),
        ("postgresql://app:p/w@d@db:5432/evals", "postgresql://app:***@db:5432/evals"),
        ("https://ghp_token@github.com/o/r", "https://***@github.com/o/r"),
        (
            f"https://h/v1beta/models/m:generateContent?key={GEMINI_KEY}&alt=json",
            "https://h/v1beta/models/m:generateContent?key=***&alt=json",
        ),
        ("sqlite:////tmp/store.db", "sqlite:////tmp/store.db"),
        ("http://127.0.0.1:8000/", "http://127.0.0.1:8000/"),
    ],
)
def test_redact_url_credentials_keeps_the_path(url: str, expected: str) -> None:
    assert redact_url_credentials(url) == expected


# ------------------------------------------------------------------------------------------------------ text
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Client error '404 Not Found' for url 'http://127.0.0.1:5555/hooks/T000/B000/XXXXSECRET'\n"
            "For more information check: https://developer.mozilla.org/en-US/docs/Web/HTTP/Status/404.",
            "Client error '404 Not Found' for url 'http://127.0.0.1:5555/***'\n"
            "For more information check: https://developer.mozilla.org/***.",
        ),
        ("Authorization: Bearer abc.def-ghi==", "Authorization: Bearer ***"),
        (f"x-goog-api-key: {GEMINI_KEY}, then", "x-goog-api-key: ***, then"),
        (f"api_key={OPENAI_KEY}&x=1 access_token=abc", "api_key=***&x=1 access_token=***"),
        ("{'api_key': 'zzz', \"token\": \"t\"}", "{'api_key': '***', \"token\": \"***\"}"),
        (f"bad key {GEMINI_KEY} or {OPENAI_KEY}", "bad key AIza*** or sk-***"),
        ("xoxb-1234567890-abcdef ghp_abcdefghijklmnopqrstuvwxyz12", "xoxb-*** ghp_***"),
        ("KeyError: 'foo'; max_tokens=5; env:HOOK", "KeyError: 'foo'; max_tokens=5; env:HOOK"),
    ],
)
def test_redact_text_finds_urls_tokens_and_keys(text: str, expected: str) -> None:
    assert redact_text(text) == expected


def test_redact_text_hides_secret_environment_values_and_resolved_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-1234-XXXXSECRET")
    monkeypatch.setenv("MY_SERVICE_MODE", "production-mode")  # not secret-named: kept
    register_secret("literal-XXXXOTHER")

    text = "sent tok-1234-XXXXSECRET in production-mode, then literal-XXXXOTHER"

    assert redact_text(text) == "sent *** in production-mode, then ***"


def test_text_without_secrets_is_unchanged() -> None:
    text = "case home/alpha failed: ValueError: no lamp called 'kitchen' (2 of 3 runs)"

    assert redact_text(text) == text


# --------------------------------------------------------------------------------------------------- configs
def test_redact_config_redacts_every_secret_bearing_field_and_keeps_references() -> None:
    config = {
        "criteria": {
            "response_match_score": 0.8,
            "rubric_based_final_response_quality_v1": {
                "threshold": 0.5,
                "judge_model_options": {"judge_model": "gemini-2.5-flash", "max_tokens": 256},
                "rubrics": [{"rubric_id": "r", "rubric_content": {"text_property": "cites https://example.com/doc"}}],
            },
        },
        "regression": {"tolerance": 0.05, "alertWebhook": SLACK},
        "user_simulator_config": {
            "model": "gemini-2.5-flash",
            "api_key": GEMINI_KEY,
            "access_token": "env:SIMULATOR_TOKEN",
            "password": "${SIMULATOR_PASSWORD}",
            "secrets": {"a": "b", "n": 3},
            "endpoint": "https://user:pw@sim.example.com/v1?token=abc&q=1",
            "note": f"uses {GEMINI_KEY}",
        },
    }

    redacted = redact_config(config)

    assert redacted == {
        "criteria": {
            "response_match_score": 0.8,
            "rubric_based_final_response_quality_v1": {
                "threshold": 0.5,
                "judge_model_options": {"judge_model": "gemini-2.5-flash", "max_tokens": 256},
                "rubrics": [{"rubric_id": "r", "rubric_content": {"text_property": "cites https://example.com/doc"}}],
            },
        },
        "regression": {"tolerance": 0.05, "alertWebhook": "https://hooks.slack.com/***"},
        "user_simulator_config": {
            "model": "gemini-2.5-flash",
            "api_key": "***",
            "access_token": "env:SIMULATOR_TOKEN",
            "password": "${SIMULATOR_PASSWORD}",
            "secrets": {"a": "***", "n": 3},
            "endpoint": "https://user:***@sim.example.com/v1?token=***&q=1",
            "note": "uses AIza***",
        },
    }
    assert redact_config(redacted) == redacted  # redacting twice changes nothing more
    assert config["regression"] == {"tolerance": 0.05, "alertWebhook": SLACK}  # the input is left as it was


def test_references_are_kept_as_they_are_and_literals_shown_redacted() -> None:
    assert [is_reference(v) for v in ("env:HOOK", "${HOOK}", "prefect-secret:hook", SLACK, "env:", "$HOOK")] == [
        True,
        True,
        True,
        False,
        False,
        False,
    ]
    assert shown_reference("env:HOOK") == "env:HOOK"
    assert shown_reference("prefect-secret:hook") == "prefect-secret:hook"
    assert shown_reference(SLACK) == "https://hooks.slack.com/***"


# ------------------------------------------------------------------------------------------------ references
def test_references_resolve_from_the_environment_and_literals_as_they_are(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_HOOK", "http://127.0.0.1:9/hooks/XXXXSECRET")

    assert resolve_secret("env:MY_HOOK", field="f") == "http://127.0.0.1:9/hooks/XXXXSECRET"
    assert resolve_secret("${MY_HOOK}", field="f") == "http://127.0.0.1:9/hooks/XXXXSECRET"
    assert resolve_secret(SLACK, field="f") == SLACK


def test_an_unset_variable_or_a_redacted_literal_cannot_be_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MY_MISSING_HOOK", raising=False)

    with pytest.raises(SecretUnavailableError) as unset:
        resolve_secret("env:MY_MISSING_HOOK", field="regression.alert_webhook")
    with pytest.raises(SecretUnavailableError) as redacted:
        resolve_secret("https://hooks.slack.com/***", field="regression.alert_webhook")

    assert (
        str(unset.value) == "regression.alert_webhook: the environment variable 'MY_MISSING_HOOK' it names is not set"
    )
    assert str(redacted.value) == (
        "regression.alert_webhook is 'https://hooks.slack.com/***', a redacted literal (a secret is never stored): "
        "give it as env:NAME or prefect-secret:BLOCK"
    )


# ------------------------------------------------------------------------------------ what leaves the process
def test_the_flow_parameters_prefect_stores_hold_no_secret_and_the_request_keeps_them() -> None:
    from agent_eval.flows import agent_eval_flow

    request = EvalRequest(
        paths=["x.evalset.json"],
        config={"criteria": {"response_match_score": 0.8}, "regression": {"alert_webhook": SLACK}},
        db_url="postgresql://app:XXXXDBPASSWORD@127.0.0.1:5432/evals",
    )

    parameters = agent_eval_flow.serialize_parameters({"request": request})  # what Prefect sends to its API

    assert parameters["request"]["config"] == {
        "criteria": {"response_match_score": 0.8},
        "regression": {"alert_webhook": "https://hooks.slack.com/***"},
    }
    assert parameters["request"]["db_url"] == "postgresql://app:***@127.0.0.1:5432/evals"
    assert "XXXXSECRET" not in json.dumps(parameters) and "XXXXDBPASSWORD" not in json.dumps(parameters)
    assert request.config == {"criteria": {"response_match_score": 0.8}, "regression": {"alert_webhook": SLACK}}
    assert request.db_url == "postgresql://app:XXXXDBPASSWORD@127.0.0.1:5432/evals"


def test_a_report_holds_its_config_redacted_however_it_is_made() -> None:
    data: dict[str, Any] = sample_report().model_dump(mode="json")
    data["config"] = {"criteria": {"response_match_score": 0.8}, "regression": {"alert_webhook": SLACK}}

    data["regression"] = {
        "regressed": True,
        "alerts": {"event_id": None, "webhook_error": f"HTTPStatusError: Server error '500' for url '{SLACK}'"},
    }

    report = RunReport.model_validate(data)  # e.g. read back from a run stored before redaction

    assert report.config["regression"] == {"alert_webhook": "https://hooks.slack.com/***"}
    assert report.regression == {
        "regressed": True,
        "alerts": {
            "event_id": None,
            "webhook_error": "HTTPStatusError: Server error '500' for url 'https://hooks.slack.com/***'",
        },
    }
    assert "XXXXSECRET" not in report.to_json()


def test_post_webhook_reads_a_reference_when_it_sends(monkeypatch: pytest.MonkeyPatch) -> None:
    with WebhookReceiver() as receiver:
        monkeypatch.setenv("MY_TEAM_HOOK", receiver.url)
        assert post_webhook({"text": "hi"}, "env:MY_TEAM_HOOK") == 200
        assert post_webhook({"text": "again"}, "${MY_TEAM_HOOK}") == 200

    assert [json.loads(body) for body in receiver.bodies()] == [{"text": "hi"}, {"text": "again"}]


def test_the_webhook_is_recorded_by_its_reference() -> None:
    assert webhook_reference(None) == f"env:{ALERT_WEBHOOK_ENV}"
    assert webhook_reference("env:MY_TEAM_HOOK") == "env:MY_TEAM_HOOK"
    assert webhook_reference("prefect-secret:team-hook") == "prefect-secret:team-hook"
    assert webhook_reference(SLACK) == "https://hooks.slack.com/***"


def test_a_webhook_that_is_not_http_is_rejected_without_showing_it() -> None:
    with pytest.raises(ValueError) as raised:
        webhook_block("hooks.slack.com/services/T000/B000/XXXXSECRET")

    assert str(raised.value) == "the webhook URL must start with http:// or https://, got 'hooks.slack.com/***'"


def test_judge_errors_never_carry_a_key() -> None:
    request = httpx.Request("POST", f"https://generativelanguage.googleapis.com/v1beta/models/m?key={GEMINI_KEY}")
    transport = httpx.ConnectError("connection refused", request=request)

    transient = TransientJudgeError("connection failed", f"ConnectError: {transport} ({request.url})")
    rejected = JudgeCallError(f"judge call rejected: 401: Incorrect API key provided: {OPENAI_KEY}", status=401)

    assert str(transient) == (
        "connection failed: ConnectError: connection refused (https://generativelanguage.googleapis.com/***)"
    )
    assert transient.detail == "ConnectError: connection refused (https://generativelanguage.googleapis.com/***)"
    assert str(rejected) == "judge call rejected: 401: Incorrect API key provided: sk-***"
