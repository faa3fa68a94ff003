"""ADK eval history files: field names checked against ADK 2.13 (with and without google-adk installed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_eval.render import eval_set_results, write_eval_set_results
from agent_eval.render.adk_results import app_name_of
from agent_eval.results.model import InvocationScore, MetricResult
from agent_eval.schema import EvalStatus
from tests.render.builders import COMPLETED, RESPONSE, TRAJECTORY, repeated_report, sample_report

# Field names of google-adk 2.13's pydantic models (google/adk/evaluation/eval_result.py, eval_metrics.py,
# eval_case.py): the shape is checked even where google-adk is not installed.
EVAL_SET_RESULT = {
    "eval_set_result_id",
    "eval_set_result_name",
    "eval_set_id",
    "eval_case_results",
    "creation_timestamp",
}
EVAL_CASE_RESULT = {
    "eval_set_file",
    "eval_set_id",
    "eval_id",
    "final_eval_status",
    "eval_metric_results",
    "overall_eval_metric_results",
    "eval_metric_result_per_invocation",
    "session_id",
    "session_details",
    "user_id",
}
EVAL_CASE_RESULT_REQUIRED = {
    "final_eval_status",
    "overall_eval_metric_results",
    "eval_metric_result_per_invocation",
    "session_id",
}
EVAL_METRIC_RESULT = {
    "metric_name",
    "threshold",
    "criterion",
    "custom_function_path",
    "score",
    "eval_status",
    "details",
}
PER_INVOCATION = {"actual_invocation", "expected_invocation", "eval_metric_results"}
DETAILS = {"rubric_scores", "token_usage_details", "duration_details"}
INVOCATION = {
    "invocation_id",
    "user_content",
    "final_response",
    "intermediate_data",
    "creation_timestamp",
    "duration",
    "model_duration",
    "tool_duration",
    "rubrics",
    "app_details",
}
ADK_STATUSES = {1, 2, 3, 4}


def _check_metric_result(result: dict[str, Any]) -> None:
    assert set(result) <= EVAL_METRIC_RESULT
    assert {"metric_name", "eval_status"} <= set(result)
    assert result["eval_status"] in ADK_STATUSES
    assert set(result["details"]) <= DETAILS
    if "criterion" in result:
        assert isinstance(result["criterion"]["threshold"], float)


def _check_case_result(case: dict[str, Any]) -> None:
    assert set(case) <= EVAL_CASE_RESULT
    assert set(case) >= EVAL_CASE_RESULT_REQUIRED
    assert case["final_eval_status"] in ADK_STATUSES
    for result in case["overall_eval_metric_results"]:
        _check_metric_result(result)
    for entry in case["eval_metric_result_per_invocation"]:
        assert set(entry) <= PER_INVOCATION
        assert set(entry["actual_invocation"]) <= INVOCATION
        assert set(entry.get("expected_invocation", {})) <= INVOCATION
        for result in entry["eval_metric_results"]:
            _check_metric_result(result)


def test_keys_are_adk_2_13_field_names() -> None:
    for report in (sample_report(), repeated_report()):
        for result in eval_set_results(report):
            assert set(result) == EVAL_SET_RESULT
            for case in result["eval_case_results"]:
                _check_case_result(case)


def test_adk_accepts_our_eval_set_results() -> None:
    eval_result = pytest.importorskip("google.adk.evaluation.eval_result")

    for report in (sample_report(), repeated_report(), _with_efficiency_details()):
        for result in eval_set_results(report):
            parsed = eval_result.EvalSetResult.model_validate_json(json.dumps(result))
            assert parsed.eval_set_id == "home"
            assert [c.eval_id for c in parsed.eval_case_results] == [c.eval_id for c in report.cases]


def test_hard_coded_field_lists_match_the_installed_adk() -> None:
    eval_result = pytest.importorskip("google.adk.evaluation.eval_result")
    from google.adk.evaluation import eval_case, eval_metrics

    assert set(eval_result.EvalSetResult.model_fields) == EVAL_SET_RESULT
    assert set(eval_result.EvalCaseResult.model_fields) == EVAL_CASE_RESULT
    assert set(eval_metrics.EvalMetricResult.model_fields) == EVAL_METRIC_RESULT
    assert set(eval_metrics.EvalMetricResultPerInvocation.model_fields) == PER_INVOCATION
    assert set(eval_metrics.EvalMetricResultDetails.model_fields) == DETAILS
    assert set(eval_case.Invocation.model_fields) == INVOCATION


def test_ids_names_and_timestamps_follow_adk() -> None:
    (result,) = eval_set_results(sample_report())

    timestamp = COMPLETED.timestamp()
    assert result["eval_set_result_id"] == f"home_automation_home_{timestamp}"
    assert result["eval_set_result_name"] == result["eval_set_result_id"]
    assert result["creation_timestamp"] == timestamp
    assert eval_set_results(sample_report(), app_name="my/app")[0]["eval_set_result_name"] == f"my_app_home_{timestamp}"


@pytest.mark.parametrize(
    ("reference", "app"),
    [
        ("examples/home_automation/agent.py:root_agent", "home_automation"),
        ("examples.home_automation.agent:root_agent", "home_automation"),
        ("pkg.bot:agent", "bot"),
        ("my agents/shop", "shop"),
        ("weird name.py:x", "weird_name"),
        ("adk-api+http://127.0.0.1:8000/home_app", "home_app"),
        ("adk-api+https://agents.example.com/prefix/shop-bot/", "shop-bot"),
        ("http://127.0.0.1:9000/chat", "chat"),
        ("https://bot.example.com", "bot_example_com"),
    ],
)
def test_app_name_is_the_agent_folder(reference: str, app: str) -> None:
    assert app_name_of(reference) == app


def test_case_results_carry_statuses_metrics_and_invocations() -> None:
    cases = {c["eval_id"]: c for c in eval_set_results(sample_report())[0]["eval_case_results"]}

    assert {name: c["final_eval_status"] for name, c in cases.items()} == {
        "two_turns": 2,
        "lowercase": 2,
        "boom": 2,
        "fine": 1,
        "broken_metric": 3,  # a criterion that raised leaves its case not evaluated, not failed
    }
    two = cases["two_turns"]
    trajectory, response = two["overall_eval_metric_results"]
    assert trajectory == {
        "metric_name": TRAJECTORY,
        "threshold": 1.0,
        "criterion": {"threshold": 1.0, "match_type": "EXACT"},
        "score": 1.0,
        "eval_status": 1,
        "details": {},
    }
    assert (response["metric_name"], response["score"], response["eval_status"]) == (RESPONSE, 0.6, 2)
    turns = two["eval_metric_result_per_invocation"]
    assert [t["actual_invocation"]["invocation_id"] for t in turns] == ["t1", "t2"]
    assert turns[1]["expected_invocation"]["final_response"]["parts"][0]["text"] == "It is 22 degrees in the Office."
    assert [(r["metric_name"], r["score"], r["eval_status"]) for r in turns[1]["eval_metric_results"]] == [
        (TRAJECTORY, 1.0, 1),
        (RESPONSE, 0.2, 2),
    ]
    assert two["session_id"] == "agent-eval-session-run-1-two_turns-0"


def test_an_agent_failure_has_no_metric_results_as_in_adk() -> None:
    cases = {c["eval_id"]: c for c in eval_set_results(sample_report())[0]["eval_case_results"]}

    boom = cases["boom"]
    assert (boom["final_eval_status"], boom["overall_eval_metric_results"]) == (2, [])
    assert boom["eval_metric_result_per_invocation"] == []


def test_a_metric_that_raised_is_not_evaluated_with_placeholder_turn_results() -> None:
    cases = {c["eval_id"]: c for c in eval_set_results(sample_report())[0]["eval_case_results"]}

    broken = cases["broken_metric"]
    assert broken["overall_eval_metric_results"][1]["eval_status"] == 3
    assert broken["overall_eval_metric_results"][1]["score"] is None
    turn_results = broken["eval_metric_result_per_invocation"][0]["eval_metric_results"]
    assert [(r["score"], r["eval_status"]) for r in turn_results] == [(1.0, 1), (None, 3)]


def test_num_runs_gives_one_case_result_per_run() -> None:
    (result,) = eval_set_results(repeated_report(num_runs=3))

    cases = result["eval_case_results"]
    assert [c["eval_id"] for c in cases] == ["fine", "fine", "fine"]
    assert [c["session_id"][-2:] for c in cases] == ["-0", "-1", "-2"]
    assert result["eval_set_result_id"].startswith("bot_home_")


def _with_efficiency_details() -> Any:
    report = sample_report()
    usage = {"total_tokens": 7.0, "input_tokens": 3.0, "output_tokens": 4.0, "cached_tokens": None}
    token_usage = MetricResult(
        metric_name="token_usage_v1",
        eval_set_id="home",
        eval_id="fine",
        score=7.0,
        status=EvalStatus.INFORMATIONAL,
        per_invocation=[InvocationScore(score=7.0, status=EvalStatus.INFORMATIONAL)],
        details={"token_usage_details": usage, "per_invocation_token_usage_details": [usage], "other": 1},
    )
    fine = report.cases[3]
    report.cases[3] = fine.model_copy(update={"metrics": [*fine.metrics, token_usage]})
    return report


def test_efficiency_breakdowns_go_to_adk_details() -> None:
    cases = eval_set_results(_with_efficiency_details())[0]["eval_case_results"]

    fine = next(c for c in cases if c["eval_id"] == "fine")
    overall = fine["overall_eval_metric_results"][2]
    expected_usage = {"total_tokens": 7.0, "input_tokens": 3.0, "output_tokens": 4.0}
    assert overall == {
        "metric_name": "token_usage_v1",
        "score": 7.0,
        "eval_status": 4,
        "details": {"token_usage_details": expected_usage},
    }
    per_turn = fine["eval_metric_result_per_invocation"][0]["eval_metric_results"][2]
    assert (per_turn["score"], per_turn["eval_status"]) == (7.0, 4)
    assert per_turn["details"] == {"token_usage_details": expected_usage}


def test_write_eval_set_results_names_files_as_adk(tmp_path: Path) -> None:
    paths = write_eval_set_results(sample_report(), tmp_path / "history")

    assert [p.name for p in paths] == [f"home_automation_home_{COMPLETED.timestamp()}.evalset_result.json"]
    assert json.loads(paths[0].read_text(encoding="utf-8")) == eval_set_results(sample_report())[0]


def test_result_files_of_an_adk_api_server_run_are_named_after_the_app(tmp_path: Path) -> None:
    report = sample_report().model_copy(update={"agent_reference": "adk-api+http://127.0.0.1:8000/home_app"})

    paths = write_eval_set_results(report, tmp_path)

    assert [p.name for p in paths] == [f"home_app_home_{COMPLETED.timestamp()}.evalset_result.json"]
    assert eval_set_results(report)[0]["eval_set_result_id"] == f"home_app_home_{COMPLETED.timestamp()}"
