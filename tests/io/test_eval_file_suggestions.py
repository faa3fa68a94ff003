"""Eval-file errors suggest the fix, as config errors do: a misspelled key is named with the closest allowed key
at its place (issue 33, item 4). Each test copies a real ADK eval file (tests/data/README.md) and changes a key."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_eval.cli import main
from agent_eval.errors import EvalInputError
from agent_eval.io import load_eval_set
from agent_eval.metrics.common import unknown_option_message
from agent_eval.schema import EvalSet, close_match
from tests.conftest import TEST_DATA

SIMPLE_TEST = TEST_DATA / "adk" / "home_automation_agent" / "test_files" / "simple_test.test.json"
SIMPLE_CASE = "tests/integration/fixture/home_automation_agent/test_files/simple_test.test.json"
SCENARIO_TEST = TEST_DATA / "adk" / "conversation_scenario" / "conversation_scenario.test.json"
INVOCATION_KEYS = (
    "app_details, creation_timestamp, duration, final_response, intermediate_data, invocation_id, "
    "model_duration, rubrics, tool_duration, user_content"
)

Edit = Callable[[dict[str, Any]], None]


def _rename(container: dict[str, Any], old: str, new: str) -> None:
    container[new] = container.pop(old)


def _first_turn(data: dict[str, Any]) -> dict[str, Any]:
    cases = data.get("eval_cases", data.get("evalCases"))
    assert isinstance(cases, list)
    turn = cases[0]["conversation"][0]
    assert isinstance(turn, dict)
    return turn


def _camel_case(data: dict[str, Any]) -> dict[str, Any]:
    """The file as ADK's models write it by alias: every field camelCase (`evalCases`, `finalResponse`)."""
    camel = EvalSet.model_validate(data).model_dump(mode="json", by_alias=True, exclude_none=True)
    assert "evalCases" in camel and "finalResponse" in _first_turn(camel)
    return camel


def _edited_copy(tmp_path: Path, source: Path, edit: Edit, *, camel: bool = False) -> Path:
    data = json.loads(source.read_text(encoding="utf-8"))
    data = _camel_case(data) if camel else copy.deepcopy(data)
    edit(data)
    file = tmp_path / source.name
    file.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return file


def _load_error(file: Path) -> str:
    with pytest.raises(EvalInputError) as caught:
        load_eval_set(file)
    return str(caught.value)


def _tool_calls(data: dict[str, Any]) -> None:
    _rename(_first_turn(data)["intermediate_data"], "tool_uses", "tool_calls")


def test_unknown_key_names_the_key_and_the_closest_allowed_one(tmp_path: Path) -> None:
    file = _edited_copy(tmp_path, SIMPLE_TEST, _tool_calls)

    assert _load_error(file) == (
        f"{file}: case {SIMPLE_CASE!r}: field 'conversation.0.intermediate_data.tool_calls': "
        "unknown key 'tool_calls' (did you mean 'tool_uses'?)"
    )


def test_missing_key_names_the_close_key_that_was_written(tmp_path: Path) -> None:
    file = _edited_copy(tmp_path, SIMPLE_TEST, lambda data: _rename(_first_turn(data), "user_content", "user_contents"))

    assert _load_error(file) == (
        f"{file}: case {SIMPLE_CASE!r}: field 'conversation.0.user_content': is required but missing: "
        "'user_contents' was written (did you mean 'user_content'?)"
    )


def test_camel_case_file_is_answered_in_camel_case(tmp_path: Path) -> None:
    file = _edited_copy(
        tmp_path, SIMPLE_TEST, lambda data: _rename(_first_turn(data), "finalResponse", "finalResponce"), camel=True
    )

    assert _load_error(file) == (
        f"{file}: case {SIMPLE_CASE!r}: field 'conversation.0.finalResponce': "
        "unknown key 'finalResponce' (did you mean 'finalResponse'?)"
    )


def test_camel_case_missing_key(tmp_path: Path) -> None:
    file = _edited_copy(
        tmp_path, SIMPLE_TEST, lambda data: _rename(_first_turn(data), "userContent", "userContents"), camel=True
    )

    assert _load_error(file) == (
        f"{file}: case {SIMPLE_CASE!r}: field 'conversation.0.user_content': is required but missing: "
        "'userContents' was written (did you mean 'userContent'?)"
    )


def test_one_word_key_follows_the_style_of_the_keys_beside_it(tmp_path: Path) -> None:
    file = _edited_copy(tmp_path, SIMPLE_TEST, lambda data: _rename(data, "evalCases", "evalcases"), camel=True)

    assert _load_error(file) == (
        f"{file}: field 'eval_cases': is required but missing: 'evalcases' was written (did you mean 'evalCases'?)"
    )


def test_top_level_typo(tmp_path: Path) -> None:
    file = _edited_copy(tmp_path, SCENARIO_TEST, lambda data: _rename(data, "eval_cases", "eval_case"))

    assert _load_error(file) == (
        f"{file}: field 'eval_cases': is required but missing: 'eval_case' was written (did you mean 'eval_cases'?)"
    )


def test_key_with_no_close_match_is_named_with_the_accepted_keys(tmp_path: Path) -> None:
    file = _edited_copy(tmp_path, SIMPLE_TEST, lambda data: _first_turn(data).update(expected_answer="x"))

    assert _load_error(file) == (
        f"{file}: case {SIMPLE_CASE!r}: field 'conversation.0.expected_answer': "
        f"unknown key 'expected_answer'; accepted keys: {INVOCATION_KEYS}"
    )


def test_a_key_already_written_is_not_suggested_for_a_leftover(tmp_path: Path) -> None:
    file = _edited_copy(tmp_path, SCENARIO_TEST, lambda data: data.update(eval_case=[]))

    assert _load_error(file) == (
        f"{file}: field 'eval_case': unknown key 'eval_case'; "
        "accepted keys: creation_timestamp, description, eval_cases, eval_set_id, name"
    )


def test_missing_key_without_a_close_one_written_is_only_missing(tmp_path: Path) -> None:
    file = _edited_copy(tmp_path, SIMPLE_TEST, lambda data: _rename(_first_turn(data), "user_content", "query"))

    assert _load_error(file) == (
        f"{file}: case {SIMPLE_CASE!r}: field 'conversation.0.user_content': is required but missing"
    )


@pytest.mark.parametrize(
    ("edit", "field", "message"),
    [
        (
            lambda data: _rename(_first_turn(data)["user_content"]["parts"][0], "text", "txt"),
            "conversation.0.user_content.parts.0.txt",
            "unknown key 'txt' (did you mean 'text'?)",
        ),
        (
            lambda data: _rename(_first_turn(data)["intermediate_data"]["tool_uses"][0], "name", "nme"),
            "conversation.0.intermediate_data.tool_uses.0.nme",
            "unknown key 'nme' (did you mean 'name'?)",
        ),
        (  # a list of (author, parts) pairs: through the tuple to the part
            lambda data: _first_turn(data)["intermediate_data"].update(intermediate_responses=[["a", [{"txt": "x"}]]]),
            "conversation.0.intermediate_data.intermediate_responses.0.1.0.txt",
            "unknown key 'txt' (did you mean 'text'?)",
        ),
        (  # intermediate data is one of two shapes: the other shape's keys are allowed keys too
            lambda data: _first_turn(data).update(intermediate_data={"invocation_event": []}),
            "conversation.0.intermediate_data.invocation_event",
            "unknown key 'invocation_event' (did you mean 'invocation_events'?)",
        ),
        (  # session_input allows extra keys: only the missing one is an error
            lambda data: data["eval_cases"][0].update(session_input={"app_nme": "home", "user_id": "u"}),
            "session_input.app_name",
            "is required but missing: 'app_nme' was written (did you mean 'app_name'?)",
        ),
    ],
    ids=["genai-part", "tool-use", "intermediate-response", "union", "extras-allowed"],
)
def test_nested_places(tmp_path: Path, edit: Edit, field: str, message: str) -> None:
    file = _edited_copy(tmp_path, SIMPLE_TEST, edit)

    assert _load_error(file) == f"{file}: case {SIMPLE_CASE!r}: field {field!r}: {message}"


def test_config_options_and_eval_files_share_the_rule() -> None:
    assert close_match("tool_calls", ["tool_uses", "tool_responses"]) == "tool_uses"
    assert close_match("finalResponce", ["final_response"]) == "finalResponse"
    assert close_match("banana", ["final_response"]) is None
    assert close_match("evalcases", ["eval_cases"], camel=True) == "evalCases"
    assert unknown_option_message("matchTyp", ["match_type", "threshold"]) == (
        "unknown option 'matchTyp' (did you mean 'matchType'?); accepted options: match_type, threshold"
    )


def test_cli_run_exits_2_with_the_suggestion_on_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CI", "1")  # no background process may start
    file = _edited_copy(tmp_path, SIMPLE_TEST, _tool_calls)
    store = tmp_path / "store.db"

    code = main(["run", str(file), "--agent", "no_such_module_xyz:agent", "--db-url", f"sqlite:///{store}"])

    captured = capsys.readouterr()
    assert code == 2
    assert captured.err.splitlines() == [
        f"agent-eval: error: {file}: case {SIMPLE_CASE!r}: field 'conversation.0.intermediate_data.tool_calls': "
        "unknown key 'tool_calls' (did you mean 'tool_uses'?)"
    ]
    assert not store.exists()  # nothing stored
