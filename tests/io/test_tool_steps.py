"""`agent_eval.io.tool_steps`: `[{tool_name, tool_input}]` steps read strictly, errors naming file, case, field."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from agent_eval.errors import EvalInputError
from agent_eval.io import eval_set_from_dataframe
from agent_eval.io.tool_steps import calls_from_steps
from agent_eval.schema import tool_calls_of

WHERE: dict[str, Any] = {"file": "data.jsonl", "case": "q1", "field": "predicted_trajectory"}


@pytest.mark.parametrize(
    ("steps", "calls"),
    [
        (None, []),
        ([], []),
        ("[]", []),
        ([{"tool_name": "t"}], [{"name": "t", "args": {}}]),
        ([{"tool_name": "t", "tool_input": None}], [{"name": "t", "args": {}}]),
        ([{"tool_name": "t", "tool_input": '{"a": 1}', "tool_output": "x"}], [{"name": "t", "args": {"a": 1}}]),
        ('[{"tool_name": "t", "tool_input": {"a": [1]}}]', [{"name": "t", "args": {"a": [1]}}]),
    ],
)
def test_well_formed_steps(steps: Any, calls: list[dict[str, Any]]) -> None:
    assert calls_from_steps(steps, **WHERE, json_strings=True) == calls


@pytest.mark.parametrize(
    ("steps", "field", "message"),
    [
        ("[{", "predicted_trajectory", "not valid JSON (Expecting property name enclosed in double quotes"),
        ({"tool_name": "t"}, "predicted_trajectory", "expected a list of {tool_name, tool_input}, got dict"),
        ([["t", {}]], "predicted_trajectory[0]", "expected an object {tool_name, tool_input}, got list ['t', {}]"),
        ([{"tool_name": "t"}, {"name": "u"}], "predicted_trajectory[1].tool_name", "is required but missing"),
        ([{"tool_name": 7}], "predicted_trajectory[0].tool_name", "(a non-empty string), got 7"),
        ([{"tool_name": "  "}], "predicted_trajectory[0].tool_name", "(a non-empty string), got '  '"),
        ([{"tool_name": "t", "tool_input": ""}], "predicted_trajectory[0].tool_input", "not valid JSON"),
        ([{"tool_name": "t", "tool_input": 0}], "predicted_trajectory[0].tool_input", "got 0"),
        ([{"tool_name": "t", "tool_input": False}], "predicted_trajectory[0].tool_input", "got False"),
        ([{"tool_name": "t", "tool_input": "[1]"}], "predicted_trajectory[0].tool_input", "got '[1]'"),
    ],
)
def test_malformed_steps_name_file_case_and_field(steps: Any, field: str, message: str) -> None:
    with pytest.raises(EvalInputError) as caught:
        calls_from_steps(steps, **WHERE, json_strings=True)
    assert (caught.value.file, caught.value.case, caught.value.field) == ("data.jsonl", "q1", field)
    assert message in caught.value.message
    assert str(caught.value).startswith(f"data.jsonl: case 'q1': field '{field}': ")


def test_without_json_strings_a_string_is_not_parsed() -> None:
    with pytest.raises(EvalInputError) as caught:
        calls_from_steps([{"tool_name": "t", "tool_input": '{"a": 1}'}], **WHERE)
    assert caught.value.message == """expected an object of arguments, got '{"a": 1}'"""


def test_dataframe_row_is_named_by_its_number() -> None:
    frame = pd.DataFrame(
        {
            "prompt": ["a", "b"],
            "predicted_trajectory": [[{"tool_name": "t", "tool_input": {}}], [{"tool_name": "t", "tool_input": []}]],
        }
    )
    with pytest.raises(EvalInputError) as caught:
        eval_set_from_dataframe(frame, "frame")
    assert str(caught.value) == (
        "<DataFrame frame>: case 'row_0002': field 'predicted_trajectory[0].tool_input': "
        "expected an object of arguments or a JSON string of one, got []"
    )


def test_dataframe_missing_trajectory_cell_is_no_prediction() -> None:
    frame = pd.DataFrame({"prompt": ["a", "b"], "predicted_trajectory": [None, '[{"tool_name": "t"}]']})
    first, second = eval_set_from_dataframe(frame, "frame").eval_cases
    assert first.actual_conversation is None
    assert [call.name for call in tool_calls_of((second.actual_conversation or [])[0])] == ["t"]
