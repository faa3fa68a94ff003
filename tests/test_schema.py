"""`agent_eval.schema`: ADK's field names, aliases, defaults and enum values; hashing and helpers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from google.genai.types import Content, FunctionCall, Part
from pydantic import ValidationError

from agent_eval.io import load_eval_set
from agent_eval.schema import (
    DEFAULT_CRITERIA,
    EvalCase,
    EvalConfig,
    EvalMetric,
    EvalSet,
    EvalStatus,
    IntermediateData,
    Interval,
    Invocation,
    InvocationEvents,
    MetricInfo,
    content_hash,
    content_text,
    tool_calls_of,
)
from tests.conftest import TEST_DATA

SNAKE: dict[str, Any] = {
    "eval_set_id": "set-1",
    "name": "Set one",
    "creation_timestamp": 12.5,
    "eval_cases": [
        {
            "eval_id": "case-1",
            "conversation": [
                {
                    "invocation_id": "inv-1",
                    "user_content": {"role": "user", "parts": [{"text": "Turn off device_3"}]},
                    "final_response": {"role": "model", "parts": [{"text": "Done."}]},
                    "intermediate_data": {
                        "tool_uses": [{"id": "c1", "name": "set_device_info", "args": {"device_id": "device_3"}}],
                        "tool_responses": [{"id": "c1", "name": "set_device_info", "response": {"ok": True}}],
                        "intermediate_responses": [["sub_agent", [{"text": "working"}]]],
                    },
                    "rubrics": [{"rubric_id": "r1", "rubric_content": {"text_property": "Is polite"}}],
                }
            ],
            "session_input": {"app_name": "home", "user_id": "u1", "state": {"room": "Bedroom"}},
            "final_session_state": {"done": True},
        },
        {
            "eval_id": "case-2",
            "conversation_scenario": {"starting_prompt": "Hello", "conversation_plan": "Ask for help"},
        },
    ],
}

CAMEL: dict[str, Any] = {
    "evalSetId": "set-1",
    "name": "Set one",
    "creationTimestamp": 12.5,
    "evalCases": [
        {
            "evalId": "case-1",
            "conversation": [
                {
                    "invocationId": "inv-1",
                    "userContent": {"role": "user", "parts": [{"text": "Turn off device_3"}]},
                    "finalResponse": {"role": "model", "parts": [{"text": "Done."}]},
                    "intermediateData": {
                        "toolUses": [{"id": "c1", "name": "set_device_info", "args": {"device_id": "device_3"}}],
                        "toolResponses": [{"id": "c1", "name": "set_device_info", "response": {"ok": True}}],
                        "intermediateResponses": [["sub_agent", [{"text": "working"}]]],
                    },
                    "rubrics": [{"rubricId": "r1", "rubricContent": {"textProperty": "Is polite"}}],
                }
            ],
            "sessionInput": {"appName": "home", "userId": "u1", "state": {"room": "Bedroom"}},
            "finalSessionState": {"done": True},
        },
        {
            "evalId": "case-2",
            "conversationScenario": {"startingPrompt": "Hello", "conversationPlan": "Ask for help"},
        },
    ],
}


def all_keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in all_keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in all_keys(v)}
    return set()


def test_camel_and_snake_case_give_equal_models() -> None:
    snake, camel = EvalSet.model_validate(SNAKE), EvalSet.model_validate(CAMEL)
    assert snake == camel
    invocation = (snake.eval_cases[0].conversation or [])[0]
    assert invocation.invocation_id == "inv-1"
    assert snake.eval_cases[0].session_input is not None
    assert snake.eval_cases[0].session_input.state == {"room": "Bedroom"}
    assert snake.eval_cases[1].conversation_scenario is not None
    assert snake.eval_cases[1].conversation_scenario.starting_prompt == "Hello"


def test_dump_writes_snake_case() -> None:
    dumped = EvalSet.model_validate(CAMEL).model_dump(mode="json", exclude_none=True)
    keys = all_keys(dumped)
    assert {"eval_set_id", "eval_cases", "eval_id", "user_content", "final_response", "tool_uses"} <= keys
    assert {"session_input", "app_name", "rubric_content", "text_property", "conversation_scenario"} <= keys
    assert not {k for k in keys if any(c.isupper() for c in k)}
    assert dumped["eval_cases"][0]["conversation"][0]["intermediate_data"]["intermediate_responses"] == [
        ["sub_agent", [{"text": "working"}]]
    ]


def _eval_files() -> list[Path]:
    return sorted(p for p in (TEST_DATA / "adk").rglob("*.json") if p.name.endswith((".evalset.json", ".test.json")))


@pytest.mark.parametrize("file", _eval_files(), ids=lambda p: p.name)
def test_round_trip(file: Path, tmp_path: Path) -> None:
    loaded = load_eval_set(file)
    dumped = loaded.model_dump(mode="json", exclude_none=True)
    assert EvalSet.model_validate(dumped) == loaded
    copy = tmp_path / "copy.evalset.json"
    copy.write_text(json.dumps(dumped), encoding="utf-8")
    assert load_eval_set(copy) == loaded


def test_round_trip_snake_case_fixture() -> None:
    model = EvalSet.model_validate(SNAKE)
    assert EvalSet.model_validate_json(model.model_dump_json(exclude_none=True)) == model


@pytest.mark.parametrize(
    ("status", "value"),
    [(EvalStatus.PASSED, 1), (EvalStatus.FAILED, 2), (EvalStatus.NOT_EVALUATED, 3), (EvalStatus.INFORMATIONAL, 4)],
)
def test_eval_status_integers(status: EvalStatus, value: int) -> None:
    assert status.value == value
    assert EvalStatus(value) is status
    assert json.dumps(status) == str(value)


def test_eval_case_needs_exactly_one_conversation_kind() -> None:
    conversation = SNAKE["eval_cases"][0]["conversation"]
    scenario = SNAKE["eval_cases"][1]["conversation_scenario"]
    for payload in (
        {"eval_id": "x"},
        {"eval_id": "x", "conversation": conversation, "conversation_scenario": scenario},
    ):
        with pytest.raises(ValidationError, match="exactly one of 'conversation' or 'conversation_scenario'"):
            EvalCase.model_validate(payload)


@pytest.mark.parametrize(
    "criteria",
    [
        {"response_match_score": 0.7, "tool_trajectory_avg_score": 1},
        {"response_match_score": {"threshold": 0.7}, "tool_trajectory_avg_score": {"threshold": 1.0}},
    ],
)
def test_eval_config_bare_threshold_or_object(criteria: dict[str, Any]) -> None:
    config = EvalConfig.model_validate({"criteria": criteria})
    assert {name: c.threshold for name, c in config.criteria.items()} == {
        "response_match_score": 0.7,
        "tool_trajectory_avg_score": 1.0,
    }
    metrics = config.eval_metrics()
    assert [(m.metric_name, m.effective_threshold) for m in metrics] == [
        (name, config.criteria[name].threshold) for name in criteria
    ]


def test_eval_config_defaults() -> None:
    config = EvalConfig()
    assert {name: c.threshold for name, c in config.criteria.items()} == DEFAULT_CRITERIA
    assert DEFAULT_CRITERIA == {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}
    assert config.custom_metrics is None


def test_eval_config_custom_metric_path() -> None:
    config = EvalConfig.model_validate(
        {
            "criteria": {"my_metric": {"threshold": 0.5}},
            "customMetrics": {"my_metric": {"codeConfig": {"name": "pkg.module.fn"}}},
        }
    )
    [metric] = config.eval_metrics()
    assert (metric.metric_name, metric.custom_function_path, metric.effective_threshold) == (
        "my_metric",
        "pkg.module.fn",
        0.5,
    )
    assert (
        EvalConfig.model_validate({"criteria": {"a": 1}}).fingerprint()
        == EvalConfig.model_validate({"criteria": {"a": {"threshold": 1}}}).fingerprint()
    )


@pytest.mark.parametrize(
    "criterion",
    [{"threshold": 1.0, "match_type": "IN_ORDER"}, {"threshold": 1.0, "matchType": "IN_ORDER"}],
)
def test_eval_metric_option_reads_snake_and_camel(criterion: dict[str, Any]) -> None:
    [metric] = EvalConfig.model_validate({"criteria": {"tool_trajectory_avg_score": criterion}}).eval_metrics()
    assert metric.option("match_type") == "IN_ORDER"
    assert metric.option("ignore_args", False) is False
    assert metric.option("ignore_args") is None


def test_eval_metric_threshold_fallback() -> None:
    assert EvalMetric(metric_name="m", threshold=0.3).effective_threshold == 0.3
    assert EvalMetric(metric_name="m").effective_threshold is None
    assert EvalMetric(metric_name="m").option("match_type", "EXACT") == "EXACT"
    metric = EvalMetric.model_validate({"metricName": "m", "threshold": 0.3, "criterion": {"threshold": 0.9}})
    assert metric.effective_threshold == 0.9


def test_content_hash() -> None:
    first = EvalSet.model_validate(SNAKE)
    assert content_hash(first) == content_hash(EvalSet.model_validate(CAMEL))
    assert len(content_hash(first)) == 64
    changed = json.loads(json.dumps(SNAKE))
    changed["eval_cases"][0]["conversation"][0]["final_response"]["parts"][0]["text"] = "Done!"
    assert content_hash(EvalSet.model_validate(changed)) != content_hash(first)
    assert content_hash({"a": 1, "b": [1, 2]}) == content_hash({"b": [1, 2], "a": 1})
    assert content_hash({"a": 1}) != content_hash({"a": 2})


@pytest.mark.parametrize(
    ("open_min", "open_max", "value", "inside"),
    [
        (False, False, 0.0, True),
        (False, False, 1.0, True),
        (True, False, 0.0, False),
        (True, False, 1.0, True),
        (False, True, 1.0, False),
        (False, True, 0.0, True),
        (True, True, 0.5, True),
        (True, True, 0.0, False),
        (False, False, -0.001, False),
        (False, False, 1.001, False),
    ],
)
def test_interval_contains(open_min: bool, open_max: bool, value: float, inside: bool) -> None:
    interval = Interval(min_value=0.0, max_value=1.0, open_at_min=open_min, open_at_max=open_max)
    assert interval.contains(value) is inside


def test_metric_info_default_interval() -> None:
    interval = MetricInfo(metric_name="m").metric_value_info.interval
    assert interval == Interval(min_value=0.0, max_value=1.0)


def test_tool_calls_of_both_shapes() -> None:
    first, second = FunctionCall(name="a", args={"x": 1}), FunctionCall(name="b")
    user = Content(role="user", parts=[Part(text="hi")])
    data = Invocation(user_content=user, intermediate_data=IntermediateData(tool_uses=[first, second]))
    events = Invocation.model_validate(
        {
            "userContent": {"role": "user", "parts": [{"text": "hi"}]},
            "intermediateData": {
                "invocationEvents": [
                    {
                        "author": "agent",
                        "content": {"parts": [{"text": "x"}, {"functionCall": {"name": "a", "args": {"x": 1}}}]},
                    },
                    {"author": "agent", "content": None, "branch": "ignored"},
                    {"author": "tool", "content": {"parts": [{"functionResponse": {"name": "a", "response": {}}}]}},
                    {"author": "agent", "content": {"parts": [{"function_call": {"name": "b"}}]}},
                ]
            },
        }
    )
    assert isinstance(events.intermediate_data, InvocationEvents)
    assert tool_calls_of(data) == tool_calls_of(events) == [first, second]
    assert tool_calls_of(Invocation(user_content=user)) == []


def test_content_text() -> None:
    assert content_text(Content(role="model", parts=[Part(text="a"), Part(text="b")])) == "a\nb"
    assert (
        content_text(Content(role="model", parts=[Part(text="a"), Part(function_call=FunctionCall(name="f"))])) == "a"
    )
    assert content_text(Content(role="model", parts=[])) == ""
    assert content_text(None) == ""
