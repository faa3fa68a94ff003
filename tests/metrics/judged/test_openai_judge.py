"""OpenAIJudge against the fake OpenAI-compatible server: json_schema structured output, the json_object
fallback, retries, lenient parsing and the request's shape."""

from __future__ import annotations

from typing import Any

import pytest

from agent_eval.metrics.judged.backends import shared_genai_client
from agent_eval.metrics.judged.base import JudgeSample
from agent_eval.metrics.judged.client import OpenAIJudge, close_judge_clients, make_judge
from agent_eval.metrics.judged.openai_backend import OpenAIBackend, strict_json_schema
from tests.fakes.gemini_server import FakeGeminiServer, text_reply
from tests.fakes.openai_server import FakeOpenAIServer, chat_reply, error_reply
from tests.metrics.judged.helpers import FAST, Verdict, make_request, run, verdict_json

MODEL = "openai:local-judge"


def judge_for(server: FakeOpenAIServer, **options: Any) -> OpenAIJudge:
    return OpenAIJudge(base_url=server.base_url, **{"retry": FAST, "cache": False, **options})


def test_structured_answer_with_json_schema_response_format(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script(chat_reply(verdict_json("invalid", "different city")))

    sample = run(judge_for(fake_openai).ask(make_request(model=MODEL)))

    assert sample.parsed == Verdict(label="invalid", rationale="different city")
    body = fake_openai.requests[0].body
    assert body["model"] == "local-judge"
    assert body["messages"] == [
        {"role": "system", "content": "Answer valid or invalid."},
        {"role": "user", "content": "Is 'Paris' the capital of France?"},
    ]
    json_schema = body["response_format"]["json_schema"]
    assert body["response_format"]["type"] == "json_schema"
    assert json_schema["name"] == "Verdict" and json_schema["strict"] is True
    assert json_schema["schema"]["required"] == ["label", "rationale"]
    assert json_schema["schema"]["additionalProperties"] is False
    assert "default" not in json_schema["schema"]["properties"]["rationale"]
    assert "authorization" not in fake_openai.requests[0].headers


def test_make_judge_reads_base_url_and_key_from_environment(
    fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url + "/")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    fake_openai.script(chat_reply(verdict_json()))
    judge = make_judge(MODEL, cache=False)

    sample = run(judge.ask(make_request(model=MODEL)))

    assert isinstance(judge, OpenAIJudge) and sample.usable
    assert fake_openai.requests[0].headers["authorization"] == "Bearer sk-test"
    assert judge.backend.identity == f"openai@{fake_openai.base_url}"


def test_backend_variable_sends_plain_model_names_to_the_openai_server(
    fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_EVAL_JUDGE_BACKEND", "openai")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    fake_openai.script(chat_reply(verdict_json()))

    sample = run(make_judge("qwen3-8b", cache=False).ask(make_request(model="qwen3-8b")))

    assert sample.usable and fake_openai.requests[0].body["model"] == "qwen3-8b"


def test_json_schema_rejected_falls_back_to_json_object_and_remembers(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script(
        error_reply(400, "response_format json_schema is not supported"),
        chat_reply(verdict_json()),
        chat_reply(verdict_json("invalid")),
    )
    judge = judge_for(fake_openai)

    first = run(judge.ask(make_request(model=MODEL)))
    second = run(judge.ask(make_request("Another question?", model=MODEL)))

    assert first.usable and second.usable
    formats = [request.body["response_format"]["type"] for request in fake_openai.requests]
    assert formats == ["json_schema", "json_object", "json_object"]
    system = fake_openai.requests[1].body["messages"][0]["content"]
    assert system.startswith("Answer valid or invalid.\n\nAnswer with one JSON object")
    assert '"label"' in system
    assert judge.stats.calls == 2 and judge.stats.retries == 0


def test_both_response_formats_rejected_reports_the_first_error(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script(error_reply(400, "unknown model 'x'"), error_reply(400, "still unknown"))
    judge = judge_for(fake_openai)

    sample = run(judge.ask(make_request(model=MODEL)))

    assert sample.error == "judge call rejected: 400: unknown model 'x'"
    assert len(fake_openai.requests) == 2
    assert isinstance(judge.backend, OpenAIBackend) and judge.backend.json_schema_supported


def test_rate_limit_is_retried(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script(error_reply(429, "slow down"), error_reply(503, "busy"), chat_reply(verdict_json()))
    judge = judge_for(fake_openai)

    sample = run(judge.ask(make_request(model=MODEL)))

    assert sample.usable and len(fake_openai.requests) == 3 and judge.stats.retries == 2


def test_server_error_on_every_attempt_is_an_error_sample(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script(*[error_reply(500, "boom")] * FAST.attempts)

    sample = run(judge_for(fake_openai).ask(make_request(model=MODEL)))

    assert sample.error == f"server error after {FAST.attempts} attempts: 500: boom"


@pytest.mark.parametrize(
    "answer",
    [
        f"```json\n{verdict_json()}\n```",
        f"Here is my verdict: {verdict_json()}",
        f"<think>The user asks about Paris.</think>\n{verdict_json()}",
    ],
)
def test_json_wrapped_in_prose_or_fences_is_parsed(fake_openai: FakeOpenAIServer, answer: str) -> None:
    fake_openai.script(chat_reply(answer))

    sample = run(judge_for(fake_openai).ask(make_request(model=MODEL)))

    assert sample.parsed == Verdict(label="valid", rationale="same meaning") and sample.raw_text == answer


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (chat_reply(None, refusal="I cannot judge this."), "judge refused: I cannot judge this."),
        (chat_reply(""), "empty judge answer"),
        ({"choices": []}, "malformed chat completion: "),
    ],
)
def test_answers_without_content_are_error_samples(
    fake_openai: FakeOpenAIServer, reply: dict[str, Any], error: str
) -> None:
    fake_openai.script(reply)

    sample = run(judge_for(fake_openai).ask(make_request(model=MODEL)))

    assert sample.error is not None and sample.error.startswith(error)
    assert len(fake_openai.requests) == 1


def test_generation_settings_are_translated(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script(chat_reply(verdict_json()))
    config = {"temperature": 0.0, "maxOutputTokens": 64, "stop_sequences": ["END"], "seed": 7}

    run(judge_for(fake_openai).ask(make_request(model=MODEL, config=config)))

    body = fake_openai.requests[0].body
    assert (body["temperature"], body["max_tokens"], body["stop"], body["seed"]) == (0.0, 64, ["END"], 7)


def test_answers_are_cached_per_server(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script(chat_reply(verdict_json()))

    first = run(judge_for(fake_openai, cache=True).ask(make_request(model=MODEL)))
    second = run(judge_for(fake_openai, cache=True).ask(make_request(model=MODEL)))
    elsewhere = run(OpenAIJudge(base_url="http://127.0.0.1:9/v1", retry=FAST).ask(make_request(model=MODEL)))

    assert not first.cached and second.cached and len(fake_openai.requests) == 1
    assert elsewhere.error is not None and elsewhere.error.startswith("connection failed after 4 attempts")


def test_strict_schema_closes_nested_objects_and_keeps_property_names() -> None:
    schema = {
        "type": "object",
        "properties": {"default": {"type": "string", "default": "x"}, "items": {"$ref": "#/$defs/Item"}},
        "$defs": {"Item": {"type": "object", "properties": {"ok": {"type": "boolean"}}}},
    }

    strict = strict_json_schema(schema)

    assert strict["required"] == ["default", "items"] and strict["additionalProperties"] is False
    assert strict["properties"]["default"] == {"type": "string"}
    assert strict["$defs"]["Item"]["required"] == ["ok"]
    assert strict["$defs"]["Item"]["additionalProperties"] is False


def test_closing_the_shared_clients_releases_them_and_judges_still_work(
    fake_openai: FakeOpenAIServer, fake_gemini: FakeGeminiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("GOOGLE_API_KEY", "k")
    monkeypatch.setenv("AGENT_EVAL_GEMINI_BASE_URL", fake_gemini.base_url)
    fake_openai.script(chat_reply(verdict_json()), chat_reply(verdict_json()))
    fake_gemini.script(text_reply(verdict_json()))

    async def ask_close_ask() -> list[JudgeSample]:
        samples = [await make_judge(MODEL, cache=False).ask(make_request(model=MODEL))]
        samples.append(await make_judge("gemini-2.5-flash", cache=False).ask(make_request()))
        before = shared_genai_client()
        await close_judge_clients()
        assert shared_genai_client() is not before
        samples.append(await make_judge(MODEL, cache=False).ask(make_request(model=MODEL)))
        await close_judge_clients()
        return samples

    samples = run(ask_close_ask())

    assert [sample.usable for sample in samples] == [True, True, True]
