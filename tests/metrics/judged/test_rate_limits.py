"""A provider's rate-limit and overload answers, through the real google-genai client and httpx against the fake
servers: how each is classified (429 with and without `RetryInfo.retryDelay`, `Retry-After` in seconds or as a
date, OpenAI's `retry-after-ms`, 503), that the judge waits what the provider asked without spending an attempt
until its deadline, that the adaptive limit is cut by refusals and by latency growth and stays under the ceiling,
and a judged scoring that lost samples to a 429 storm before and loses none now."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest

from agent_eval.metrics.judged.backends import GeminiBackend, TransientJudgeError
from agent_eval.metrics.judged.base import JudgeRequest, JudgeSample
from agent_eval.metrics.judged.client import ClientJudge, GenaiJudge, OpenAIJudge
from agent_eval.metrics.judged.openai_backend import OpenAIBackend
from agent_eval.metrics.judged.policy import RetryPolicy, judge_limiter, use_judge_limiter
from agent_eval.metrics.judged.voting import set_judge_factory
from agent_eval.metrics.registry import REGISTRY
from agent_eval.metrics.scoring import score_criterion
from agent_eval.render.console import judge_limit_line
from agent_eval.runtime.adaptive import AdaptiveLimit
from agent_eval.runtime.ratelimit import ProviderSignal, parse_duration, parse_retry_after
from agent_eval.schema import EvalConfig
from tests.fakes.gemini_server import FakeGeminiServer, FakeReply, error_reply, text_reply
from tests.fakes.judges import SafetyServer
from tests.fakes.judges import numbered_case_runs as case_runs
from tests.fakes.limited_gemini import LimitedProvider, overloaded_reply, rate_limited_reply
from tests.fakes.openai_server import FakeOpenAIServer, chat_reply
from tests.metrics.judged.helpers import make_request, run, verdict_json

PATIENT = RetryPolicy(attempts=1, initial_delay=0.5, max_delay=4.0, jitter=0.0)
"""No ordinary retry at all: only rate-limit answers are retried; backoff 0.5, 1, 2 s; no jitter."""


class Waits:
    """Records what a judge waits (instead of waiting)."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.seconds.append(seconds)
        await asyncio.sleep(0)


def recorded(judge: ClientJudge) -> Waits:
    waits = Waits()
    judge._sleep = waits
    return waits


def gemini_signal(server: FakeGeminiServer, reply: FakeReply) -> ProviderSignal | None:
    """The signal GeminiBackend found in `reply`, sent by the fake server through google-genai."""
    server.script(reply)
    with pytest.raises(TransientJudgeError) as raised:
        run(GeminiBackend(server.client).generate(make_request()))
    return raised.value.signal


def openai_signal(server: FakeOpenAIServer, reply: FakeReply) -> ProviderSignal | None:
    server.script(reply)
    with pytest.raises(TransientJudgeError) as raised:
        run(OpenAIBackend(base_url=server.base_url).generate(make_request()))
    return raised.value.signal


# ------------------------------------------------------------------------------------------- classifying
@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (rate_limited_reply(13), ProviderSignal("rate limited", 13.0)),
        (rate_limited_reply(0.25), ProviderSignal("rate limited", 0.25)),
        (rate_limited_reply(), ProviderSignal("rate limited", None)),
        (rate_limited_reply(retry_after=7), ProviderSignal("rate limited", 7.0)),
        (rate_limited_reply(2, retry_after=7), ProviderSignal("rate limited", 2.0)),  # RetryInfo first
        (overloaded_reply(), ProviderSignal("overloaded", None)),
        (overloaded_reply(retry_after=3), ProviderSignal("overloaded", 3.0)),
        (error_reply(500, "internal"), None),
    ],
)
def test_gemini_answers_are_classified_through_google_genai(
    fake_gemini: FakeGeminiServer, reply: FakeReply, expected: ProviderSignal | None
) -> None:
    assert gemini_signal(fake_gemini, reply) == expected


def test_a_retry_after_date_is_counted_from_now(fake_gemini: FakeGeminiServer) -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    signal = gemini_signal(fake_gemini, rate_limited_reply(retry_after=when))
    assert signal is not None and signal.retry_after is not None
    assert 28.0 <= signal.retry_after <= 30.0  # whole seconds in the date, counted from a moment later


def _openai_error(status: int, kind: str, *headers: tuple[str, str]) -> FakeReply:
    return FakeReply(
        status=status, body={"error": {"message": "slow down", "type": kind, "code": kind}}, headers=headers
    )


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (_openai_error(429, "rate_limit_exceeded", ("Retry-After", "2")), ProviderSignal("rate limited", 2.0)),
        (_openai_error(429, "rate_limit_exceeded", ("retry-after-ms", "1500")), ProviderSignal("rate limited", 1.5)),
        (_openai_error(429, "rate_limit_exceeded"), ProviderSignal("rate limited", None)),
        (_openai_error(503, "server_error", ("Retry-After", "4")), ProviderSignal("overloaded", 4.0)),
        (_openai_error(429, "insufficient_quota"), None),  # no credit: waiting does not help
    ],
)
def test_openai_answers_are_classified_through_httpx(
    fake_openai: FakeOpenAIServer, reply: FakeReply, expected: ProviderSignal | None
) -> None:
    assert openai_signal(fake_openai, reply) == expected


@pytest.mark.parametrize(
    ("text", "seconds"), [("13s", 13.0), ("0.250s", 0.25), (".5s", 0.5), ("13", None), ("s", None), (None, None)]
)
def test_protobuf_durations(text: Any, seconds: float | None) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("120", 120.0), ("1.5", 1.5), ("Wed, 21 Oct 2015 07:28:10 GMT", 10.0), ("Wed, 21 Oct 2015 07:27:00 GMT", 0.0)],
)
def test_retry_after_values(value: str, seconds: float) -> None:
    now = datetime(2015, 10, 21, 7, 28, 0, tzinfo=UTC)
    assert parse_retry_after(value, now) == seconds
    assert parse_retry_after("soon", now) is None


# -------------------------------------------------------------------------------------------- the judge
def test_the_judge_waits_the_providers_delay_and_spends_no_attempt(fake_gemini: FakeGeminiServer) -> None:
    fake_gemini.script(rate_limited_reply(2), rate_limited_reply(retry_after=3), text_reply(verdict_json()))
    judge = GenaiJudge(fake_gemini.client, retry=PATIENT, cache=False)
    waits = recorded(judge)

    sample = run(judge.ask(make_request()))

    assert sample.usable and waits.seconds == [2.0, 3.0]  # one attempt allowed, yet retried twice
    stats = judge.stats.as_dict()
    assert (stats["calls"], stats["retries"], stats["rate_limited"], stats["lost"], stats["errors"]) == (3, 2, 2, 0, 0)


@pytest.mark.parametrize("reply", [rate_limited_reply(), overloaded_reply()], ids=["429", "503"])
def test_without_a_delay_the_backoff_is_waited(fake_gemini: FakeGeminiServer, reply: FakeReply) -> None:
    fake_gemini.script(reply, reply, reply, text_reply(verdict_json()))
    judge = GenaiJudge(fake_gemini.client, retry=PATIENT, cache=False)
    waits = recorded(judge)

    sample = run(judge.ask(make_request()))

    assert sample.usable and waits.seconds == [0.5, 1.0, 2.0]
    assert judge.stats.as_dict()["rate_limited"] == 3


def test_a_delay_past_the_deadline_loses_the_sample_at_once(fake_gemini: FakeGeminiServer) -> None:
    fake_gemini.script(rate_limited_reply(2), rate_limited_reply(30))
    policy = RetryPolicy(attempts=7, initial_delay=0.5, jitter=0.0, rate_limit_deadline=10)
    judge = GenaiJudge(fake_gemini.client, retry=policy, cache=False)
    waits = recorded(judge)

    sample = run(judge.ask(make_request()))

    assert sample.error is not None
    assert sample.error.startswith("rate limited until the deadline (10 s, 2 calls): 429 RESOURCE_EXHAUSTED")
    assert waits.seconds == [2.0]
    stats = judge.stats.as_dict()
    assert (stats["calls"], stats["rate_limited"], stats["lost"], stats["errors"]) == (2, 1, 1, 1)


def test_ordinary_failures_still_spend_attempts(fake_gemini: FakeGeminiServer) -> None:
    fake_gemini.script(error_reply(500, "oops"), error_reply(500, "oops"))
    judge = GenaiJudge(fake_gemini.client, retry=RetryPolicy(attempts=2, initial_delay=0.5, jitter=0.0), cache=False)
    waits = recorded(judge)

    sample = run(judge.ask(make_request()))

    assert sample.error == "server error after 2 attempts: 500 INTERNAL: oops"
    assert waits.seconds == [0.5] and judge.stats.as_dict()["lost"] == 0


def test_the_openai_judge_waits_retry_after(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script(
        _openai_error(429, "rate_limit_exceeded", ("Retry-After", "2")),
        _openai_error(429, "rate_limit_exceeded", ("retry-after-ms", "250")),
        chat_reply(verdict_json()),
    )
    judge = OpenAIJudge(base_url=fake_openai.base_url, retry=PATIENT, cache=False)
    waits = recorded(judge)

    sample = run(judge.ask(make_request(model="openai:fake-model")))

    assert sample.usable and waits.seconds == [2.0, 0.25]
    assert judge.stats.as_dict()["rate_limited"] == 2


def test_a_refusal_cuts_the_loops_limit_and_the_stats_say_where_it_went(fake_gemini: FakeGeminiServer) -> None:
    fake_gemini.script(rate_limited_reply(1), text_reply(verdict_json()))
    judge = GenaiJudge(fake_gemini.client, retry=PATIENT, cache=False)
    recorded(judge)

    async def ask() -> tuple[JudgeSample, int, int]:
        limit = AdaptiveLimit(8)
        use_judge_limiter(limit)
        sample = await judge.ask(make_request())
        return sample, limit.limit, judge_limiter().cuts

    sample, limit, cuts = run(ask())

    assert sample.usable and (limit, cuts) == (4, 1)  # the only call in flight refused: cut by half
    stats = judge.stats.as_dict()
    assert (stats["concurrency"], stats["concurrency_max"]) == (4, 1)  # the lower median of 8 then 4
    line = "judge: settled at 4 concurrent calls (at most 1), 1 rate-limited call retried, 0 lost"
    assert judge_limit_line(stats) == line


# -------------------------------------------------------------------------------- limits at the server
def test_latency_growth_cuts_the_limit_below_the_ceiling(
    fake_gemini: FakeGeminiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A provider that slows down in proportion past 4 calls in flight and never refuses: the limit starts at 16,
    grows while the latency holds, and is cut once the median latency passes twice the smallest seen."""
    monkeypatch.setenv("AGENT_EVAL_JUDGE_CONCURRENCY", "40")
    provider = LimitedProvider(lambda _body: text_reply(verdict_json()), latency=0.05, capacity=4)
    fake_gemini.respond_with(provider)
    judge = GenaiJudge(fake_gemini.client, retry=PATIENT, cache=False)

    async def ask_all() -> tuple[list[JudgeSample], AdaptiveLimit]:
        samples = await asyncio.gather(*(judge.ask(make_request(f"question {i}")) for i in range(240)))
        return samples, judge_limiter()

    try:
        samples, limit = run(ask_all())
    finally:
        provider.stop()

    assert [sample.error for sample in samples if not sample.usable] == [] and provider.refused == 0
    assert limit.cuts >= 1 and provider.most_in_flight <= 40
    assert judge.stats.as_dict()["rate_limited"] == 0


class WithoutSignals:
    """A backend as the judge client saw it before adaptive limits: a 429 was an ordinary failure."""

    def __init__(self, backend: GeminiBackend) -> None:
        self.backend, self.identity = backend, backend.identity

    async def generate(self, request: JudgeRequest) -> str:
        try:
            return await self.backend.generate(request)
        except TransientJudgeError as error:
            raise TransientJudgeError(error.reason, error.detail) from error


def scored_against_a_storm(
    server: FakeGeminiServer, adaptive: bool
) -> tuple[list[Any], LimitedProvider, dict[str, int]]:
    """20 case runs x 3 samples of `safety_v1` against a provider that holds 3 calls at once for 0.1 s and
    refuses the rest with a 0.1 s `retryDelay`; 2 attempts per call, a judge cap of 16. Before (`adaptive`
    false), the limit was a fixed 16 (no latency cut either, which on a loaded machine could spare the storm)."""
    provider = LimitedProvider(SafetyServer(lambda _case: 0.0), latency=0.1, max_concurrent=3)
    server.respond_with(provider)
    policy = RetryPolicy(attempts=2, initial_delay=0.01, max_delay=0.02)
    stats_judges: list[ClientJudge] = []

    def make(_model: str) -> ClientJudge:
        backend = GeminiBackend(server.client)
        judge = ClientJudge(backend if adaptive else WithoutSignals(backend), retry=policy, cache=False)
        stats_judges.append(judge)
        return judge

    options = {"num_samples": 3, "parallelism_limit": 3}
    config = EvalConfig.model_validate({"criteria": {"safety_v1": {"threshold": 0.5, "judge_model_options": options}}})
    [(eval_metric, spec)] = REGISTRY.resolve(config)

    async def scored() -> list[Any]:
        if not adaptive:
            use_judge_limiter(AdaptiveLimit(16, initial=16, floor=16, pacing=False))
        return await score_criterion(spec, eval_metric, case_runs(20))

    previous = set_judge_factory(make)
    try:
        results = asyncio.run(scored())
    finally:
        set_judge_factory(previous)
        provider.stop()
    totals: dict[str, int] = {}
    for judge in stats_judges:
        for name, value in judge.stats.as_dict().items():
            totals[name] = totals.get(name, 0) + value
    return results, provider, totals


def test_a_429_storm_that_lost_samples_before_loses_none_now(
    fake_gemini: FakeGeminiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_EVAL_JUDGE_CONCURRENCY", "16")

    before, storm, before_stats = scored_against_a_storm(fake_gemini, adaptive=False)
    now, limited, now_stats = scored_against_a_storm(fake_gemini, adaptive=True)

    assert storm.refused > 0 and before_stats["errors"] > 0  # 429s spent both attempts: samples lost
    assert any(result.score is None for result in before)
    assert limited.refused > 0 and now_stats["rate_limited"] > 0
    assert now_stats["errors"] == 0 and now_stats["lost"] == 0
    assert all(result.score is not None and result.error is None for result in now)
    assert limited.most_in_flight <= 3
