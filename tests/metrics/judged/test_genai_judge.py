"""GenaiJudge through the real google-genai client against the fake Gemini server: structured output,
unparseable answers, retries, timeouts and the errors that are not retried."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from google import genai
from google.genai import types

from agent_eval.metrics.judged.backends import shared_genai_client
from agent_eval.metrics.judged.client import GenaiJudge, make_judge
from agent_eval.metrics.judged.policy import RetryPolicy
from tests.fakes.gemini_server import FakeGeminiServer, error_reply, slow, text_reply
from tests.metrics.judged.helpers import FAST, Verdict, make_request, run, verdict_json


def judge_for(server: FakeGeminiServer, **options: Any) -> GenaiJudge:
    """A judge on the fake server, fast retries, no cache (the cache has its own tests)."""
    return GenaiJudge(server.client, **{"retry": FAST, "cache": False, **options})


def blocked_reply() -> dict[str, Any]:
    """A 200 answer without candidates: the prompt was blocked."""
    return {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 3}}


def test_structured_answer_is_parsed_and_request_asks_for_json(fake_gemini: FakeGeminiServer) -> None:
    fake_gemini.script(text_reply(verdict_json("invalid", "different city")))
    judge = judge_for(fake_gemini)

    sample = run(judge.ask(make_request(config={"temperature": 0.0})))

    assert sample.parsed == Verdict(label="invalid", rationale="different city")
    assert sample.usable and sample.error is None and not sample.cached
    (request,) = fake_gemini.requests
    assert request.model == "gemini-2.5-flash"
    assert request.system_instruction == "Answer valid or invalid."
    assert request.contents == [{"parts": [{"text": "Is 'Paris' the capital of France?"}], "role": "user"}]
    generation = request.body["generationConfig"]
    assert generation["responseMimeType"] == "application/json"
    assert generation["responseSchema"]["properties"]["label"]["enum"] == ["valid", "invalid"]
    assert generation["temperature"] == 0.0
    assert judge.stats.as_dict() == {
        "samples": 1,
        "calls": 1,
        "cache_hits": 0,
        "retries": 0,
        "errors": 0,
        "rate_limited": 0,
        "lost": 0,
        "concurrency": 16,
        "concurrency_max": 1,
    }


def test_make_judge_reads_key_and_base_url_from_environment(
    fake_gemini: FakeGeminiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "key-from-env")
    monkeypatch.setenv("AGENT_EVAL_GEMINI_BASE_URL", fake_gemini.base_url)
    fake_gemini.script(text_reply(verdict_json()))
    judge = make_judge("gemini-2.5-flash", cache=False)

    sample = run(judge.ask(make_request()))

    assert isinstance(judge, GenaiJudge) and judge.backend.identity == f"gemini@{fake_gemini.base_url}"
    assert sample.parsed == Verdict(label="valid", rationale="same meaning")
    assert fake_gemini.requests[0].headers["x-goog-api-key"] == "key-from-env"


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ('{"label": "valid", "rationale": "ok"', "unparseable: not a Verdict (Invalid JSON"),
        ('{"label": "maybe"}', "unparseable: not a Verdict (label: Input should be 'valid' or 'invalid')"),
        ("I think it is valid.", "unparseable: not a Verdict (Invalid JSON"),
    ],
)
def test_unparseable_answer_is_an_error_sample_keeping_the_raw_text(
    fake_gemini: FakeGeminiServer, answer: str, expected: str
) -> None:
    fake_gemini.script(text_reply(answer))
    judge = judge_for(fake_gemini)

    sample = run(judge.ask(make_request()))

    assert sample.parsed is None and not sample.usable
    assert sample.error is not None and sample.error.startswith(expected)
    assert sample.raw_text == answer
    assert judge.stats.errors == 1 and judge.stats.retries == 0


def test_blocked_prompt_is_an_error_sample_without_retry(fake_gemini: FakeGeminiServer) -> None:
    fake_gemini.script(blocked_reply())

    sample = run(judge_for(fake_gemini).ask(make_request()))

    assert sample.error == "judge prompt blocked: SAFETY"
    assert len(fake_gemini.requests) == 1


def test_rate_limited_twice_then_answered_gives_one_sample_after_three_requests(
    fake_gemini: FakeGeminiServer,
) -> None:
    fake_gemini.script(error_reply(429, "quota"), error_reply(429, "quota"), text_reply(verdict_json()))
    judge = judge_for(fake_gemini)

    sample = run(judge.ask(make_request()))

    assert sample.usable and sample.parsed == Verdict(label="valid", rationale="same meaning")
    assert len(fake_gemini.requests) == 3
    # rate-limited retries spend no attempt; each refusal of the only call in flight halved the limit: 16, 8, 4
    counts = {"samples": 1, "calls": 3, "cache_hits": 0, "retries": 2, "errors": 0, "rate_limited": 2, "lost": 0}
    assert judge.stats.as_dict() == {**counts, "concurrency": 4, "concurrency_max": 1}


@pytest.mark.parametrize(
    ("status", "reason"), [(500, "server error"), (408, "timed out")]
)  # 429, 503: test_rate_limits
def test_retryable_status_on_every_attempt_is_an_error_sample(
    fake_gemini: FakeGeminiServer, status: int, reason: str
) -> None:
    fake_gemini.script(*[error_reply(status, "try later")] * FAST.attempts)
    judge = judge_for(fake_gemini)

    sample = run(judge.ask(make_request()))

    assert sample.error is not None
    assert sample.error.startswith(f"{reason} after {FAST.attempts} attempts: {status} ")
    assert "try later" in sample.error
    assert len(fake_gemini.requests) == FAST.attempts and not fake_gemini.unscripted
    assert judge.stats.as_dict() == {
        "samples": 1,
        "calls": 4,
        "cache_hits": 0,
        "retries": 3,
        "errors": 1,
        "rate_limited": 0,
        "lost": 0,
        "concurrency": 16,
        "concurrency_max": 1,
    }


@pytest.mark.parametrize("status", [400, 403, 404])
def test_client_error_is_not_retried(fake_gemini: FakeGeminiServer, status: int) -> None:
    fake_gemini.script(error_reply(status, "bad request"))

    sample = run(judge_for(fake_gemini).ask(make_request()))

    assert sample.error is not None and sample.error.startswith(f"judge call rejected: {status} ")
    assert "bad request" in sample.error
    assert len(fake_gemini.requests) == 1


def test_slow_answer_hitting_the_timeout_is_retried(fake_gemini: FakeGeminiServer) -> None:
    fake_gemini.script(slow(text_reply(verdict_json("invalid")), 3.0), text_reply(verdict_json()))
    judge = judge_for(fake_gemini, timeout=0.3)

    sample = run(judge.ask(make_request()))

    assert sample.parsed == Verdict(label="valid", rationale="same meaning")
    assert len(fake_gemini.requests) == 2
    assert judge.stats.retries == 1 and judge.stats.calls == 2


def test_timeout_on_every_attempt_is_an_error_sample(fake_gemini: FakeGeminiServer) -> None:
    # The timeout also covers making the client on the first attempt: 1.5 s, so that a busy machine (two test
    # processes on two cores) still sends both requests.
    fake_gemini.script(*[slow(text_reply(verdict_json()), 6.0)] * 2)
    judge = judge_for(fake_gemini, timeout=1.5, retry=RetryPolicy(attempts=2, initial_delay=0.01, jitter=0))

    sample = run(judge.ask(make_request()))

    assert sample.error == "timed out after 2 attempts: no answer within 1.5 s"
    assert len(fake_gemini.requests) == 2


def test_lost_connection_is_retried_then_an_error_sample() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=f"http://127.0.0.1:{port}/"))
    judge = GenaiJudge(client, retry=FAST, cache=False)

    sample = run(judge.ask(make_request()))

    assert sample.error is not None and sample.error.startswith("connection failed after 4 attempts: ConnectError")
    assert judge.stats.calls == 4


def test_invalid_generation_config_is_an_error_sample_without_a_request(fake_gemini: FakeGeminiServer) -> None:
    sample = run(judge_for(fake_gemini).ask(make_request(config={"temperature": "hot"})))

    assert sample.error is not None and sample.error.startswith("invalid judge config ['temperature']")
    assert fake_gemini.requests == []


def test_missing_credentials_give_an_error_sample_not_an_exception() -> None:
    sample = run(make_judge("gemini-2.5-flash", cache=False).ask(make_request()))

    assert sample.error is not None and sample.error.startswith("judge failed: ")


def test_retry_policy_defaults_are_adks_and_delays_double_up_to_the_cap() -> None:
    policy = RetryPolicy(jitter=0.0)

    assert (policy.attempts, policy.initial_delay, policy.max_delay, policy.exp_base) == (7, 5.0, 120.0, 2.0)
    assert [policy.delay(n) for n in range(1, 7)] == [5.0, 10.0, 20.0, 40.0, 80.0, 120.0]
    assert all(5.0 <= RetryPolicy().delay(1) <= 5.5 for _ in range(20))


@pytest.mark.parametrize("options", [{"attempts": 0}, {"initial_delay": -1.0}, {"exp_base": 0.5}])
def test_retry_policy_rejects_impossible_values(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="RetryPolicy"):
        RetryPolicy(**options)


def test_judges_from_the_environment_share_one_client_per_loop_and_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "k")

    async def clients() -> list[genai.Client]:
        found = [shared_genai_client(), shared_genai_client()]
        monkeypatch.setenv("AGENT_EVAL_GEMINI_BASE_URL", "http://127.0.0.1:9/")
        return [*found, shared_genai_client()]

    first, second, moved = run(clients())

    assert first is second and moved is not first
    assert run(clients())[0] is not first  # another event loop, another client
