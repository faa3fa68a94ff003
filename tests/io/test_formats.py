"""Every input format: ADK-Rust test files and eval sets, Vertex datasets (JSONL, CSV, JSON, DataFrame), globs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from agent_eval.errors import EvalInputError
from agent_eval.io import eval_set_from_dataframe, load_eval_set, load_eval_sets, write_eval_set
from agent_eval.schema import EvalSet, content_text, tool_calls_of
from tests.conftest import TEST_DATA

RUST_TEST_FILE: dict[str, Any] = {
    "eval_set_id": "weather_tests",
    "name": "Weather",
    "description": "ADK-Rust style",
    "eval_cases": [
        {
            "eval_id": "nyc",
            "description": "asks for NYC weather",
            "tags": ["smoke", "weather"],
            "conversation": [
                {
                    "invocation_id": "inv_1",
                    "user_content": {"parts": [{"text": "Weather in NYC?"}], "role": "user"},
                    "final_response": {"parts": [{"text": "Sunny, 22 degrees."}], "role": "model"},
                    "intermediate_data": {
                        "tool_uses": [
                            {"name": "get_weather", "args": {"location": "NYC"}, "expected_response": {"temp": 22}}
                        ],
                        "intermediate_responses": [{"parts": [{"text": "Looking it up"}], "role": "model"}],
                    },
                }
            ],
            "session_input": {"app_name": "weather", "user_id": "u1", "state": {"unit": "C"}},
        }
    ],
}


def _write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_adk_rust_test_file_maps_onto_adk(tmp_path: Path) -> None:
    eval_set = load_eval_set(_write(tmp_path / "weather.test.json", RUST_TEST_FILE))

    [case] = eval_set.eval_cases
    assert (case.description, case.tags) == ("asks for NYC weather", ["smoke", "weather"])
    [turn] = case.conversation or []
    [call] = tool_calls_of(turn)
    assert (call.name, call.args) == ("get_weather", {"location": "NYC"})
    data = turn.intermediate_data
    assert data is not None and not hasattr(data, "invocation_events")
    assert [(r.name, r.response) for r in data.tool_responses] == [("get_weather", {"temp": 22})]
    [(author, parts)] = data.intermediate_responses
    assert (author, parts[0].text) == ("model", "Looking it up")
    assert case.session_input is not None and case.session_input.state == {"unit": "C"}


def test_adk_rust_untagged_function_parts(tmp_path: Path) -> None:
    data = json.loads(json.dumps(RUST_TEST_FILE))
    data["eval_cases"][0]["conversation"][0]["final_response"]["parts"].insert(
        0, {"name": "get_weather", "args": {"location": "NYC"}}
    )
    [turn] = load_eval_set(_write(tmp_path / "w.test.json", data)).eval_cases[0].conversation or []

    assert turn.final_response is not None and turn.final_response.parts is not None
    function_call = turn.final_response.parts[0].function_call
    assert function_call is not None and function_call.name == "get_weather"
    assert content_text(turn.final_response) == "Sunny, 22 degrees."


def test_adk_rust_eval_set_pulls_in_its_test_files(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    _write(tmp_path / "tests" / "weather.test.json", RUST_TEST_FILE)
    second = json.loads(json.dumps(RUST_TEST_FILE))
    second["eval_cases"][0]["eval_id"] = "paris"
    _write(tmp_path / "tests" / "paris.json", second)
    inline = json.loads(json.dumps(RUST_TEST_FILE))["eval_cases"][0] | {"eval_id": "inline"}
    suite = {"eval_set_id": "suite", "name": "Suite", "test_files": ["tests/weather.test.json", "tests/paris.json"],
             "eval_cases": [inline]}  # fmt: skip

    eval_set = load_eval_set(_write(tmp_path / "suite.evalset.json", suite))

    assert eval_set.eval_set_id == "suite"
    assert [c.eval_id for c in eval_set.eval_cases] == ["inline", "nyc", "paris"]


def test_adk_rust_eval_set_with_a_missing_test_file(tmp_path: Path) -> None:
    suite = _write(tmp_path / "suite.evalset.json", {"eval_set_id": "s", "test_files": ["nope.test.json"]})

    with pytest.raises(
        EvalInputError, match=r"suite\.evalset\.json: field 'test_files\[0\]': no such test file 'nope\.test\.json'$"
    ):
        load_eval_set(suite)


VERTEX_ROWS = [
    {
        "prompt": "Turn off device_2",
        "reference": "Device 2 is off.",
        "response": "device 2 is now off",
        "reference_trajectory": [{"tool_name": "set_device_info", "tool_input": {"device_id": "device_2"}}],
        "predicted_trajectory": [{"tool_name": "set_device_info", "tool_input": {"device_id": "device_3"}}],
    },
    {"prompt": "Hello", "reference": "Hi!", "reference_trajectory": []},
]


def _check_vertex(eval_set: EvalSet) -> None:
    first, second = eval_set.eval_cases
    assert (first.eval_id, second.eval_id) == ("row_0001", "row_0002")
    [expected] = first.conversation or []
    assert content_text(expected.user_content) == "Turn off device_2"
    assert content_text(expected.final_response) == "Device 2 is off."
    assert [(c.name, c.args) for c in tool_calls_of(expected)] == [("set_device_info", {"device_id": "device_2"})]
    [actual] = first.actual_conversation or []
    assert content_text(actual.final_response) == "device 2 is now off"
    assert [(c.name, c.args) for c in tool_calls_of(actual)] == [("set_device_info", {"device_id": "device_3"})]
    assert second.actual_conversation is None
    assert tool_calls_of((second.conversation or [])[0]) == []


def test_vertex_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in VERTEX_ROWS) + "\n\n", encoding="utf-8")

    eval_set = load_eval_set(path)

    assert eval_set.eval_set_id == "rows.jsonl"
    _check_vertex(eval_set)


def test_vertex_json_list_and_forced_format(tmp_path: Path) -> None:
    _check_vertex(load_eval_set(_write(tmp_path / "rows.json", VERTEX_ROWS)))
    _check_vertex(load_eval_set(_write(tmp_path / "rows2.json", VERTEX_ROWS), format="vertex"))


def test_vertex_csv_with_json_string_trajectories(tmp_path: Path) -> None:
    frame = pd.DataFrame(VERTEX_ROWS)
    for column in ("reference_trajectory", "predicted_trajectory"):
        frame[column] = [json.dumps(v) if isinstance(v, list) else "" for v in frame[column]]
    frame["response"] = frame["response"].fillna("")
    path = tmp_path / "rows.csv"
    frame.to_csv(path, index=False)

    _check_vertex(load_eval_set(path))


def test_vertex_dataframe() -> None:
    _check_vertex(eval_set_from_dataframe(pd.DataFrame(VERTEX_ROWS), "frame"))


def test_vertex_tool_input_given_as_json_string(tmp_path: Path) -> None:
    rows = [{"prompt": "p", "reference_trajectory": '[{"tool_name": "t", "tool_input": "{\\"a\\": 1}"}]'}]
    [case] = load_eval_set(_write(tmp_path / "r.json", rows)).eval_cases
    assert [(c.name, c.args) for c in tool_calls_of((case.conversation or [])[0])] == [("t", {"a": 1})]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{"prompt": "p", "reference_trajectory": "[{bad json"}], "case 'row_0001': field 'reference_trajectory'"),
        ([{"prompt": "p", "predicted_trajectory": '{"tool_name": "t"}'}], "expected a list of {tool_name"),
        ([{"prompt": "p", "reference_trajectory": [{"tool_input": {}}]}], "field 'reference_trajectory[0].tool_name'"),
        ([{"prompt": 3, "reference": "r"}], "field 'prompt': expected text, got int"),
        ([{"id": "a", "prompt": "x"}, {"id": "a", "prompt": "y"}], "case 'a': field 'eval_id': duplicate eval_id"),
    ],
)
def test_bad_vertex_rows(tmp_path: Path, rows: list[dict[str, Any]], message: str) -> None:
    path = _write(tmp_path / "bad.json", rows)
    with pytest.raises(EvalInputError) as caught:
        load_eval_set(path, format="vertex")
    assert str(caught.value).startswith(str(path))
    assert message in str(caught.value)


def test_csv_without_vertex_columns(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    path.write_text("question,answer\nq,a\n", encoding="utf-8")
    with pytest.raises(EvalInputError, match=r"no Vertex columns in the header \['question', 'answer'\]"):
        load_eval_set(path)


def test_jsonl_bad_line_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"prompt": "a"}\n{"prompt": \n', encoding="utf-8")
    with pytest.raises(EvalInputError, match=r"invalid JSON at line 2 column 12"):
        load_eval_set(path)


def test_oversized_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_EVAL_MAX_INPUT_MB", "0.001")
    path = _write(tmp_path / "big.evalset.json", {"eval_set_id": "x" * 2000, "eval_cases": []})
    with pytest.raises(EvalInputError, match=r"the file is 0\.0 MB, over the 0\.001 MB limit"):
        load_eval_set(path)


def test_every_vertex_data_file_loads() -> None:
    files = sorted((TEST_DATA / "vertex").iterdir())
    eval_sets = load_eval_sets([str(f) for f in files])
    assert [s.eval_set_id for s in eval_sets] == [f.name for f in files]
    with_predictions = {s.eval_set_id for s in eval_sets if all(c.actual_conversation for c in s.eval_cases)}
    assert with_predictions == {"vertex_docs_on_device_trajectory_example.json"}


def test_globs_and_folders_are_sorted_and_deterministic(tmp_path: Path) -> None:
    for name in ("b.evalset.json", "a.evalset.json"):
        data = json.loads(json.dumps(RUST_TEST_FILE)) | {"eval_set_id": name.split(".")[0]}
        _write(tmp_path / name, data)
    _write(tmp_path / "c.jsonl", {"prompt": "x"})
    (tmp_path / "test_config.json").write_text('{"criteria": {}}', encoding="utf-8")

    by_glob = [s.eval_set_id for s in load_eval_sets(str(tmp_path / "*.evalset.json"))]
    by_folder = [s.eval_set_id for s in load_eval_sets(tmp_path)]

    assert by_glob == ["a", "b"]
    assert by_folder == ["a", "b", "c.jsonl"]
    with pytest.raises(EvalInputError, match=r"the pattern matches no file"):
        load_eval_sets(str(tmp_path / "*.nothing"))


ADK_FILES = sorted(p for p in (TEST_DATA / "adk").rglob("*.json") if p.name.endswith((".evalset.json", ".test.json")))


@pytest.mark.parametrize("file", ADK_FILES, ids=lambda p: p.name)
def test_adk_round_trip_gives_an_equal_model(file: Path, tmp_path: Path) -> None:
    loaded = load_eval_set(file)

    written = write_eval_set(loaded, tmp_path / "out.evalset.json")
    reloaded = load_eval_set(written)

    assert reloaded == loaded
    assert '"eval_cases"' in written.read_text(encoding="utf-8")  # snake_case on disk, as ADK writes
    assert "null" not in written.read_text(encoding="utf-8")


def test_csv_cells_larger_than_the_csv_modules_default_limit_load(tmp_path: Path) -> None:
    path = tmp_path / "huge_cell.csv"
    path.write_text("prompt,reference\n" + "a" * 200_000 + ",b\n", encoding="utf-8")

    [case] = load_eval_set(path).eval_cases

    assert len(content_text((case.conversation or [])[0].user_content)) == 200_000
