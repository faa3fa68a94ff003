"""The judges' tokens per model (issue 31, item 1), through the real clients and the fake servers: every answered
call counts (samples, unusable answers, the answered retry), a failed attempt and a cache hit cost none, each case
run and metric gets only its own calls in `details["judge_tokens"]`, and the OpenAI-compatible backend reads
OpenAI's `usage`."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from google.genai.types import Content, Part

from agent_eval.metrics.judged.client import OpenAIJudge, make_judge
from agent_eval.metrics.judged.usage import judge_usage_of, judge_usage_totals, record_judge_usage
from agent_eval.metrics.judged.voting import set_judge_factory
from agent_eval.metrics.registry import REGISTRY, MetricSpec
from agent_eval.metrics.scoring import score_case_run, score_criterion
from agent_eval.results.model import MetricResult
from agent_eval.results.pricing import JUDGE_TOKENS
from agent_eval.schema import (
    UNKNOWN_MODEL,
    AgentRun,
    EvalCase,
    EvalConfig,
    EvalMetric,
    EvalStatus,
    EvaluationResult,
    Invocation,
    JudgeConfig,
    MetricInfo,
    ModelUsage,
)
from tests.fakes.gemini_server import FAKE_API_KEY, FakeGeminiServer, error_reply, text_reply
from tests.fakes.openai_server import FakeOpenAIServer, chat_reply
from tests.metrics.judged.helpers import FAST, make_request, run, verdict_json

JUDGE_VERSION = "gemini-2.5-flash-judge-001"
FAST_RETRIES = JudgeConfig(retry_attempts=3, retry_initial_delay=0.0, retry_max_delay=0.01)


@pytest.fixture
def gemini(fake_gemini: FakeGeminiServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGeminiServer]:
    """The default judge factory (the real google-genai client, with the judge cache) aimed at the fake server."""
    monkeypatch.setenv("GOOGLE_API_KEY", FAKE_API_KEY)
    monkeypatch.setenv("AGENT_EVAL_GEMINI_BASE_URL", fake_gemini.base_url)
    previous = set_judge_factory(None)
    yield fake_gemini
    set_judge_factory(previous)


def safe(prompt_tokens: int = 100, output_tokens: int = 7, **usage: Any) -> dict[str, Any]:
    """safety_v1's "safe" answer from `JUDGE_VERSION`, with its usage (`usage`: more camelCase fields)."""
    reply = text_reply(
        json.dumps({"verdict": "safe", "rationale": "harmless"}),
        prompt_tokens=prompt_tokens,
        output_tokens=output_tokens,
    )
    reply["usageMetadata"].update(usage)
    reply["modelVersion"] = JUDGE_VERSION
    return reply


def turn(user: str, response: str) -> Invocation:
    return Invocation(
        user_content=Content(role="user", parts=[Part(text=user)]),
        final_response=Content(role="model", parts=[Part(text=response)]),
    )


def case_run(number: int, turns: int = 1) -> tuple[EvalCase, AgentRun]:
    """Case `case-NN` whose responses say `case-NN says ...` (unique per test: no judge cache is shared)."""
    token = uuid.uuid4().hex[:8]
    conversation = [turn(f"question {t} {token}", f"case-{number:02d} says answer {t} {token}") for t in range(turns)]
    eval_id = f"case-{number:02d}"
    return EvalCase(eval_id=eval_id, conversation=conversation), AgentRun(
        eval_set_id="set", eval_id=eval_id, invocations=conversation
    )


def criterion(name: str = "safety_v1", **options: Any) -> tuple[EvalMetric, MetricSpec]:
    config = EvalConfig.model_validate({"criteria": {name: {"threshold": 0.5, "judge_model_options": options}}})
    [(eval_metric, spec)] = REGISTRY.resolve(config)
    return eval_metric, spec


def score(
    runs: list[tuple[EvalCase, AgentRun]],
    name: str = "safety_v1",
    judge: JudgeConfig | None = FAST_RETRIES,
    **options: Any,
) -> list[MetricResult]:
    eval_metric, spec = criterion(name, **options)
    return asyncio.run(score_criterion(spec, eval_metric, runs, judge=judge))


# ------------------------------------------------------------------------------------- Gemini: per sample
def test_each_sample_is_one_call_with_its_tokens(gemini: FakeGeminiServer) -> None:
    gemini.script(*[safe(100, 7, thoughtsTokenCount=2, cachedContentTokenCount=64)] * 6)

    [result] = score([case_run(0, turns=2)], num_samples=3)

    assert (result.score, result.status) == (1.0, EvalStatus.PASSED)
    assert len(gemini.generate_requests()) == 6 and not gemini.unscripted
    assert result.details[JUDGE_TOKENS] == {
        JUDGE_VERSION: {
            "calls": 6,
            "input_tokens": 600,
            "output_tokens": 42,
            "cached_input_tokens": 384,
            "thinking_tokens": 12,
        }
    }


def test_one_sample_without_a_model_version_counts_under_the_model_asked(gemini: FakeGeminiServer) -> None:
    reply = safe(30, 3)
    del reply["modelVersion"]
    gemini.script(reply)

    [result] = score([case_run(0)], num_samples=1, judge_model="gemini-2.5-pro")

    assert gemini.generate_requests()[0].model == "gemini-2.5-pro"
    assert result.details[JUDGE_TOKENS] == {"gemini-2.5-pro": {"calls": 1, "input_tokens": 30, "output_tokens": 3}}


def test_an_unusable_answer_still_costs_its_tokens(gemini: FakeGeminiServer) -> None:
    unparseable = text_reply("I cannot say.", prompt_tokens=100, output_tokens=4)
    unparseable["modelVersion"] = JUDGE_VERSION
    gemini.script(safe(100, 7), unparseable, safe(100, 7))

    [result] = score([case_run(0)], num_samples=3)

    assert result.score == 1.0
    assert result.details[JUDGE_TOKENS] == {JUDGE_VERSION: {"calls": 3, "input_tokens": 300, "output_tokens": 18}}


def test_a_rate_limited_attempt_costs_nothing_and_the_answered_retry_counts(gemini: FakeGeminiServer) -> None:
    gemini.script(error_reply(429, "quota"), safe(100, 7))

    [result] = score([case_run(0)], num_samples=1)

    assert len(gemini.generate_requests()) == 2
    assert result.score == 1.0
    assert result.details[JUDGE_TOKENS] == {JUDGE_VERSION: {"calls": 1, "input_tokens": 100, "output_tokens": 7}}


def test_a_judge_that_never_answers_costs_no_tokens(gemini: FakeGeminiServer) -> None:
    gemini.script(*[error_reply(500, "internal")] * 3)  # 500: retried per attempt (a 503 would be waited out)

    [result] = score([case_run(0)], num_samples=1)

    assert len(gemini.generate_requests()) == 3
    assert result.status is EvalStatus.NOT_EVALUATED
    assert JUDGE_TOKENS not in result.details


def test_a_cache_hit_makes_no_call_and_costs_no_tokens(gemini: FakeGeminiServer) -> None:
    gemini.script(safe(100, 7), safe(100, 7))
    runs = [case_run(0)]

    [first] = score(runs, num_samples=2)
    [again] = score(runs, num_samples=2)

    assert len(gemini.generate_requests()) == 2
    assert first.details[JUDGE_TOKENS] == {JUDGE_VERSION: {"calls": 2, "input_tokens": 200, "output_tokens": 14}}
    assert again.score == first.score == 1.0
    assert JUDGE_TOKENS not in again.details


def test_a_partly_cached_scoring_counts_only_the_new_calls(gemini: FakeGeminiServer) -> None:
    gemini.script(safe(100, 7), safe(50, 5), safe(50, 5))
    runs = [case_run(0)]

    score(runs, num_samples=1)
    [more] = score(runs, num_samples=3)  # sample 0 is cached, samples 1 and 2 are new calls

    assert len(gemini.generate_requests()) == 3
    assert more.details[JUDGE_TOKENS] == {JUDGE_VERSION: {"calls": 2, "input_tokens": 100, "output_tokens": 10}}


# ------------------------------------------------------------------------------------ case runs apart
class HeldSafety:
    """A reply handler: "safe" with prompt tokens 100 + case number, output tokens 1 + case number; requests are
    held until `gather` are in flight at once (at most 10 s), so concurrent case runs really overlap."""

    def __init__(self, gather: int) -> None:
        self.gather = gather
        self.current = 0
        self.most = 0
        self._lock = threading.Lock()

    def __call__(self, body: Any) -> dict[str, Any]:
        number = int(json.dumps(body).split("case-")[1][:2])
        with self._lock:
            self.current += 1
            self.most = max(self.most, self.current)
        deadline = time.monotonic() + 10.0
        while self.most < self.gather and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.05)
        with self._lock:
            self.current -= 1
        return safe(100 + number, 1 + number)


def test_case_runs_scored_at_once_each_get_only_their_own_calls(gemini: FakeGeminiServer) -> None:
    server = HeldSafety(gather=4)
    gemini.respond_with(server)

    results = score([case_run(n) for n in range(4)], num_samples=2, parallelism_limit=2)

    assert server.most >= 4  # the four case runs' calls were in flight together
    assert [result.details[JUDGE_TOKENS] for result in results] == [
        {JUDGE_VERSION: {"calls": 2, "input_tokens": 2 * (100 + n), "output_tokens": 2 * (1 + n)}} for n in range(4)
    ]


def test_judge_usage_of_keeps_concurrent_blocks_apart_and_the_process_totals_count_all() -> None:
    model = f"model-{uuid.uuid4().hex[:8]}"

    async def one(tokens: int) -> dict[str, ModelUsage]:
        with judge_usage_of() as used:
            await asyncio.sleep(0.01)
            record_judge_usage(model, ModelUsage(calls=1, input_tokens=tokens))
            await asyncio.sleep(0.01)
            record_judge_usage(model, ModelUsage(calls=1, input_tokens=tokens))
        return used

    async def both() -> list[dict[str, ModelUsage]]:
        return list(await asyncio.gather(one(1), one(10)))

    outside = ModelUsage(calls=1, output_tokens=5)
    record_judge_usage(model, outside)  # no block open: the process totals only
    firsts = asyncio.run(both())

    assert firsts == [{model: ModelUsage(calls=2, input_tokens=2)}, {model: ModelUsage(calls=2, input_tokens=20)}]
    assert judge_usage_totals()[model] == ModelUsage(calls=5, input_tokens=22, output_tokens=5)
    judge_usage_totals()[model] = ModelUsage(calls=99)  # a copy: the totals do not change
    assert judge_usage_totals()[model].calls == 5


def test_a_metric_that_raises_after_judge_calls_keeps_their_tokens(gemini: FakeGeminiServer) -> None:
    gemini.script(text_reply(verdict_json(), prompt_tokens=12, output_tokens=3))

    async def judged_then_broken(
        eval_metric: EvalMetric, actual: list[Invocation], expected: Any, scenario: Any
    ) -> EvaluationResult:
        del eval_metric, actual, expected, scenario
        await make_judge("gemini-2.5-flash", cache=False).ask(make_request())
        raise ValueError("a bug after the judge answered")

    spec = MetricSpec(name="broken_judged", function=judged_then_broken, info=MetricInfo(metric_name="broken_judged"))
    case, agent_run = case_run(0)

    result = asyncio.run(score_case_run(spec, EvalMetric(metric_name="broken_judged", threshold=0.5), case, agent_run))

    assert result.error == "ValueError: a bug after the judge answered"
    assert result.details == {JUDGE_TOKENS: {"fake-gemini": {"calls": 1, "input_tokens": 12, "output_tokens": 3}}}


def test_adk_exact_judging_counts_its_calls_too(gemini: FakeGeminiServer) -> None:
    pytest.importorskip("google.adk.evaluation")
    answer = text_reply('{"reasoning": "same", "is_the_agent_response_valid": "valid"}', prompt_tokens=80)
    gemini.script(*[answer] * 3)

    [result] = score([case_run(0)], "final_response_match_v2", num_samples=3)

    assert result.details["judge_mode"] == "adk-exact"
    assert len(gemini.generate_requests()) == 3
    assert result.details[JUDGE_TOKENS] == {"fake-gemini": {"calls": 3, "input_tokens": 240, "output_tokens": 15}}


# ------------------------------------------------------------------------------- OpenAI-compatible backend
def openai_reply(usage: dict[str, Any] | None, model: str | None) -> dict[str, Any]:
    reply = chat_reply(verdict_json())
    if usage is None:
        del reply["usage"]
    else:
        reply["usage"] = usage
    if model is None:
        del reply["model"]
    else:
        reply["model"] = model
    return reply


def test_openai_backend_reads_usage_with_reasoning_and_cached_tokens(fake_openai: FakeOpenAIServer) -> None:
    usage = {
        "prompt_tokens": 100,
        "completion_tokens": 40,
        "total_tokens": 140,
        "prompt_tokens_details": {"cached_tokens": 60},
        "completion_tokens_details": {"reasoning_tokens": 25},
    }
    fake_openai.script(
        chat_reply(verdict_json()),  # the fake server's usage: 10 in, 5 out, model "fake-model"
        openai_reply(usage, "gpt-judge-2025"),
        openai_reply(None, None),  # no usage, no model: a call of the model asked, tokens unknown
    )
    judge = OpenAIJudge(base_url=fake_openai.base_url, retry=FAST, cache=False)

    async def three() -> dict[str, ModelUsage]:
        with judge_usage_of() as used:
            for _ in range(3):
                assert (await judge.ask(make_request(model="openai:local-judge"))).usable
        return used

    used = run(three())

    assert [request.body["model"] for request in fake_openai.requests] == ["local-judge"] * 3
    assert used == {
        "fake-model": ModelUsage(calls=1, input_tokens=10, output_tokens=5),
        "gpt-judge-2025": ModelUsage(
            calls=1, input_tokens=100, output_tokens=15, cached_input_tokens=60, thinking_tokens=25
        ),
        "local-judge": ModelUsage(calls=1),
    }


def test_openai_judged_metric_has_its_judge_tokens(
    fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    previous = set_judge_factory(None)
    safe_answer = chat_reply(json.dumps({"verdict": "safe", "rationale": "harmless"}))
    fake_openai.script(safe_answer, safe_answer)
    try:
        [result] = score([case_run(0)], num_samples=2, judge_model="openai:local-judge")
    finally:
        set_judge_factory(previous)

    assert result.score == 1.0
    assert result.details[JUDGE_TOKENS] == {"fake-model": {"calls": 2, "input_tokens": 20, "output_tokens": 10}}


def test_unknown_model_is_the_name_of_a_call_whose_model_nobody_named() -> None:
    with judge_usage_of() as used:
        record_judge_usage(None, ModelUsage(calls=1, input_tokens=3))
        record_judge_usage("", ModelUsage(calls=1))

    assert used == {UNKNOWN_MODEL: ModelUsage(calls=2, input_tokens=3)}
