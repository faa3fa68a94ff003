"""Judge retry settings from the config's `judge` section and `AGENT_EVAL_JUDGE_RETRY_*` (config > env > ADK),
checked before a run; and the run-level judge counters (`judge_totals`, `RunSummary.judge`, the summary line)."""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from google.genai.types import Content, Part

from agent_eval.errors import EvalInputError
from agent_eval.io import config_from_data
from agent_eval.metrics.judged.base import Judge, JudgeSample
from agent_eval.metrics.judged.client import ClientJudge, make_judge
from agent_eval.metrics.judged.credentials import RETRY_ENV, check_judge_credentials
from agent_eval.metrics.judged.policy import RetryPolicy, configured_retry, current_retry_policy, judge_totals
from agent_eval.metrics.judged.voting import set_judge_factory
from agent_eval.metrics.registry import REGISTRY
from agent_eval.metrics.scoring import score_criterion
from agent_eval.render.console import format_summary
from agent_eval.results.aggregate import build_report
from agent_eval.results.model import MetricResult, RunReport
from agent_eval.schema import AgentRun, EvalCase, EvalConfig, Invocation, JudgeConfig
from tests.fakes.gemini_server import FakeGeminiServer, error_reply, text_reply
from tests.metrics.judged.helpers import make_request, run, verdict_json

MODEL = "gemini-2.5-flash"
SAFE = text_reply(json.dumps({"verdict": "safe", "rationale": "harmless"}))


@pytest.fixture(autouse=True)
def _no_retry_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in RETRY_ENV.values():
        monkeypatch.delenv(variable, raising=False)


@pytest.fixture
def gemini(fake_gemini: FakeGeminiServer, monkeypatch: pytest.MonkeyPatch) -> FakeGeminiServer:
    """The fake server, where `make_judge(MODEL)` sends its calls."""
    monkeypatch.setenv("GOOGLE_API_KEY", "fake-gemini-key")
    monkeypatch.setenv("AGENT_EVAL_GEMINI_BASE_URL", fake_gemini.base_url)
    return fake_gemini


@pytest.fixture
def judges(gemini: FakeGeminiServer) -> Iterator[list[ClientJudge]]:
    """Judged metrics get `make_judge(model)` (the real client, aimed at the fake server); the judges made are
    listed here, in order."""
    made: list[ClientJudge] = []

    def factory(model: str) -> Judge:
        made.append(make_judge(model))
        return made[-1]

    previous = set_judge_factory(factory)
    yield made
    set_judge_factory(previous)


def set_retry_env(monkeypatch: pytest.MonkeyPatch, **values: str) -> None:
    for name, value in values.items():
        monkeypatch.setenv(RETRY_ENV[name], value)


def case_runs(count: int) -> list[tuple[EvalCase, AgentRun]]:
    runs = []
    for i in range(count):
        turn = Invocation(
            user_content=Content(role="user", parts=[Part(text=f"question {i}")]),
            final_response=Content(role="model", parts=[Part(text=f"answer {i}")]),
        )
        case = EvalCase(eval_id=f"c{i}", conversation=[turn])
        runs.append((case, AgentRun(eval_set_id="set", eval_id=f"c{i}", invocations=[turn])))
    return runs


CONFIG = EvalConfig.model_validate(
    {"criteria": {"safety_v1": {"threshold": 0.5, "judge_model_options": {"num_samples": 1}}}}
)


def score(runs: list[tuple[EvalCase, AgentRun]], judge: JudgeConfig | None = None) -> list[MetricResult]:
    [(eval_metric, spec)] = REGISTRY.resolve(CONFIG)
    return asyncio.run(score_criterion(spec, eval_metric, runs, judge=judge))


def report_of(runs: list[tuple[EvalCase, AgentRun]], results: list[MetricResult], stats: dict[str, int]) -> RunReport:
    now = datetime(2026, 1, 2, tzinfo=UTC)
    return build_report(
        run_id="run-1",
        runs=runs,
        metric_results=results,
        config=CONFIG,
        eval_set_ids=["set"],
        agent_reference="agent.py:root_agent",
        agent_fingerprint="fp",
        num_runs=1,
        started_at=now,
        completed_at=now,
        judge_stats=stats,
    )


# ---------------------------------------------------------------------------------------- precedence
def test_without_settings_the_policy_is_adks() -> None:
    assert current_retry_policy() == RetryPolicy() == RetryPolicy(attempts=7, initial_delay=5.0, max_delay=120.0)


def test_environment_reaches_the_judge_and_its_waits(gemini: FakeGeminiServer, monkeypatch: pytest.MonkeyPatch) -> None:
    set_retry_env(monkeypatch, attempts="3", initial_delay="0.05", max_delay="0.5")
    gemini.script(text_reply(verdict_json()), error_reply(500, "oops"), text_reply(verdict_json()))
    judge = make_judge(MODEL)

    async def timed() -> tuple[JudgeSample, float]:
        await judge.ask(make_request("warm-up"))  # the loop's client is made here, untimed
        started = time.perf_counter()
        sample = await judge.ask(make_request())
        return sample, time.perf_counter() - started

    sample, elapsed = run(timed())

    assert judge.retry == RetryPolicy(attempts=3, initial_delay=0.05, max_delay=0.5)
    assert sample.usable and elapsed < 3.0  # ADK's first wait alone is 5 s (room for a busy machine)
    assert judge.stats.as_dict() == {
        "samples": 2,
        "calls": 3,
        "cache_hits": 0,
        "retries": 1,
        "errors": 0,
        "rate_limited": 0,
        "lost": 0,
        "concurrency": 16,
        "concurrency_max": 1,
    }


def test_environment_attempts_bound_the_calls(gemini: FakeGeminiServer, monkeypatch: pytest.MonkeyPatch) -> None:
    set_retry_env(monkeypatch, attempts="2", initial_delay="0")
    gemini.script(*[error_reply(500, "oops")] * 2)

    sample = run(make_judge(MODEL).ask(make_request()))

    assert sample.error == "server error after 2 attempts: 500 INTERNAL: oops"
    assert len(gemini.requests) == 2


def test_config_wins_over_the_environment_setting_by_setting(
    fake_gemini: FakeGeminiServer, judges: list[ClientJudge], monkeypatch: pytest.MonkeyPatch
) -> None:
    set_retry_env(monkeypatch, attempts="2", initial_delay="0.05")
    fake_gemini.script(error_reply(500), error_reply(500), SAFE)  # 2 attempts (the env's) would not do

    started = time.perf_counter()
    [result] = score(case_runs(1), JudgeConfig(retry_attempts=3))
    elapsed = time.perf_counter() - started

    assert [judge.retry for judge in judges] == [RetryPolicy(attempts=3, initial_delay=0.05, max_delay=120.0)]
    assert (result.score, result.error) == (1.0, None)
    assert len(fake_gemini.requests) == 3 and elapsed < 4.0  # ADK would wait 5 s, then 10 s
    assert current_retry_policy() == RetryPolicy(attempts=2, initial_delay=0.05)  # the config's block ended


def test_configured_retry_applies_inside_its_block_only() -> None:
    with configured_retry(attempts=1, max_delay=3.0):
        inside = current_retry_policy()
    assert inside == RetryPolicy(attempts=1, max_delay=3.0)
    assert current_retry_policy() == RetryPolicy()


# ---------------------------------------------------------------------------------------- bad values
@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("attempts", "0", "AGENT_EVAL_JUDGE_RETRY_ATTEMPTS='0' is not valid: a whole number from 1 to 100"),
        ("attempts", "2.5", "AGENT_EVAL_JUDGE_RETRY_ATTEMPTS='2.5' is not valid: a whole number from 1 to 100"),
        (
            "initial_delay",
            "soon",
            "AGENT_EVAL_JUDGE_RETRY_INITIAL_DELAY='soon' is not valid: a number of seconds from 0 to 3600",
        ),
        ("max_delay", "-1", "AGENT_EVAL_JUDGE_RETRY_MAX_DELAY='-1' is not valid: a number of seconds from 0 to 3600"),
        ("max_delay", "nan", "AGENT_EVAL_JUDGE_RETRY_MAX_DELAY='nan' is not valid: a number of seconds from 0 to 3600"),
    ],
)
def test_bad_environment_values_fail_before_the_run_in_one_line(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, message: str
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "fake-gemini-key")
    set_retry_env(monkeypatch, **{name: value})

    with pytest.raises(EvalInputError) as checked:
        check_judge_credentials(MODEL)
    with pytest.raises(EvalInputError) as made:
        make_judge(MODEL)

    assert str(checked.value) == str(made.value) == message


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"retry_attempts": 0}, "field 'judge.retry_attempts': must be a whole number from 1 to 100, got 0"),
        ({"retryAttempts": 1.5}, "field 'judge.retry_attempts': must be a whole number from 1 to 100, got 1.5"),
        ({"retry_attempts": True}, "field 'judge.retry_attempts': must be a whole number from 1 to 100, got True"),
        (
            {"retry_initial_delay": "1"},
            "field 'judge.retry_initial_delay': must be a number of seconds from 0 to 3600, got '1'",
        ),
        (
            {"retry_max_delay": 7200},
            "field 'judge.retry_max_delay': must be a number of seconds from 0 to 3600, got 7200",
        ),
        ({"retry_delay": 1}, "field 'judge.retry_delay': unknown key 'retry_delay' (did you mean 'retry_max_delay'?)"),
    ],
)
def test_bad_config_values_fail_when_the_config_is_read(section: dict[str, Any], message: str) -> None:
    with pytest.raises(EvalInputError) as error:
        config_from_data({"criteria": {"safety_v1": 0.5}, "judge": section}, "test_config.json")
    assert str(error.value) == f"test_config.json: {message}"


def test_config_section_reads_snake_or_camel_and_is_no_part_of_what_a_run_measures() -> None:
    plain = config_from_data({"criteria": {"safety_v1": 0.5}}, "a.json")
    judged = config_from_data(
        {
            "criteria": {"safety_v1": 0.5},
            "judge": {"retryAttempts": 3, "retry_initial_delay": 1, "retry_max_delay": 10},
        },
        "b.json",
    )
    assert judged.judge == JudgeConfig(retry_attempts=3, retry_initial_delay=1.0, retry_max_delay=10.0)
    assert judged.scoring_fingerprint() == plain.scoring_fingerprint()
    assert judged.fingerprint() != plain.fingerprint()


# ------------------------------------------------------------------------------------ run counters
def test_run_summary_counts_the_judges_of_the_run_and_cache_keys_ignore_retries(
    fake_gemini: FakeGeminiServer, judges: list[ClientJudge], monkeypatch: pytest.MonkeyPatch
) -> None:
    set_retry_env(monkeypatch, initial_delay="0.01")
    fake_gemini.script(error_reply(500), error_reply(400, "blocked"))  # one retry, then one unusable sample
    fake_gemini.respond_with(lambda _body: SAFE)
    runs = case_runs(3)

    before = judge_totals().snapshot()
    first = report_of(runs, score(runs), judge_totals().since(before))
    middle = judge_totals().snapshot()
    second = report_of(
        runs, score(runs, JudgeConfig(retry_attempts=2, retry_max_delay=1)), judge_totals().since(middle)
    )

    limit = {"rate_limited": 0, "lost": 0, "concurrency": 16, "concurrency_max": 3}  # 3 case runs at once
    assert first.summary.judge == {"samples": 3, "calls": 4, "cache_hits": 0, "retries": 1, "errors": 1, **limit}
    assert "judge: 4 calls, 0 answers from cache, 1 retry, 1 unusable sample" in format_summary(first).splitlines()
    # other retry settings, same cache keys: the two usable answers are read back, the failed one asked again
    counts = {"samples": 3, "calls": 1, "cache_hits": 2, "retries": 0, "errors": 0}
    assert second.summary.judge == {**counts, **limit, "concurrency_max": 1}  # a new loop: its own limit
    assert "judge: 1 call, 2 answers from cache, 0 retries, 0 unusable samples" in format_summary(second).splitlines()
    assert sum(judge.stats.as_dict()["calls"] for judge in judges) == 5
    assert RunReport.model_validate_json(second.model_dump_json()).summary.judge == second.summary.judge


def test_summary_has_no_judge_line_when_no_judge_was_asked() -> None:
    runs = case_runs(1)
    report = report_of(runs, [], {"samples": 0, "calls": 0, "cache_hits": 0, "retries": 0, "errors": 0})
    assert not any(line.startswith("judge:") for line in format_summary(report).splitlines())
    assert report_of(runs, [], {}).summary.judge == {}


def test_totals_are_read_whole_from_another_thread_while_judges_count(
    gemini: FakeGeminiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_EVAL_JUDGE_CONCURRENCY", "8")  # 20 calls wait for 8 slots: the limit stays at 8
    gemini.respond_with(lambda _body: text_reply(verdict_json()))
    judge = make_judge(MODEL, cache=False)
    seen: list[dict[str, int]] = []
    done = threading.Event()
    before = judge_totals().snapshot()

    def read() -> None:  # as a progress display would
        while not done.is_set():
            seen.append(judge_totals().since(before))
            time.sleep(0.002)

    async def ask_many() -> None:
        await asyncio.gather(*(judge.ask(make_request(f"question {i}")) for i in range(20)))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        run(ask_many())
    finally:
        done.set()
        reader.join()

    counts = {"samples": 20, "calls": 20, "cache_hits": 0, "retries": 0, "errors": 0, "rate_limited": 0, "lost": 0}
    assert judge_totals().since(before) == {**counts, "concurrency": 8, "concurrency_max": 8}
    assert len(seen) > 1
    assert all(a["samples"] <= b["samples"] and a["calls"] <= b["calls"] for a, b in itertools.pairwise(seen))
    assert all(snapshot["samples"] <= snapshot["calls"] for snapshot in seen)  # a sample follows its call
