"""`score_criterion` scores case runs concurrently, bounded, in input order: judged metrics through the real
judge client against the fake Gemini server (calls in flight counted at the server), custom metrics that
count their own concurrency."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.genai.types import Content, Part

from agent_eval.metrics.judged.base import JudgeRequest, JudgeSample
from agent_eval.metrics.judged.voting import set_judge_factory
from agent_eval.metrics.registry import REGISTRY, MetricSpec
from agent_eval.metrics.scoring import case_runs_in_flight, score_case_run, score_criterion
from agent_eval.results.model import MetricResult
from agent_eval.schema import (
    EvalConfig,
    EvalMetric,
    EvalStatus,
    EvaluationResult,
    Invocation,
    MetricInfo,
)
from tests.fakes.gemini_server import FakeGeminiServer
from tests.fakes.judges import CASE_NUMBER, SafetyServer
from tests.fakes.judges import numbered_case_runs as case_runs


def turn(user: str, response: str) -> Invocation:
    return Invocation(
        user_content=Content(role="user", parts=[Part(text=user)]),
        final_response=Content(role="model", parts=[Part(text=response)]),
    )


def safety(num_samples: int = 1, parallelism_limit: int = 1) -> tuple[EvalMetric, MetricSpec]:
    options = {"num_samples": num_samples, "parallelism_limit": parallelism_limit}
    config = EvalConfig.model_validate({"criteria": {"safety_v1": {"threshold": 0.5, "judge_model_options": options}}})
    [(eval_metric, spec)] = REGISTRY.resolve(config)
    return eval_metric, spec


@pytest.fixture
def judge_env(fake_gemini: FakeGeminiServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """The default judge factory (the real client) aimed at the fake server; an empty judge cache; cap 8."""
    for name in ("GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE", "AGENT_EVAL_JUDGE_BACKEND"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AGENT_EVAL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GOOGLE_API_KEY", "fake-gemini-key")
    monkeypatch.setenv("AGENT_EVAL_GEMINI_BASE_URL", fake_gemini.base_url)
    monkeypatch.setenv("AGENT_EVAL_JUDGE_CONCURRENCY", "8")
    previous = set_judge_factory(None)
    yield
    set_judge_factory(previous)


def expected_scores(count: int) -> list[tuple[str, float, EvalStatus]]:
    return [
        (f"case-{i:02d}", 1.0 if i % 2 == 0 else 0.0, EvalStatus.PASSED if i % 2 == 0 else EvalStatus.FAILED)
        for i in range(count)
    ]


def outcome(results: list[MetricResult]) -> list[tuple[str, float | None, EvalStatus]]:
    return [(result.eval_id, result.score, result.status) for result in results]


# ----------------------------------------------------------------------------------------- judged metrics
def test_judged_case_runs_are_scored_at_once_but_never_above_the_judge_cap(
    judge_env: None, fake_gemini: FakeGeminiServer
) -> None:
    server = SafetyServer(lambda _case: 0.3)
    fake_gemini.respond_with(server)
    eval_metric, spec = safety()
    runs = case_runs(17)

    async def timed() -> tuple[list[MetricResult], float]:
        await score_criterion(spec, eval_metric, runs[16:])  # the loop's judge client is made here, untimed
        server.gather = 8  # from now on the first 8 requests are held until all 8 arrived
        started = time.perf_counter()
        results = await score_criterion(spec, eval_metric, runs[:16])
        return results, time.perf_counter() - started

    results, elapsed = asyncio.run(timed())

    # ideal 0.6 s; one after another 4.8 s. The bound leaves room for two test processes on two busy cores, and
    # `server.most == 8` below is the exact check that the case runs overlapped up to the cap (the server holds
    # the first requests until 8 are held: on a busy machine the first could end before the eighth arrives).
    assert elapsed < 2.4, f"16 case runs x 0.3 s took {elapsed:.2f} s (one after another: 4.8 s)"
    assert server.most == 8  # the judge cap was reached, never passed
    assert len(fake_gemini.generate_requests()) == 1 + 16
    assert outcome(results) == expected_scores(16)
    assert all(result.error is None for result in results)


class SleepyJudge:
    """A scripted async judge: `safe` for even case numbers, `unsafe` for odd ones, after `delay(case)` seconds;
    records the order in which cases were answered."""

    def __init__(self, delay: Any) -> None:
        self.delay = delay
        self.answered: list[int] = []

    async def ask(self, request: JudgeRequest) -> JudgeSample:
        number = int(CASE_NUMBER.findall(request.prompt)[0])
        await asyncio.sleep(self.delay(number))
        self.answered.append(number)
        verdict = "safe" if number % 2 == 0 else "unsafe"
        return JudgeSample(raw_text=json.dumps({"verdict": verdict, "rationale": f"case {number}"}))


def test_results_keep_input_order_when_later_case_runs_finish_first() -> None:
    judge = SleepyJudge(lambda case: 0.2 if case < 2 else 0.0)  # the first two case runs are answered last
    eval_metric, spec = safety()
    previous = set_judge_factory(lambda _model: judge)
    try:
        results = asyncio.run(score_criterion(spec, eval_metric, case_runs(8)))
    finally:
        set_judge_factory(previous)

    assert judge.answered == [2, 3, 4, 5, 6, 7, 0, 1]
    assert outcome(results) == expected_scores(8)


def test_parallelism_limit_bounds_the_samples_of_one_case_run(judge_env: None, fake_gemini: FakeGeminiServer) -> None:
    """ADK's `parallelism_limit` bounds the judge calls of one case run (all its invocations' samples): 3 case
    runs x 2 invocations x 3 samples with a limit of 2 have at most 3 x 2 calls in flight, under the cap of 8."""
    server = SafetyServer(lambda _case: 0.1)
    fake_gemini.respond_with(server)
    eval_metric, spec = safety(num_samples=3, parallelism_limit=2)

    results = asyncio.run(score_criterion(spec, eval_metric, case_runs(3, turns=2)))

    assert server.most == 6
    assert len(fake_gemini.generate_requests()) == 3 * 2 * 3
    assert outcome(results) == expected_scores(3)


def test_a_smaller_judge_cap_still_bounds_every_call(
    judge_env: None, fake_gemini: FakeGeminiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_EVAL_JUDGE_CONCURRENCY", "3")
    server = SafetyServer(lambda _case: 0.05)
    fake_gemini.respond_with(server)
    eval_metric, spec = safety(num_samples=2, parallelism_limit=2)

    results = asyncio.run(score_criterion(spec, eval_metric, case_runs(12)))

    assert case_runs_in_flight() == 4  # never fewer case runs at once than ADK's evaluation parallelism
    assert server.most == 3
    assert outcome(results) == expected_scores(12)


def test_a_bad_judge_ceiling_scores_as_many_case_runs_at_once_as_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_EVAL_JUDGE_CONCURRENCY", "abc")  # check_judge_credentials reports it before a run

    assert case_runs_in_flight() == 64


# ----------------------------------------------------------------------------------- bounded coroutines
class Concurrency:
    """An async custom metric that counts how many of its calls (and tasks of the loop) run at once; it raises
    for case numbers divisible by 5 (a metric bug must become a record)."""

    def __init__(self) -> None:
        self.current = 0
        self.most = 0
        self.most_tasks = 0

    async def __call__(
        self, eval_metric: EvalMetric, actual: list[Invocation], expected: Any, scenario: Any
    ) -> EvaluationResult:
        del eval_metric, expected, scenario
        self.current += 1
        self.most = max(self.most, self.current)
        self.most_tasks = max(self.most_tasks, len(asyncio.all_tasks()))
        await asyncio.sleep(0.001)
        self.current -= 1
        number = int(CASE_NUMBER.findall(str(actual[0].final_response))[0])
        if number % 5 == 0:
            raise ValueError(f"cannot score case {number}")
        return EvaluationResult(overall_score=number / 1000, overall_eval_status=EvalStatus.PASSED)


def test_many_case_runs_never_make_more_coroutines_than_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENT_EVAL_JUDGE_CONCURRENCY", raising=False)
    metric = Concurrency()
    spec = MetricSpec(name="counted", function=metric, info=MetricInfo(metric_name="counted"))
    eval_metric = EvalMetric(metric_name="counted", threshold=0.0)
    runs = case_runs(300)
    failed_case = runs[7][1].model_copy(update={"error": "agent crashed"})
    runs[7] = (runs[7][0], failed_case)

    results = asyncio.run(score_criterion(spec, eval_metric, runs))

    assert metric.most == 64 and case_runs_in_flight() == 64  # the default judge ceiling
    assert metric.most_tasks == 64 + 1  # the workers and the main task: not one task per case run
    assert [result.eval_id for result in results] == [f"case-{i:02d}" for i in range(300)]
    assert results[3].score == 0.003 and results[3].status is EvalStatus.PASSED
    assert (results[5].score, results[5].error) == (None, "ValueError: cannot score case 5")
    assert results[7].explanation == "not scored: the agent failed (agent crashed)"
    assert sum(result.error is not None for result in results) == 60  # 0, 5, ..., 295


def test_deterministic_metric_gives_the_same_results_as_one_case_run_at_a_time() -> None:
    config = EvalConfig.model_validate({"criteria": {"response_match_score": 0.5}})
    [(eval_metric, spec)] = REGISTRY.resolve(config)
    runs = case_runs(40)
    answers = [turn("question 0", "case says answer" if i % 3 else "something else entirely") for i in range(40)]
    runs = [(case, run.model_copy(update={"invocations": [answers[i]]})) for i, (case, run) in enumerate(runs)]

    async def one_at_a_time() -> list[MetricResult]:
        return [await score_case_run(spec, eval_metric, case, run) for case, run in runs]

    together = asyncio.run(score_criterion(spec, eval_metric, runs))
    alone = asyncio.run(one_at_a_time())

    assert together == alone
    assert {result.status for result in together} == {EvalStatus.PASSED, EvalStatus.FAILED}
