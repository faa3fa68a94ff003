"""Broken-input corpus: every malformed eval file, config, selection or agent reference is bad input.

Each case runs `agent-eval run` in process and expects the bad-input contract: exit code 2, exactly one line
`agent-eval: error: FILE: case 'ID': field 'F': message` on stderr naming what is wrong, no traceback, nothing
on stdout, the agent never called and nothing written (no store, no output folder). The files live under
`files/` (one folder per case that needs an eval file plus a config); the few large ones are generated in
`tmp_path`. A case that agent_eval does not reject properly is a strict xfail whose reason starts with `BUG:`.

As a guard, `agent_eval.flows` is replaced by a stub that fails the test if the flow is ever started, so a
broken input that slips through fails fast instead of starting Prefect.
"""

from __future__ import annotations

import os
import subprocess
import sys
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agent_eval.cli import main
from tests.broken import counting_agent

FILES = Path(__file__).resolve().parent / "files"
REPO_ROOT = Path(__file__).resolve().parents[2]
AGENT = "tests.broken.counting_agent:agent"
PREFIX = "agent-eval: error: "
MAX_MB_ENV = "AGENT_EVAL_MAX_INPUT_MB"


# ------------------------------------------------------------------------------ files generated in tmp_path
def _fifty_megabytes(tmp: Path) -> None:
    """A well-formed eval set of exactly 50 MB (twice the default 25 MB limit)."""
    head, tail = b'{"eval_set_id": "big", "description": "', b'", "eval_cases": []}\n'
    with (tmp / "big.evalset.json").open("wb") as file:
        file.write(head + b"x" * (50_000_000 - len(head) - len(tail)) + tail)


def _deeply_nested(tmp: Path) -> None:
    """200 KB of `[[[...]]]`: valid JSON syntax, nested deeper than the parser's recursion limit."""
    (tmp / "deep.evalset.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")


def _late_nul_csv(tmp: Path) -> None:
    """A Vertex CSV with a NUL byte after the first 8 KB."""
    rows = "".join(f"q{i},a{i}\n" for i in range(2_000))
    (tmp / "late_nul.csv").write_bytes(f"prompt,reference\n{rows}evil\x00prompt,b\n".encode())


# --------------------------------------------------------------------------------------------- the table
@dataclass(frozen=True)
class Broken:
    """One broken input.

    Attributes:
        id: the test id.
        paths: eval paths relative to `files/`; `{tmp}/...` is a file the `setup` writes into tmp_path.
        expect: substrings the single error line must contain (file name, case id, field, what was expected).
        config: `--config`, relative to `files/`.
        agent: `--agent`; `{files}` is the corpus folder.
        extra: more CLI arguments (`{tmp}` is tmp_path).
        env: environment variables set for the run.
        setup: writes generated files into tmp_path before the run.
        bug: when agent_eval mishandles the input: why (the case becomes a strict xfail).
    """

    id: str
    paths: tuple[str, ...]
    expect: tuple[str, ...]
    config: str | None = None
    agent: str = AGENT
    extra: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    setup: Callable[[Path], None] | None = None
    bug: str | None = None


CASES: list[Broken] = [
    # --- the file itself
    Broken("invalid_json", ("invalid_json.evalset.json",),
           ("invalid_json.evalset.json", "invalid JSON at line 3 column 18")),
    Broken("empty_file", ("empty.evalset.json",), ("empty.evalset.json", "empty")),
    Broken("whitespace_only", ("whitespace.evalset.json",), ("whitespace.evalset.json", "empty")),
    Broken("binary_nul_bytes", ("binary.evalset.json",), ("binary.evalset.json", "binary")),
    Broken("not_utf8", ("latin1.evalset.json",), ("latin1.evalset.json", "not UTF-8")),
    Broken("fifty_megabytes", ("{tmp}/big.evalset.json",),
           ("big.evalset.json", "50.0 MB", "25 MB limit", MAX_MB_ENV), setup=_fifty_megabytes),
    Broken("max_input_mb_not_a_number", ("ok/ok.evalset.json",), (MAX_MB_ENV, "lots"), env={MAX_MB_ENV: "lots"}),
    Broken("json_nested_too_deep", ("{tmp}/deep.evalset.json",), ("deep.evalset.json", "nested"),
           setup=_deeply_nested),
    Broken("json_number", ("number.evalset.json",), ("number.evalset.json", "expected a JSON object", "int")),
    Broken("json_string", ("string.evalset.json",), ("string.evalset.json", "expected a JSON object", "str")),
    # --- ADK EvalSet shape
    Broken("missing_eval_cases", ("no_eval_cases.evalset.json",),
           ("no_eval_cases.evalset.json", "field 'eval_cases'", "required")),
    Broken("eval_cases_not_a_list", ("eval_cases_object.evalset.json",),
           ("eval_cases_object.evalset.json", "field 'eval_cases'", "valid list")),
    Broken("case_without_eval_id", ("no_eval_id.evalset.json",),
           ("no_eval_id.evalset.json", "case '#0'", "field 'eval_id'", "required")),
    Broken("conversation_and_scenario", ("both_conversation_kinds.evalset.json",),
           ("both_conversation_kinds.evalset.json", "case 'both'",
            "exactly one of 'conversation' or 'conversation_scenario'")),
    Broken("neither_conversation_nor_scenario", ("no_conversation.evalset.json",),
           ("no_conversation.evalset.json", "case 'neither'",
            "exactly one of 'conversation' or 'conversation_scenario'")),
    Broken("duplicate_eval_id", ("duplicate_eval_id.evalset.json",),
           ("duplicate_eval_id.evalset.json", "case 'twice'", "field 'eval_id'", "duplicate")),
    Broken("conversation_is_a_string", ("conversation_string.evalset.json",),
           ("conversation_string.evalset.json", "case 'chat'", "field 'conversation'", "valid list", "'hello'")),
    Broken("user_content_is_a_number", ("user_content_int.evalset.json",),
           ("user_content_int.evalset.json", "case 'five'", "field 'conversation.0.user_content'",
            "valid dictionary", "got 5")),
    Broken("state_is_a_list", ("state_list.evalset.json",),
           ("state_list.evalset.json", "case 'stateful'", "field 'session_input.state'", "valid dictionary")),
    Broken("invocation_without_user_content", ("no_user_content.evalset.json",),
           ("no_user_content.evalset.json", "case 'mute'", "field 'conversation.0.user_content'", "required")),
    Broken("unknown_eval_set_key", ("unknown_set_key.evalset.json",),
           ("unknown_set_key.evalset.json", "field 'eval_case'", "unknown key 'eval_case'")),
    Broken("tool_args_is_a_string", ("tool_args_string.evalset.json",),
           ("tool_args_string.evalset.json", "case 'c1'", "field 'conversation.0.intermediate_data.tool_uses.0.args'",
            "valid dictionary")),
    Broken("tool_use_without_name", ("tool_use_without_name.evalset.json",),
           ("tool_use_without_name.evalset.json", "case 'c1'",
            "field 'conversation.0.intermediate_data.tool_uses.1.name'", "required but missing")),
    Broken("tool_uses_not_objects", ("tool_uses_not_objects.evalset.json",),
           ("tool_uses_not_objects.evalset.json", "case 'c1'", "field 'conversation.0.intermediate_data.tool_uses.0'",
            "valid dictionary", "'get_weather'")),
    Broken("event_function_call_without_name", ("event_call_without_name.evalset.json",),
           ("event_call_without_name.evalset.json", "case 'replayed'",
            "field 'actual_conversation.0.intermediate_data.invocation_events.0.content.parts.1.function_call.name'",
            "required but missing")),
    Broken("eval_cases_empty", ("eval_cases_empty.evalset.json",),
           ("eval_cases_empty.evalset.json", "field 'eval_cases'")),
    Broken("conversation_empty", ("conversation_empty.evalset.json",),
           ("conversation_empty.evalset.json", "case 'silent'", "field 'conversation'")),
    Broken("eval_set_id_loaded_twice", ("duplicate_set_id",), ("second.evalset.json", "eval_set_id", "'same'")),
    # --- ADK legacy lists
    Broken("legacy_row_without_query", ("legacy_no_query.test.json",),
           ("legacy_no_query.test.json", "case 'legacy_no_query'", "field '[1].query'", "'query' must be a string")),
    Broken("legacy_tool_use_without_tool_name", ("legacy_tool_without_name.test.json",),
           ("legacy_tool_without_name.test.json", "case 'legacy_tool_without_name'",
            "field '[0].expected_tool_use[0].tool_name'", "required but missing")),
    Broken("legacy_group_data_not_a_list", ("legacy_group_data_not_list.test.json",),
           ("legacy_group_data_not_list.test.json", "case 'grouped'", "field 'data'", "expected a list")),
    Broken("legacy_bad_initial_session", ("legacy_bad_session/lights.test.json",),
           ("initial.session.json", "JSON object")),
    Broken("legacy_empty_list", ("legacy_empty.test.json",), ("legacy_empty.test.json", "case 'legacy_empty'")),
    Broken("legacy_tool_input_string", ("legacy_tool_input_string.test.json",),
           ("legacy_tool_input_string.test.json", "field '[0].expected_tool_use[0].tool_input'")),
    Broken("legacy_tool_input_empty_list", ("legacy_tool_input_empty_list.test.json",),
           ("legacy_tool_input_empty_list.test.json", "case 'legacy_tool_input_empty_list'",
            "field '[0].expected_tool_use[0].tool_input'", "expected an object of arguments, got []")),
    Broken("legacy_tool_uses_not_objects", ("legacy_tool_uses_not_objects.test.json",),
           ("legacy_tool_uses_not_objects.test.json", "case 'legacy_tool_uses_not_objects'",
            "field '[0].expected_tool_use[0]'", "expected an object {tool_name, tool_input}, got str 'set_light'")),
    Broken("legacy_reference_number", ("legacy_reference_number.test.json",),
           ("legacy_reference_number.test.json", "case 'legacy_reference_number'", "field '[1].reference'",
            "must be a string, got 21")),
    # --- ADK-Rust eval sets
    Broken("rust_test_file_missing", ("rust_missing_test_file/suite.evalset.json",),
           ("suite.evalset.json", "field 'test_files[1]'", "no such test file 'missing_part.test.json'")),
    Broken("rust_test_files_not_a_list", ("rust_test_files_not_list/suite.evalset.json",),
           ("suite.evalset.json", "field 'test_files'", "list of file paths")),
    # --- Vertex AI datasets
    Broken("vertex_trajectory_not_json", ("vertex_trajectory_not_json.jsonl",),
           ("vertex_trajectory_not_json.jsonl", "case 'row_0001'", "field 'reference_trajectory'", "not valid JSON")),
    Broken("vertex_trajectory_is_an_object", ("vertex_trajectory_object.jsonl",),
           ("vertex_trajectory_object.jsonl", "case 'row_0001'", "field 'reference_trajectory'", "expected a list")),
    Broken("vertex_step_without_tool_name", ("vertex_step_without_tool_name.jsonl",),
           ("vertex_step_without_tool_name.jsonl", "case 'q1'", "field 'reference_trajectory[0].tool_name'",
            "required but missing")),
    Broken("vertex_tool_input_json_list", ("vertex_tool_input_list.jsonl",),
           ("vertex_tool_input_list.jsonl", "case 'q1'", "field 'predicted_trajectory[0].tool_input'", "object")),
    Broken("vertex_predicted_not_json", ("vertex_predicted_not_json.jsonl",),
           ("vertex_predicted_not_json.jsonl", "case 'row_0002'", "field 'predicted_trajectory'", "not valid JSON",
            "\"[{'tool_name': 'set_light'}]\"")),
    Broken("vertex_predicted_not_a_list", ("vertex_predicted_not_a_list.jsonl",),
           ("vertex_predicted_not_a_list.jsonl", "case 'q1'", "field 'predicted_trajectory'",
            "expected a list of {tool_name, tool_input}, got int 5")),
    Broken("vertex_predicted_not_objects", ("vertex_predicted_not_objects.jsonl",),
           ("vertex_predicted_not_objects.jsonl", "case 'q7'", "field 'predicted_trajectory[0]'",
            "expected an object {tool_name, tool_input}, got str 'get_weather'")),
    Broken("vertex_predicted_without_tool_name", ("vertex_predicted_without_tool_name.json",),
           ("vertex_predicted_without_tool_name.json", "case 'q1'", "field 'predicted_trajectory[1].tool_name'",
            "required but missing", "{'tool_input': {'room': 'hall'}}")),
    Broken("vertex_predicted_tool_name_empty", ("vertex_predicted_tool_name_empty.jsonl",),
           ("vertex_predicted_tool_name_empty.jsonl", "case 'q1'", "field 'predicted_trajectory[0].tool_name'",
            "(a non-empty string), got ''")),
    Broken("vertex_predicted_tool_input_text", ("vertex_predicted_tool_input_text.jsonl",),
           ("vertex_predicted_tool_input_text.jsonl", "case 'q1'", "field 'predicted_trajectory[0].tool_input'",
            "not valid JSON", "'off'")),
    Broken("vertex_predicted_tool_input_empty_list", ("vertex_predicted_tool_input_empty_list.jsonl",),
           ("vertex_predicted_tool_input_empty_list.jsonl", "case 'q1'", "field 'predicted_trajectory[0].tool_input'",
            "expected an object of arguments or a JSON string of one, got []")),
    Broken("vertex_predicted_tool_input_number_csv", ("vertex_predicted_tool_input_number.csv",),
           ("vertex_predicted_tool_input_number.csv", "case 'q2'", "field 'predicted_trajectory[0].tool_input'",
            "got 0")),
    Broken("vertex_jsonl_bad_line", ("vertex_bad_line.jsonl",),
           ("vertex_bad_line.jsonl", "invalid JSON at line 2")),
    Broken("vertex_jsonl_line_not_object", ("vertex_line_not_object.jsonl",),
           ("vertex_line_not_object.jsonl", "line 2", "list", "JSON object")),
    Broken("vertex_duplicate_ids", ("vertex_duplicate_ids.jsonl",),
           ("vertex_duplicate_ids.jsonl", "case 'q1'", "field 'eval_id'", "duplicate")),
    Broken("vertex_csv_no_vertex_columns", ("vertex_no_columns.csv",),
           ("vertex_no_columns.csv", "no Vertex columns", "prompt")),
    Broken("vertex_csv_bad_trajectory", ("vertex_bad_trajectory.csv",),
           ("vertex_bad_trajectory.csv", "case 'q1'", "field 'reference_trajectory'", "not valid JSON")),
    Broken("vertex_json_prompt_number", ("vertex_prompt_number.json",),
           ("vertex_prompt_number.json", "case 'q1'", "field 'prompt'", "expected text")),
    Broken("vertex_csv_nul_after_8kb", ("{tmp}/late_nul.csv",), ("late_nul.csv", "binary"), setup=_late_nul_csv),
    # --- paths and selections
    Broken("select_unknown_case", ("ok/ok.evalset.json:no_such_case",),
           ("ok.evalset.json", "no case 'no_such_case'", "greet")),
    Broken("select_nothing_after_colon", ("ok/ok.evalset.json:",), ("ok.evalset.json",)),
    Broken("path_does_not_exist", ("no_such_file.evalset.json",), ("no_such_file.evalset.json", "no such file")),
    Broken("folder_without_eval_files", ("no_eval_files",), ("no_eval_files", "no eval files")),
    Broken("glob_matches_nothing", ("nothing_*.evalset.json",), ("nothing_*.evalset.json", "matches no file")),
    # --- config (test_config.json beside the eval file, or --config)
    Broken("config_invalid_json", ("config_invalid_json",),
           ("config_invalid_json/test_config.json", "invalid JSON at line 1 column 43")),
    Broken("config_not_an_object", ("config_list",), ("config_list/test_config.json", "JSON object")),
    Broken("config_file_missing", ("ok/ok.evalset.json",), ("no_such_config.json", "no such file"),
           config="no_such_config.json"),
    Broken("config_unknown_criterion", ("config_unknown_metric/ok.evalset.json",),
           ("config_unknown_metric/test_config.json", "field 'criteria.response_match_scor'", "unknown metric",
            "known metrics:", "response_match_score", "tool_trajectory_avg_score"),
           config="config_unknown_metric/test_config.json"),
    Broken("config_threshold_out_of_range", ("config_threshold_out_of_range/ok.evalset.json",),
           ("config_threshold_out_of_range/test_config.json", "field 'criteria.response_match_score.threshold'",
            "1.5", "[0.0, 1.0]"),
           config="config_threshold_out_of_range/test_config.json"),
    Broken("config_threshold_string", ("config_threshold_string/ok.evalset.json",),
           ("config_threshold_string/test_config.json", "field 'criteria.response_match_score.threshold'",
            "valid number", "'high'"),
           config="config_threshold_string/test_config.json"),
    Broken("config_bare_threshold_string", ("config_bare_threshold_string/ok.evalset.json",),
           ("config_bare_threshold_string/test_config.json", "field 'criteria.response_match_score'", "number",
            "'high'"),
           config="config_bare_threshold_string/test_config.json"),
    Broken("config_threshold_missing", ("config_threshold_missing/ok.evalset.json",),
           ("config_threshold_missing/test_config.json", "field 'criteria.response_match_score.threshold'",
            "required"),
           config="config_threshold_missing/test_config.json"),
    Broken("config_informational_with_threshold", ("config_informational_threshold/ok.evalset.json",),
           ("config_informational_threshold/test_config.json", "field 'criteria.tool_call_count_v1.threshold'",
            "informational"),
           config="config_informational_threshold/test_config.json"),
    Broken("config_unknown_match_type", ("config_unknown_match_type/ok.evalset.json",),
           ("config_unknown_match_type/test_config.json", "field 'criteria.tool_trajectory_avg_score.match_type'",
            "'SOMETIMES'", "EXACT, IN_ORDER, ANY_ORDER"),
           config="config_unknown_match_type/test_config.json"),
    Broken("config_unknown_option", ("config_unknown_option/ok.evalset.json",),
           ("config_unknown_option/test_config.json", "field 'criteria.tool_trajectory_avg_score.match_typ'",
            "unknown option", "match_type"),
           config="config_unknown_option/test_config.json"),
    Broken("config_custom_metric_not_importable", ("config_custom_not_importable",),
           ("config_custom_not_importable/test_config.json", "field 'custom_metrics.my_metric.code_config.name'",
            "cannot import", "tests.broken.no_such_module")),
    Broken("config_custom_metric_no_function", ("config_custom_no_function",),
           ("config_custom_no_function/test_config.json", "field 'custom_metrics.my_metric.code_config.name'",
            "no function 'no_such_metric'")),
    Broken("config_unknown_top_level_key", ("config_unknown_key",),
           ("config_unknown_key/test_config.json", "field 'criterias'",
            "unknown key 'criterias'; accepted keys: budget, criteria, ")),
    Broken("config_explicit_path", ("config_explicit_path/ok.evalset.json",),
           ("strict.json", "field 'criteria.response_match_score.threshold'", "2.0", "[0.0, 1.0]"),
           config="config_explicit_path/strict.json"),
    # --- agent references
    Broken("agent_module_not_importable", ("ok",),
           ("field 'agent'", "cannot import", "tests.broken.no_such_agent_module"),
           agent="tests.broken.no_such_agent_module:agent"),
    Broken("agent_attribute_missing", ("ok",), ("field 'agent'", "no attribute 'no_such_attr'"),
           agent="tests.broken.counting_agent:no_such_attr"),
    Broken("agent_not_callable", ("ok",), ("field 'agent'", "NOT_CALLABLE", "not a callable"),
           agent="tests.broken.counting_agent:NOT_CALLABLE"),
    Broken("agent_file_raises_on_import", ("ok",), ("field 'agent'", "agent.py", "MODEL_API_KEY is not set"),
           agent="{files}/agent_raises/agent.py:root_agent"),
    Broken("agent_folder_raises_on_import", ("ok",), ("field 'agent'", "agent.py", "MODEL_API_KEY is not set"),
           agent="{files}/agent_raises"),
    Broken("agent_file_missing", ("ok",), ("field 'agent'", "no agent file", "missing_agent"),
           agent="{files}/missing_agent/agent.py:root_agent"),
    Broken("agent_reference_without_colon", ("ok",),
           ("field 'agent'", "'tests.broken.counting_agent'", "package.module:attr"),
           agent="tests.broken.counting_agent"),
    # --- side effects before the input is checked
    Broken("output_dir_not_created_on_bad_input", ("empty.evalset.json",), ("empty.evalset.json", "empty"),
           extra=("--output-dir", "{tmp}/out")),
]  # fmt: skip


def _params(cases: list[Broken]) -> list[Any]:
    return [
        pytest.param(case, id=case.id, marks=[pytest.mark.xfail(strict=True, reason=case.bug)] if case.bug else [])
        for case in cases
    ]


def _argv(case: Broken, tmp_path: Path) -> list[str]:
    """The `agent-eval` arguments of a case, with the store in tmp_path."""
    places = {"files": FILES, "tmp": tmp_path}
    paths = [p.format(**places) if p.startswith("{") else str(FILES / p) for p in case.paths]
    argv = ["run", *paths, "--agent", case.agent.format(**places), "--db-url", f"sqlite:///{tmp_path / 'store.db'}"]
    if case.config is not None:
        argv += ["--config", str(FILES / case.config)]
    return argv + [arg.format(**places) for arg in case.extra]


def _tree(folder: Path) -> set[Path]:
    return set(folder.rglob("*"))


def _check_error_line(stderr: str, expect: tuple[str, ...]) -> str:
    assert "Traceback" not in stderr, stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, f"expected exactly one line on stderr, got {len(lines)}:\n{stderr}"
    [line] = lines
    assert line.startswith(PREFIX), line
    missing = [text for text in expect if text not in line]
    assert not missing, f"{missing} not in the error line: {line}"
    return line


class FlowStartedError(AssertionError):
    """The evaluation flow was started: the broken input was accepted."""


def _flow_started(*args: object, **kwargs: object) -> None:
    raise FlowStartedError("bad input was accepted: the evaluation flow was started")


# ------------------------------------------------------------------------------------------------- tests
@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No flow can start, the agent's counter is zero, and the env changes of `main` are undone."""
    stub = types.ModuleType("agent_eval.flows")
    stub.agent_eval_flow = _flow_started  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "agent_eval.flows", stub)
    monkeypatch.delenv(MAX_MB_ENV, raising=False)
    monkeypatch.setitem(counting_agent.COUNTER, "calls", 0)
    environ = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(environ)


def test_corpus_is_large_and_ids_unique() -> None:
    ids = [case.id for case in CASES]
    assert len(ids) >= 35
    assert len(set(ids)) == len(ids)


@pytest.mark.parametrize("case", _params(CASES))
def test_broken_input_is_rejected(
    case: Broken, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    if case.setup is not None:
        case.setup(tmp_path)
    for name, value in case.env.items():
        monkeypatch.setenv(name, value)
    before = _tree(tmp_path)

    code = main(_argv(case, tmp_path))

    captured = capsys.readouterr()
    assert code == 2, captured.err
    _check_error_line(captured.err, case.expect)
    assert captured.out == ""
    assert counting_agent.COUNTER["calls"] == 0, "the agent was called"
    assert not (tmp_path / "store.db").exists(), "the store was written"
    assert _tree(tmp_path) == before, "something was written"


SUBPROCESS_CASES = ["invalid_json", "config_unknown_criterion", "agent_file_raises_on_import"]


def test_real_process_exits_2_with_one_line(tmp_path: Path) -> None:
    """`python -m agent_eval.cli` on three representative cases, run at once: exit 2, one line, no traceback."""
    by_id = {case.id: case for case in CASES}
    env = {k: v for k, v in os.environ.items() if k != MAX_MB_ENV}
    runs: list[tuple[str, Path, subprocess.Popen[str]]] = []
    for case_id in SUBPROCESS_CASES:
        folder = tmp_path / case_id
        folder.mkdir()
        command = [sys.executable, "-m", "agent_eval.cli", *_argv(by_id[case_id], folder)]
        process = subprocess.Popen(
            command, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        runs.append((case_id, folder, process))
    for case_id, folder, process in runs:
        try:
            out, err = process.communicate(timeout=120)
        finally:
            process.kill()
        assert process.returncode == 2, (case_id, err)
        _check_error_line(err, by_id[case_id].expect)
        assert out == "", (case_id, out)
        assert not (folder / "store.db").exists(), case_id
