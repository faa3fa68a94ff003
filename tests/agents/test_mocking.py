"""Tool mocks: which canned response answers which call."""

from __future__ import annotations

from agent_eval.agents.mocking import find_mock
from agent_eval.schema import EvalCase, ToolMock

MOCKS = [
    ToolMock(tool_name="get_weather", response={"temp": 20}),
    ToolMock(tool_name="get_weather", args={"city": "Paris"}, response={"temp": 25}),
    ToolMock(tool_name="get_weather", args={"city": "Oslo", "unit": "C"}, response={"temp": -3}),
]


def test_args_mock_wins_over_name_only() -> None:
    found = find_mock(MOCKS, "get_weather", {"city": "Paris", "unit": "C"})
    assert found is not None and found.response == {"temp": 25}


def test_every_given_arg_must_match() -> None:
    found = find_mock(MOCKS, "get_weather", {"city": "Oslo"})
    assert found is not None and found.response == {"temp": 20}  # unit missing: falls back to name-only
    found = find_mock(MOCKS, "get_weather", {"city": "Oslo", "unit": "C"})
    assert found is not None and found.response == {"temp": -3}


def test_numbers_compare_as_python_values() -> None:
    mocks = [ToolMock(tool_name="set_temperature", args={"temperature": 23}, response="ok")]
    found = find_mock(mocks, "set_temperature", {"temperature": 23.0, "location": "x"})
    assert found is not None and found.response == "ok"


def test_no_mock_for_other_tools_or_unmatched_args() -> None:
    assert find_mock(MOCKS, "set_temperature", {}) is None
    assert find_mock(MOCKS[1:], "get_weather", {"city": "Rome"}) is None
    assert find_mock(MOCKS, "get_weather", None) is not None


def test_cases_carry_mocks_in_snake_or_camel_case() -> None:
    case = EvalCase.model_validate(
        {
            "evalId": "c",
            "conversation": [{"userContent": {"parts": [{"text": "hi"}]}}],
            "toolMocks": [{"toolName": "get_weather", "args": {"city": "Paris"}, "response": {"temp": 25}}],
        }
    )
    assert case.tool_mocks == [MOCKS[1]]
