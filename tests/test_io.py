"""`agent_eval.io`: every real ADK file loads unchanged; broken files give one-line errors naming what is wrong."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from agent_eval.errors import EvalInputError
from agent_eval.io import find_config_file, load_eval_config, load_eval_set, load_eval_sets
from agent_eval.schema import IntermediateData, content_text, tool_calls_of
from tests.conftest import TEST_DATA

ADK_DATA = TEST_DATA / "adk"
EVAL_FILES = sorted(p for p in ADK_DATA.rglob("*.json") if p.name.endswith((".evalset.json", ".test.json")))
CONFIG_FILES = sorted(ADK_DATA.rglob("test_config.json"))


def rel(path: Path) -> str:
    return path.relative_to(ADK_DATA).as_posix()


def test_data_folder_has_files() -> None:
    assert len(EVAL_FILES) >= 9
    assert len(CONFIG_FILES) >= 5


def test_data_folder_is_inside_the_repository_with_every_file_sourced() -> None:
    repository = Path(__file__).resolve().parents[1]
    data_files = [p for p in TEST_DATA.rglob("*") if p.is_file() and p.name != "README.md"]
    assert [p for p in data_files if not p.resolve().is_relative_to(repository / "tests" / "data")] == []
    sources = (TEST_DATA / "README.md").read_text(encoding="utf-8")
    unsourced = [p.relative_to(TEST_DATA).as_posix() for p in data_files if p.name not in sources]
    assert len(data_files) >= 20
    assert unsourced == []


def test_no_test_reads_files_outside_the_repository() -> None:
    repository = TEST_DATA.parents[1]
    outside = ("..", "shared")  # the sibling folder the tests once read
    needles = ["/".join(outside), f'"{outside[1]}" / "data"', "AGENT_EVAL_" + "SHARED_DATA"]
    sources = [*(repository / "tests").rglob("*.py"), *(repository / "benchmarks").rglob("*.py")]
    readers = [p.name for p in sources if any(needle in p.read_text(encoding="utf-8") for needle in needles)]
    assert readers == []


@pytest.mark.parametrize("file", EVAL_FILES, ids=rel)
def test_every_adk_eval_file_loads(file: Path) -> None:
    eval_set = load_eval_set(file)
    assert eval_set.eval_set_id
    assert len(eval_set.eval_cases) >= 1
    for case in eval_set.eval_cases:
        assert (case.conversation is None) != (case.conversation_scenario is None)


def test_legacy_list_file() -> None:
    eval_set = load_eval_set(ADK_DATA / "home_automation_agent/simple_test2.test.json")
    assert eval_set.eval_set_id == "simple_test2"
    [case] = eval_set.eval_cases
    assert case.eval_id == "simple_test2"
    assert case.session_input is None
    [invocation] = case.conversation or []
    assert content_text(invocation.user_content) == "Turn off device_3 in the Bedroom."
    assert invocation.user_content.role == "user"
    [call] = tool_calls_of(invocation)
    assert call.name == "set_device_info"
    assert call.args == {"location": "Bedroom", "device_id": "device_3", "status": "OFF"}
    assert content_text(invocation.final_response) == "I have set the device_3 status to off."


def test_legacy_file_picks_up_initial_session() -> None:
    eval_set = load_eval_set(ADK_DATA / "trip_planner_agent/trip_inquiry.test.json")
    [case] = eval_set.eval_cases
    assert case.session_input is not None
    assert case.session_input.app_name == "trip_planner_agent"
    assert case.session_input.user_id == "test_user"
    assert case.session_input.state["origin"] == "San Francisco"
    conversation = case.conversation or []
    assert len(conversation) == 2
    assert tool_calls_of(conversation[0]) == []
    assert [(c.name, c.args) for c in tool_calls_of(conversation[1])] == [
        ("transfer_to_agent", {"agent_name": "indentify_agent"})
    ]


def test_conversation_scenario_file() -> None:
    eval_set = load_eval_set(ADK_DATA / "conversation_scenario/conversation_scenario.test.json")
    [case] = eval_set.eval_cases
    assert case.eval_id == "CS-1"
    assert case.conversation is None
    assert case.conversation_scenario is not None
    assert case.conversation_scenario.starting_prompt == "Hello"
    assert case.session_input is None


def test_null_laden_file_loads() -> None:
    eval_set = load_eval_set(ADK_DATA / "home_automation_agent/test_files/dependent_tool_calls.test.json")
    [case] = eval_set.eval_cases
    conversation = case.conversation or []
    assert len(conversation) == 2
    assert all(isinstance(i.intermediate_data, IntermediateData) for i in conversation)
    assert all(content_text(i.user_content) for i in conversation)


def test_load_directory_recursive_and_deterministic() -> None:
    first = load_eval_sets(ADK_DATA)
    second = load_eval_sets(ADK_DATA)
    assert len(first) == len(EVAL_FILES)
    ids = [s.eval_set_id for s in first]
    assert ids == [s.eval_set_id for s in second]
    assert len(set(ids)) == len(ids)
    # legacy sets are named by their path relative to the folder, without the suffix
    assert "home_automation_agent/simple_test2" in ids
    assert "trip_planner_agent/trip_inquiry" in ids
    # the EvalSet-format file of the same name keeps its own id
    assert "e141f90b-9e7e-4f06-94d7-bbe7e8080ead" in ids


def test_legacy_ids_are_relative_paths(tmp_path: Path) -> None:
    source = ADK_DATA / "home_automation_agent/simple_test2.test.json"
    (tmp_path / "test_files").mkdir()
    shutil.copy(source, tmp_path / "simple_test2.test.json")
    shutil.copy(source, tmp_path / "test_files/simple_test2.test.json")
    eval_sets = load_eval_sets(tmp_path)
    assert [s.eval_set_id for s in eval_sets] == ["simple_test2", "test_files/simple_test2"]
    assert [s.eval_cases[0].eval_id for s in eval_sets] == ["simple_test2", "test_files/simple_test2"]
    # the same two files named one by one clash: the message says which id
    with pytest.raises(EvalInputError, match="eval_set_id 'simple_test2' is already used by"):
        load_eval_sets([tmp_path / "simple_test2.test.json", tmp_path / "test_files/simple_test2.test.json"])


def test_case_selection() -> None:
    file = ADK_DATA / "live_non_blocking_tool_agent/live_non_blocking_tool_agent.evalset.json"
    assert [c.eval_id for c in load_eval_set(file).eval_cases] == [
        "background_task_scenario",
        "background_task_scripted",
    ]
    [eval_set] = load_eval_sets(f"{file}:background_task_scripted")
    assert [c.eval_id for c in eval_set.eval_cases] == ["background_task_scripted"]
    [both] = load_eval_sets(f"{file}:background_task_scripted,background_task_scenario")
    assert [c.eval_id for c in both.eval_cases] == ["background_task_scenario", "background_task_scripted"]
    with pytest.raises(EvalInputError) as caught:
        load_eval_sets(f"{file}:no_such_case")
    message = str(caught.value)
    assert message.startswith(str(file))
    assert "no case 'no_such_case'" in message
    assert "background_task_scripted" in message


def test_case_selection_of_an_id_with_slashes() -> None:
    file = ADK_DATA / "home_automation_agent/test_files/dependent_tool_calls.test.json"
    case_id = "tests/integration/fixture/home_automation_agent/test_files/dependent_tool_calls.test.json"
    [eval_set] = load_eval_sets(f"{file}:{case_id}")
    assert [c.eval_id for c in eval_set.eval_cases] == [case_id]


@pytest.mark.parametrize("file", CONFIG_FILES, ids=rel)
def test_every_adk_config_loads(file: Path) -> None:
    raw = json.loads(file.read_text(encoding="utf-8"))
    config = load_eval_config(file)
    assert set(config.criteria) == set(raw["criteria"])
    for name, value in raw["criteria"].items():
        expected = value if isinstance(value, float | int) else value["threshold"]
        assert config.criteria[name].threshold == expected


def test_config_forms_and_default(tmp_path: Path) -> None:
    file = tmp_path / "test_config.json"
    file.write_text(
        json.dumps(
            {
                "criteria": {
                    "tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "IN_ORDER"},
                    "response_match_score": 0.8,
                },
                "user_simulator_config": {"model": "gemini-2.5-flash", "max_allowed_invocations": 10},
            }
        )
    )
    config = load_eval_config(file)
    assert config.criteria["response_match_score"].threshold == 0.8
    trajectory = config.criteria["tool_trajectory_avg_score"]
    assert (trajectory.threshold, trajectory.model_extra) == (1.0, {"match_type": "IN_ORDER"})
    assert config.user_simulator_config == {"model": "gemini-2.5-flash", "max_allowed_invocations": 10}
    default = load_eval_config(None)
    assert {k: v.threshold for k, v in default.criteria.items()} == {
        "tool_trajectory_avg_score": 1.0,
        "response_match_score": 0.8,
    }
    assert find_config_file([tmp_path / "x.evalset.json"]) == file
    assert find_config_file([ADK_DATA / "conversation_scenario"]) == ADK_DATA / "conversation_scenario/test_config.json"


def test_demo_eval_set(demo_dir: Path) -> None:
    eval_set = load_eval_set(demo_dir / "home_automation.evalset.json")
    assert len(eval_set.eval_cases) >= 25
    assert any(len(c.conversation or []) > 1 for c in eval_set.eval_cases)


# --------------------------------------------------------------------------------------------------- errors
CONV = [{"user_content": {"role": "user", "parts": [{"text": "hi"}]}}]
SCENARIO = {"starting_prompt": "Hi", "conversation_plan": "Say hi"}


def eval_set(*cases: dict[str, Any]) -> str:
    return json.dumps({"eval_set_id": "broken", "eval_cases": list(cases)})


# (file content, the parts the one-line message must contain, in order)
BROKEN: list[tuple[str, str | bytes, list[str]]] = [
    ("invalid-json", '{"eval_set_id": "x",\n  "eval_cases": [}', ["invalid JSON at line 2 column 18"]),
    ("empty", "  \n", ["the file is empty"]),
    ("binary", b'{"eval_set_id": "\xff\xfe\x00"}', ["binary file, expected JSON, JSONL or CSV text"]),
    ("latin-1", b'{"eval_set_id": "caf\xe9"}', ["not UTF-8 text (byte 20)"]),
    ("top-level-number", "42", ["expected a JSON object or list, got int"]),
    (
        "both-kinds",
        eval_set(
            {"eval_id": "ok", "conversation": CONV},
            {"eval_id": "c-both", "conversation": CONV, "conversation_scenario": SCENARIO},
        ),
        ["case 'c-both'", "exactly one of 'conversation' or 'conversation_scenario' must be given"],
    ),
    ("neither-kind", eval_set({"eval_id": "c-none"}), ["case 'c-none'", "exactly one of 'conversation' or"]),
    (
        "duplicate-ids",
        eval_set({"eval_id": "d", "conversation": CONV}, {"eval_id": "d", "conversation": CONV}),
        ["case 'd'", "field 'eval_id'", "duplicate eval_id"],
    ),
    (
        "wrong-type",
        eval_set({"eval_id": "w", "conversation": "hello"}),
        ["case 'w'", "field 'conversation'", "input should be a valid list (got 'hello')"],
    ),
    (
        "deep-wrong-type",
        eval_set({"eval_id": "deep", "conversation": [{"user_content": {"parts": [{"text": 3}]}}]}),
        ["case 'deep'", "field 'conversation.0.user_content.parts.0.text'", "valid string (got 3)"],
    ),
    (
        "legacy-query",
        json.dumps([{"query": 1, "reference": "x"}]),
        ["case 'legacy-query'", "field '[0].query'", "'query' must be a string"],
    ),
    (
        "legacy-tool",
        json.dumps([{"query": "q", "expected_tool_use": [{"tool_input": {}}]}]),
        ["case 'legacy-tool'", "field '[0].expected_tool_use[0].tool_name'", "is required but missing"],
    ),
]


@pytest.mark.parametrize(("name", "content", "parts"), BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_eval_file(tmp_path: Path, name: str, content: str | bytes, parts: list[str]) -> None:
    file = tmp_path / f"{name}.test.json"
    if isinstance(content, bytes):
        file.write_bytes(content)
    else:
        file.write_text(content, encoding="utf-8")
    with pytest.raises(EvalInputError) as caught:
        load_eval_sets(tmp_path)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{file}: ")
    position = 0
    for part in parts:
        position = message.index(part, position)


def test_missing_eval_cases(tmp_path: Path) -> None:
    file = tmp_path / "x.evalset.json"
    file.write_text(json.dumps({"eval_set_id": "x"}))
    with pytest.raises(EvalInputError, match="is required but missing") as caught:
        load_eval_set(file)
    assert str(caught.value).startswith(f"{file}: field ")


@pytest.mark.parametrize(
    ("data", "field"),
    [({"eval_set_id": "x"}, "eval_cases"), ({"eval_set_id": "x", "eval_cases": [{"conversation": []}]}, "eval_id")],
)
def test_missing_field_named_in_snake_case(tmp_path: Path, data: dict[str, Any], field: str) -> None:
    file = tmp_path / "x.evalset.json"
    file.write_text(json.dumps(data))
    with pytest.raises(EvalInputError) as caught:
        load_eval_set(file)
    assert caught.value.field == field
    assert f"field '{field}': is required but missing" in str(caught.value)


def test_missing_paths(tmp_path: Path) -> None:
    with pytest.raises(EvalInputError, match=r"nope\.evalset\.json: no such file or directory$"):
        load_eval_sets(tmp_path / "nope.evalset.json")
    with pytest.raises(EvalInputError, match=r"nope\.evalset\.json: no such file$"):
        load_eval_set(tmp_path / "nope.evalset.json")
    (tmp_path / "readme.json").write_text("{}")
    with pytest.raises(EvalInputError) as caught:
        load_eval_sets(tmp_path)
    assert str(caught.value) == f"{tmp_path}: no eval files (*.evalset.json, *.test.json, *.jsonl, *.csv) found"


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (
            {"criteria": {"x": 1}, "bogus": 2},
            "field 'bogus': unknown key 'bogus'; accepted keys: budget, criteria, custom_metrics, judge, limits, "
            "pricing, regression, user_simulator_config",
        ),
        ({"critera": {"x": 1}}, "field 'critera': unknown key 'critera' (did you mean 'criteria'?)"),
        (
            {"criteria": {"x": "high"}},
            "field 'criteria.x': expected a threshold (a number) or an object with 'threshold' and options, got 'high'",
        ),
        ({"criteria": {"x": {"threshold": "a"}}}, "field 'criteria.x.threshold': input should be a valid number"),
        ([1], "expected a JSON object with 'criteria'"),
    ],
)
def test_broken_config(tmp_path: Path, config: Any, expected: str) -> None:
    file = tmp_path / "test_config.json"
    file.write_text(json.dumps(config))
    with pytest.raises(EvalInputError) as caught:
        load_eval_config(file)
    assert str(caught.value).startswith(f"{file}: ")
    assert expected in str(caught.value)
