"""The run as ADK-Rust's `EvaluationReport` JSON (`adk-eval`'s `report.rs`), with plain JSON values.

Mapping from our report:

- `run_id`, `started_at` / `completed_at` (ISO 8601), `duration`: seconds between them, a float (ADK-Rust
  serializes a `std::time::Duration`; a float is what every other reader expects).
- one `results` entry per case run (`eval_id`; with `num_runs > 1` an id appears once per run):
  `passed` = no failures; `scores` = every metric score of the case run (unscored metrics left out);
  `duration` = the agent's latency in seconds; `failures` = one per metric that failed or could not score
  the case run (it applies but the judge gave nothing usable, it raised, ...; ADK-Rust has no "not evaluated"):
  `{criterion, expected, actual, score, threshold, details}`, where for a trajectory criterion (a name with
  `trajectory` or `tool` in it) `expected` / `actual` are the expected / actual tool calls of all turns
  rendered as `name(arg=value, ...)`, and for any other criterion the expected / actual final-response
  texts (turns joined with "\\n"); `expected` is null for a case without an expected conversation;
  `details` = the metric's explanation, else its error; `score` / `threshold` are 0.0 when missing (ADK-Rust's
  fields are numbers). An agent that failed gives one failure `{criterion: "execution", expected: null,
  actual: <error>, score: 0.0, threshold: 1.0}`, as ADK-Rust records an execution error.
- `turn_results`: per turn `{invocation_id, actual_response, expected_response, actual_tool_calls,
  expected_tool_calls, scores}`, tool calls as ADK-Rust's `{name, args}`, scores from the metrics'
  per-invocation scores. `invocation_id` is the turn's own id from the test file (the expected invocation's),
  else the actual invocation's (a turn the file does not have, or a case without an expected conversation).
- `summary`: `{total, passed, failed, pass_rate, avg_scores}`, averages over the results that have a score.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from agent_eval.render.tables import turn_texts
from agent_eval.results.model import CaseResult, MetricResult, RunReport
from agent_eval.results.tool_calls import format_call
from agent_eval.schema import Invocation, content_text, tool_calls_of

__all__ = ["EXECUTION_CRITERION", "is_trajectory_criterion", "rust_report"]

EXECUTION_CRITERION = "execution"


def is_trajectory_criterion(name: str) -> bool:
    """Whether a criterion compares tool calls (its failures show calls, not response texts)."""
    return "trajectory" in name or "tool" in name


def _calls(invocations: list[Invocation]) -> list[str]:
    return [format_call(call) for invocation in invocations for call in tool_calls_of(invocation)]


def _compared(name: str, case: CaseResult) -> tuple[Any, Any]:
    """(expected, actual) of a failure: call lists for trajectory criteria, else response texts."""
    actual, expected = case.agent_run.invocations, case.expected_invocations
    if is_trajectory_criterion(name):
        return (None if expected is None else _calls(expected)), _calls(actual)
    expected_text = None if expected is None else turn_texts([i.final_response for i in expected])
    return expected_text, turn_texts([i.final_response for i in actual])


def _failure(result: MetricResult, case: CaseResult) -> dict[str, Any]:
    expected, actual = _compared(result.metric_name, case)
    return {
        "criterion": result.metric_name,
        "expected": expected,
        "actual": actual,
        "score": result.score if result.score is not None else 0.0,
        "threshold": result.threshold if result.threshold is not None else 0.0,
        "details": result.explanation or result.error,
    }


def _failures(case: CaseResult) -> list[dict[str, Any]]:
    agent_failed = case.agent_run.error is not None
    failing = [result for result in case.metrics if result.gates or (result.unscored and not agent_failed)]
    failures = [_failure(result, case) for result in failing]
    if agent_failed:
        execution = {"criterion": EXECUTION_CRITERION, "expected": None, "actual": case.agent_run.error}
        failures.insert(0, {**execution, "score": 0.0, "threshold": 1.0, "details": "the agent failed"})
    return failures


def _tool_uses(invocation: Invocation | None) -> list[dict[str, Any]]:
    if invocation is None:
        return []
    return [{"name": call.name, "args": dict(call.args or {})} for call in tool_calls_of(invocation)]


def _response(invocation: Invocation | None) -> str | None:
    if invocation is None or invocation.final_response is None:
        return None
    return content_text(invocation.final_response)


def _turn_scores(case: CaseResult, index: int) -> dict[str, float]:
    return {
        result.metric_name: score
        for result in case.metrics
        if index < len(result.per_invocation) and (score := result.per_invocation[index].score) is not None
    }


def _turn_results(case: CaseResult) -> list[dict[str, Any]]:
    actual, expected = case.agent_run.invocations, case.expected_invocations or []
    turns = []
    for index in range(max(len(actual), len(expected))):
        done = actual[index] if index < len(actual) else None
        wanted = expected[index] if index < len(expected) else None
        turn = wanted or done
        turns.append(
            {
                "invocation_id": turn.invocation_id if turn is not None else "",
                "actual_response": _response(done),
                "expected_response": _response(wanted),
                "actual_tool_calls": _tool_uses(done),
                "expected_tool_calls": _tool_uses(wanted),
                "scores": _turn_scores(case, index),
            }
        )
    return turns


def _result(case: CaseResult) -> dict[str, Any]:
    failures = _failures(case)
    return {
        "eval_id": case.eval_id,
        "passed": not failures,
        "scores": {result.metric_name: result.score for result in case.metrics if result.score is not None},
        "failures": failures,
        "duration": case.agent_run.latency_seconds,
        "turn_results": _turn_results(case),
    }


def _summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    total = len(results)
    passed = sum(result["passed"] for result in results)
    scores: dict[str, list[float]] = defaultdict(list)
    for result in results:
        for criterion, score in result["scores"].items():
            scores[criterion].append(score)
    return {
        "total": total,
        "passed": passed,
        "failed": total - passed,
        "pass_rate": passed / total if total else 0.0,
        "avg_scores": {criterion: statistics.fmean(values) for criterion, values in scores.items()},
    }


def rust_report(report: RunReport) -> dict[str, Any]:
    """The run as ADK-Rust's `EvaluationReport` (see the module docstring for the mapping).

    Args:
        report: the run report.

    Returns:
        A JSON-ready dict: `run_id`, `started_at`, `completed_at`, `duration`, `results`, `summary`.
    """
    results = [_result(case) for case in report.cases]
    return {
        "run_id": report.run_id,
        "started_at": report.started_at.isoformat(),
        "completed_at": report.completed_at.isoformat(),
        "duration": (report.completed_at - report.started_at).total_seconds(),
        "results": results,
        "summary": _summary(results),
    }
