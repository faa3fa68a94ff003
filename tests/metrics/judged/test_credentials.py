"""Backend choice from the environment and the one-line credentials check made before a run."""

from __future__ import annotations

import pytest

from agent_eval.errors import EvalInputError
from agent_eval.metrics.judged.client import GenaiJudge, OpenAIJudge, make_judge
from agent_eval.metrics.judged.credentials import (
    DEFAULT_CONCURRENCY,
    JUDGE_CREDENTIALS_HELP,
    check_judge_credentials,
    judge_backend,
    judge_concurrency,
)

HELP = (
    "set GOOGLE_API_KEY (or GEMINI_API_KEY), or GOOGLE_GENAI_USE_VERTEXAI=true with GOOGLE_CLOUD_PROJECT and "
    "GOOGLE_CLOUD_LOCATION, or use an openai:<model> judge with OPENAI_BASE_URL"
)


def test_missing_google_credentials_name_every_way_to_set_them() -> None:
    with pytest.raises(EvalInputError) as caught:
        check_judge_credentials("gemini-2.5-flash")

    message = str(caught.value)
    assert message == f"field 'judge_model': judge model 'gemini-2.5-flash' needs credentials: {HELP}"
    assert "\n" not in message and JUDGE_CREDENTIALS_HELP == HELP


@pytest.mark.parametrize(
    ("variables", "backend"),
    [
        ({"GOOGLE_API_KEY": "k"}, "gemini"),
        ({"GEMINI_API_KEY": "k"}, "gemini"),
        (
            {"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "us-central1"},
            "vertex",
        ),
        ({"GOOGLE_GENAI_USE_VERTEXAI": "1", "GOOGLE_API_KEY": "express-mode-key"}, "vertex"),
    ],
)
def test_google_credentials_are_accepted(
    monkeypatch: pytest.MonkeyPatch, variables: dict[str, str], backend: str
) -> None:
    for name, value in variables.items():
        monkeypatch.setenv(name, value)

    check_judge_credentials("gemini-2.5-flash")

    assert judge_backend("gemini-2.5-flash") == backend
    assert GenaiJudge().backend.identity == backend


def test_vertex_without_location_is_missing_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "p")

    with pytest.raises(EvalInputError, match="GOOGLE_CLOUD_LOCATION"):
        check_judge_credentials("gemini-2.5-flash")


def test_openai_judge_needs_no_key_and_defaults_to_a_local_server() -> None:
    check_judge_credentials("openai:gpt-4o-mini")

    judge = make_judge("openai:gpt-4o-mini")

    assert isinstance(judge, OpenAIJudge) and judge.backend.identity == "openai@http://127.0.0.1:8000/v1"


@pytest.mark.parametrize(
    ("model", "base_url", "message"),
    [
        ("openai:", None, "field 'judge_model': judge model 'openai:' names no model after 'openai:'"),
        ("openai:m", "localhost:8000", "OPENAI_BASE_URL='localhost:8000' is not an http(s) URL"),
        ("   ", None, "field 'judge_model': the judge model is empty; set GOOGLE_API_KEY"),
    ],
)
def test_bad_openai_settings_are_reported_in_one_line(
    monkeypatch: pytest.MonkeyPatch, model: str, base_url: str | None, message: str
) -> None:
    if base_url is not None:
        monkeypatch.setenv("OPENAI_BASE_URL", base_url)

    with pytest.raises(EvalInputError) as caught:
        check_judge_credentials(model)

    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


def test_unknown_backend_variable_names_the_choices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_EVAL_JUDGE_BACKEND", "anthropic")

    with pytest.raises(EvalInputError) as raised:
        make_judge("gemini-2.5-flash")
    assert str(raised.value) == "AGENT_EVAL_JUDGE_BACKEND='anthropic' is not valid: one of 'google', 'openai'"


def test_google_backend_variable_keeps_gemini_models_on_google(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_EVAL_JUDGE_BACKEND", "google")

    assert judge_backend("gemini-2.5-flash") == "gemini"
    assert isinstance(make_judge("gemini-2.5-flash"), GenaiJudge)


def test_the_judge_ceiling_defaults_to_64_and_follows_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    assert judge_concurrency() == DEFAULT_CONCURRENCY == 64  # the conftest unsets the variable
    monkeypatch.setenv("AGENT_EVAL_JUDGE_CONCURRENCY", "8")
    assert judge_concurrency() == 8


def test_bad_concurrency_is_part_of_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "k")
    monkeypatch.setenv("AGENT_EVAL_JUDGE_CONCURRENCY", "zero")

    with pytest.raises(EvalInputError) as raised:
        check_judge_credentials("gemini-2.5-flash")
    assert str(raised.value) == "AGENT_EVAL_JUDGE_CONCURRENCY='zero' is not valid: a whole number of at least 1"
