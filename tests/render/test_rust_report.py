"""ADK-Rust's EvaluationReport: results, failures with readable calls or texts, turn results, the summary."""

from __future__ import annotations

from typing import Any

import pytest

from agent_eval.render import rust_report
from agent_eval.render.rust_results import is_trajectory_criterion
from agent_eval.schema import EvalStatus
from tests.render.builders import (
    BROKEN,
    LOWERCASE_WHY,
    RESPONSE,
    TRAJECTORY,
    agent_run,
    repeated_report,
    result,
    run_report,
    sample_report,
)


def _results() -> dict[str, dict[str, Any]]:
    return {result["eval_id"]: result for result in rust_report(sample_report())["results"]}


def test_top_level_fields_and_iso_times() -> None:
    report = rust_report(sample_report())

    assert list(report) == ["run_id", "started_at", "completed_at", "duration", "results", "summary"]
    assert report["run_id"] == "run-1"
    assert report["started_at"] == "2026-12-02T12:00:00+00:00"
    assert report["completed_at"] == "2026-12-02T12:00:02.500000+00:00"
    assert report["duration"] == 2.5


def test_summary_counts_and_average_scores() -> None:
    summary = rust_report(sample_report())["summary"]

    assert summary["total"] == 5
    assert (summary["passed"], summary["failed"]) == (1, 4)
    assert summary["pass_rate"] == pytest.approx(0.2)
    assert summary["avg_scores"] == pytest.approx({TRAJECTORY: 0.75, RESPONSE: 0.8})


def test_a_trajectory_failure_shows_the_calls_as_python_calls() -> None:
    lowercase = _results()["lowercase"]

    assert lowercase["passed"] is False
    assert lowercase["scores"] == {TRAJECTORY: 0.0, RESPONSE: 1.0}
    assert lowercase["failures"] == [
        {
            "criterion": TRAJECTORY,
            "expected": ["set_temperature(location='Living Room', temperature=23)"],
            "actual": ["set_temperature(location='living room', temperature=23)"],
            "score": 0.0,
            "threshold": 1.0,
            "details": LOWERCASE_WHY,
        }
    ]
    assert lowercase["duration"] == 0.25


def test_a_response_failure_shows_the_texts_of_all_turns() -> None:
    (failure,) = _results()["two_turns"]["failures"]

    assert failure == {
        "criterion": RESPONSE,
        "expected": "The lamp is on.\nIt is 22 degrees in the Office.",
        "actual": "The lamp is on.\n22.",
        "score": 0.6,
        "threshold": 0.8,
        "details": "turn 2: rouge1 0.200",
    }


def test_agent_error_is_an_execution_failure_and_a_raising_metric_scores_zero() -> None:
    results = _results()

    boom = results["boom"]
    assert boom["scores"] == {}
    assert boom["failures"] == [
        {
            "criterion": "execution",
            "expected": None,
            "actual": "ValueError: nope",
            "score": 0.0,
            "threshold": 1.0,
            "details": "the agent failed",
        }
    ]
    (broken,) = results["broken_metric"]["failures"]
    assert (broken["criterion"], broken["score"], broken["threshold"], broken["details"]) == (
        RESPONSE,
        0.0,
        0.8,
        BROKEN,
    )
    assert results["fine"] == {**results["fine"], "passed": True, "failures": []}


def test_turn_results_pair_actual_and_expected_with_per_turn_scores() -> None:
    turns = _results()["two_turns"]["turn_results"]

    assert [t["invocation_id"] for t in turns] == ["t1", "t2"]
    assert turns[1] == {
        "invocation_id": "t2",
        "actual_response": "22.",
        "expected_response": "It is 22 degrees in the Office.",
        "actual_tool_calls": [{"name": "get_temperature", "args": {"location": "Office"}}],
        "expected_tool_calls": [{"name": "get_temperature", "args": {"location": "Office"}}],
        "scores": {TRAJECTORY: 1.0, RESPONSE: 0.2},
    }
    boom_turns = _results()["boom"]["turn_results"]
    assert [(t["actual_response"], t["expected_response"], t["scores"]) for t in boom_turns] == [(None, "Sure.", {})]


def test_repeated_runs_appear_once_per_run() -> None:
    report = rust_report(repeated_report(num_runs=2))

    assert [r["eval_id"] for r in report["results"]] == ["fine", "fine"]
    assert report["summary"] == {
        "total": 2,
        "passed": 2,
        "failed": 0,
        "pass_rate": 1.0,
        "avg_scores": {TRAJECTORY: 1.0},
    }


@pytest.mark.parametrize(
    ("name", "trajectory"),
    [
        ("tool_trajectory_avg_score", True),
        ("trajectory_in_order_match", True),
        ("rubric_based_tool_use_quality_v1", True),
        ("response_match_score", False),
        ("final_response_match_v2", False),
        ("safety_v1", False),
    ],
)
def test_which_criteria_compare_tool_calls(name: str, trajectory: bool) -> None:
    assert is_trajectory_criterion(name) is trajectory


def test_turn_results_keep_the_test_files_invocation_ids() -> None:
    report = sample_report()
    two_turns = report.cases[0]
    renamed = [
        invocation.model_copy(update={"invocation_id": f"turn-{index + 1}"})
        for index, invocation in enumerate(two_turns.agent_run.invocations)
    ]
    agent_run = two_turns.agent_run.model_copy(update={"invocations": renamed})
    case = two_turns.model_copy(update={"agent_run": agent_run})
    results = rust_report(report.model_copy(update={"cases": [case]}))["results"]

    assert [turn["invocation_id"] for turn in results[0]["turn_results"]] == ["t1", "t2"]
    scenario = case.model_copy(update={"expected_invocations": None})
    results = rust_report(report.model_copy(update={"cases": [scenario]}))["results"]
    assert [turn["invocation_id"] for turn in results[0]["turn_results"]] == ["turn-1", "turn-2"]


def test_a_criterion_the_judge_could_not_score_is_a_failure_in_adk_rusts_terms() -> None:
    unscored = "not evaluated: all 3 judge sample(s) unusable"
    report = run_report(
        [agent_run("a")],
        [result(TRAJECTORY, EvalStatus.PASSED), result(RESPONSE, EvalStatus.NOT_EVALUATED, explanation=unscored)],
    )

    (case,) = rust_report(report)["results"]

    assert case["passed"] is False
    assert [(f["criterion"], f["score"], f["threshold"], f["details"]) for f in case["failures"]] == [
        (RESPONSE, 0.0, 0.5, unscored)
    ]
