"""Tokens by model (issue 31, item 1): `ModelUsage` (from google-genai's usage, added up, unknown counts kept
None), the run's summary (agent tokens of case runs invoked now, judge tokens from the metric details) and the
console's `Tokens, ...` lines."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from google.genai import types as genai_types

from agent_eval.render.console import format_summary, token_lines
from agent_eval.results.aggregate import build_report, summarize
from agent_eval.results.model import CaseResult, MetricResult
from agent_eval.results.pricing import JUDGE_TOKENS
from agent_eval.schema import (
    UNKNOWN_MODEL,
    AgentRun,
    CacheOrigin,
    EvalConfig,
    EvalStatus,
    ModelUsage,
    TokenUsage,
    add_usage,
    merged_usage,
)


# ----------------------------------------------------------------------------------------------- ModelUsage
def test_of_genai_counts_the_tool_use_prompt_as_input_and_keeps_cached_and_thoughts() -> None:
    usage = genai_types.GenerateContentResponseUsageMetadata(
        prompt_token_count=100,
        tool_use_prompt_token_count=20,
        candidates_token_count=30,
        cached_content_token_count=40,
        thoughts_token_count=7,
        total_token_count=157,
    )

    assert ModelUsage.of_genai(usage) == ModelUsage(
        calls=1, input_tokens=120, output_tokens=30, cached_input_tokens=40, thinking_tokens=7
    )


def test_of_genai_leaves_unreported_counts_none_never_zero() -> None:
    only_prompt = genai_types.GenerateContentResponseUsageMetadata(prompt_token_count=12)
    only_tool_prompt = genai_types.GenerateContentResponseUsageMetadata(tool_use_prompt_token_count=3)

    assert ModelUsage.of_genai(only_prompt) == ModelUsage(calls=1, input_tokens=12)
    assert ModelUsage.of_genai(only_tool_prompt) == ModelUsage(calls=1, input_tokens=3)
    assert ModelUsage.of_genai(genai_types.GenerateContentResponseUsageMetadata()) == ModelUsage(calls=1)
    assert ModelUsage.of_genai(None) == ModelUsage(calls=1)
    assert ModelUsage.of_genai(None).model_dump(exclude_none=True) == {"calls": 1}


def test_plus_adds_the_known_counts_and_keeps_none_where_neither_knows() -> None:
    first = ModelUsage(calls=1, input_tokens=None, output_tokens=None, cached_input_tokens=None, thinking_tokens=4)
    second = ModelUsage(calls=2, input_tokens=5, output_tokens=None, cached_input_tokens=None, thinking_tokens=6)

    assert first.plus(second) == ModelUsage(
        calls=3, input_tokens=5, output_tokens=None, cached_input_tokens=None, thinking_tokens=10
    )
    assert second.plus(first) == first.plus(second)
    assert ModelUsage(calls=1).plus(ModelUsage(calls=1)) == ModelUsage(calls=2)  # None + None = None
    assert ModelUsage(calls=1, input_tokens=0).plus(ModelUsage(calls=1)).input_tokens == 0  # a reported 0 stays


def test_add_usage_counts_a_call_without_a_model_under_unknown_model() -> None:
    totals: dict[str, ModelUsage] = {}

    add_usage(totals, None, ModelUsage(calls=1, input_tokens=10, output_tokens=2))
    add_usage(totals, "", ModelUsage(calls=1, input_tokens=5))
    add_usage(totals, "gemini-2.5-flash", ModelUsage(calls=1, output_tokens=3))

    assert UNKNOWN_MODEL == "unknown model"
    assert totals == {
        UNKNOWN_MODEL: ModelUsage(calls=2, input_tokens=15, output_tokens=2),
        "gemini-2.5-flash": ModelUsage(calls=1, output_tokens=3),
    }


def test_merged_usage_adds_per_model_and_leaves_its_inputs_unchanged() -> None:
    first = {"a": ModelUsage(calls=1, input_tokens=10, output_tokens=1), "b": ModelUsage(calls=2)}
    second = {"a": ModelUsage(calls=3, input_tokens=5, cached_input_tokens=2), "c": ModelUsage(calls=1)}

    merged = merged_usage(first, {}, second)

    assert merged == {
        "a": ModelUsage(calls=4, input_tokens=15, output_tokens=1, cached_input_tokens=2),
        "b": ModelUsage(calls=2),
        "c": ModelUsage(calls=1),
    }
    assert first["a"] == ModelUsage(calls=1, input_tokens=10, output_tokens=1)
    assert second["a"] == ModelUsage(calls=3, input_tokens=5, cached_input_tokens=2)
    assert merged_usage() == {}


# ------------------------------------------------------------------------------------------------ summary
def case_result(
    eval_id: str,
    by_model: dict[str, ModelUsage] | None,
    judge_tokens: Sequence[Mapping[str, Any] | None] = (),
    *,
    reused: bool = False,
    run_index: int = 0,
) -> CaseResult:
    """A passed case run whose agent reported `by_model` (None: no token usage) and whose metrics' details hold
    `judge_tokens` (one metric each; None: a metric without judge tokens)."""
    usage = None if by_model is None else TokenUsage(by_model=by_model)
    origin = CacheOrigin(run_id="earlier-run") if reused else None
    run = AgentRun(eval_set_id="set", eval_id=eval_id, run_index=run_index, token_usage=usage, cached_from=origin)
    metrics = [
        MetricResult(
            metric_name=f"metric_{index}",
            eval_set_id="set",
            eval_id=eval_id,
            run_index=run_index,
            score=1.0,
            status=EvalStatus.PASSED,
            details={} if tokens is None else {JUDGE_TOKENS: tokens},
        )
        for index, tokens in enumerate(judge_tokens)
    ]
    return CaseResult(
        eval_set_id="set",
        eval_id=eval_id,
        run_index=run_index,
        status=EvalStatus.PASSED,
        agent_run=run,
        metrics=metrics,
    )


def test_summary_adds_agent_tokens_per_model_leaving_out_reused_case_runs() -> None:
    cases = [
        case_result(
            "one",
            {
                "gemini-2.5-flash": ModelUsage(calls=2, input_tokens=100, output_tokens=20, thinking_tokens=5),
                "gemini-2.5-pro": ModelUsage(calls=1, input_tokens=50, output_tokens=10),
            },
        ),
        case_result("two", {"gemini-2.5-flash": ModelUsage(calls=3, input_tokens=30, cached_input_tokens=12)}),
        case_result("reused", {"gemini-2.5-flash": ModelUsage(calls=100, input_tokens=9999)}, reused=True),
        case_result("silent", None),
        case_result("nameless", {}),
    ]

    summary = summarize(cases)

    assert summary.agent_tokens == {
        "gemini-2.5-flash": ModelUsage(
            calls=5, input_tokens=130, output_tokens=20, cached_input_tokens=12, thinking_tokens=5
        ),
        "gemini-2.5-pro": ModelUsage(calls=1, input_tokens=50, output_tokens=10),
    }
    assert summary.cached_case_runs == 1
    assert summary.judge_tokens == {}


def test_summary_adds_judge_tokens_from_every_metrics_details() -> None:
    flash = {"calls": 3, "input_tokens": 300, "output_tokens": 30}
    cases = [
        case_result("one", None, [{"gemini-2.5-flash": flash}, None]),
        case_result(
            "two",
            None,
            [{"gemini-2.5-flash": {"calls": 1, "input_tokens": 10, "thinking_tokens": 4}, "gpt-judge": {"calls": 2}}],
        ),
        # a reused answer was still scored now: its judge calls count
        case_result("reused", {"agent-model": ModelUsage(calls=1)}, [{"gemini-2.5-flash": flash}], reused=True),
    ]

    summary = summarize(cases)

    assert summary.judge_tokens == {
        "gemini-2.5-flash": ModelUsage(calls=7, input_tokens=610, output_tokens=60, thinking_tokens=4),
        "gpt-judge": ModelUsage(calls=2),
    }
    assert summary.agent_tokens == {}


def test_summary_survives_a_json_round_trip_with_its_tokens() -> None:
    summary = summarize(
        [case_result("one", {"m": ModelUsage(calls=1, input_tokens=3)}, [{"j": {"calls": 1, "output_tokens": 2}}])]
    )

    again = type(summary).model_validate_json(summary.model_dump_json())

    assert again.agent_tokens == {"m": ModelUsage(calls=1, input_tokens=3)}
    assert again.judge_tokens == {"j": ModelUsage(calls=1, output_tokens=2)}


def test_judge_tokens_stay_in_a_case_runs_summary() -> None:
    tokens = {"gemini-2.5-flash": {"calls": 2, "input_tokens": 20}}
    case = case_result("one", {"m": ModelUsage(calls=1, input_tokens=3)}, [tokens])

    summary_only = case.summary_only()

    assert summary_only.metrics[0].details == {JUDGE_TOKENS: tokens}
    assert summarize([summary_only]).judge_tokens == {"gemini-2.5-flash": ModelUsage(calls=2, input_tokens=20)}
    assert summarize([summary_only]).agent_tokens == {"m": ModelUsage(calls=1, input_tokens=3)}


# ----------------------------------------------------------------------------------------- console lines
def test_token_lines_with_cached_and_thinking_tokens() -> None:
    agent = {
        "gemini-2.5-flash": ModelUsage(
            calls=66, input_tokens=12345, output_tokens=678, cached_input_tokens=1024, thinking_tokens=90
        )
    }
    judges = {
        "gemini-2.5-flash": ModelUsage(calls=1, input_tokens=1500, output_tokens=20),
        "gpt-judge": ModelUsage(calls=2, input_tokens=30, output_tokens=4, thinking_tokens=1200),
    }

    assert token_lines(agent, judges) == [
        "Tokens, agent: gemini-2.5-flash 66 calls, 12,345 in (1,024 cached) / 678 out / 90 thinking",
        "Tokens, judges: gemini-2.5-flash 1 call, 1,500 in / 20 out; gpt-judge 2 calls, 30 in / 4 out / 1,200 thinking",
    ]


def test_token_lines_show_unknown_counts_as_question_marks_and_skip_empty_sides() -> None:
    agent = {UNKNOWN_MODEL: ModelUsage(calls=3)}
    only_output = {"m": ModelUsage(calls=1, output_tokens=7, cached_input_tokens=0, thinking_tokens=0)}

    assert token_lines(agent, {}) == ["Tokens, agent: unknown model 3 calls, ? in / ? out"]
    assert token_lines({}, only_output) == ["Tokens, judges: m 1 call, ? in / 7 out"]
    assert token_lines({}, {}) == []


def test_the_run_summary_prints_both_token_lines() -> None:
    case = case_result(
        "one",
        {"agent-model": ModelUsage(calls=2, input_tokens=40, output_tokens=8)},
        [{"judge-model": {"calls": 3, "input_tokens": 90, "output_tokens": 15}}],
    )
    now = datetime(2026, 1, 2, tzinfo=UTC)
    report = build_report(
        run_id="run-1",
        cases=[case],
        config=EvalConfig.model_validate({"criteria": {"metric_0": 1.0}}),
        eval_set_ids=["set"],
        agent_reference="agent.py:root_agent",
        agent_fingerprint="fp",
        num_runs=1,
        started_at=now,
        completed_at=now,
    )

    lines = format_summary(report).splitlines()

    assert [line for line in lines if line.startswith("Tokens, ")] == [
        "Tokens, agent: agent-model 2 calls, 40 in / 8 out",
        "Tokens, judges: judge-model 3 calls, 90 in / 15 out",
    ]
