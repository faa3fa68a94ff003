"""`CaseResult.summary_only`: what a report evaluated a part at a time holds of each case run (built unvalidated,
sharing one empty `model_fields_set`): the same values a copy would hold, independent of one another."""

from __future__ import annotations

from agent_eval.results.model import CaseResult
from agent_eval.schema import EvalStatus, TokenUsage
from tests.store.builders import eval_set, make_report


def _case() -> CaseResult:
    report = make_report("r1", [eval_set("first", ("a", "b"))], {"m": {"a": 0.9, "b": 0.1}})
    case = report.cases[0]
    metric = case.metrics[0].model_copy(update={"details": {"judge_mode": "single", "judge_samples": [1, 2]}})
    usage = TokenUsage(input_tokens=12, output_tokens=3, total_tokens=15)
    agent_run = case.agent_run.model_copy(update={"token_usage": usage, "final_session_state": {"cart": [1]}})
    return case.model_copy(update={"metrics": [metric], "agent_run": agent_run})


def test_a_summary_keeps_the_scores_and_drops_what_the_store_keeps() -> None:
    case = _case()
    assert case.agent_run.invocations and case.metrics[0].per_invocation and case.expected_invocations

    summary = case.summary_only()

    assert summary.model_dump() == {
        **case.model_dump(),
        "agent_run": {**case.agent_run.model_dump(), "invocations": [], "final_session_state": None},
        "expected_invocations": None,
        "metrics": [{**case.metrics[0].model_dump(), "per_invocation": [], "details": {"judge_mode": "single"}}],
    }
    assert summary.agent_run.token_usage == TokenUsage(input_tokens=12, output_tokens=3, total_tokens=15)
    assert summary.metrics[0].score == 0.9 and summary.passed
    assert CaseResult.model_validate_json(summary.model_dump_json()) == summary  # a valid case result
    assert summary.summary_only() == summary


def test_summaries_stay_independent_when_one_is_copied_with_changes() -> None:
    first, second = _case().summary_only(), _case().summary_only()

    changed = first.model_copy(update={"status": EvalStatus.FAILED})

    assert changed.status is EvalStatus.FAILED and "status" in changed.model_fields_set
    assert first.status is second.status is EvalStatus.PASSED
    assert first.model_fields_set == second.model_fields_set == set()
