"""`agent-eval run` on recorded traffic and `agent-eval import-sessions`, as a user runs them: the console script in
a subprocess, on the spans and sessions the real emitters recorded (`tests/recorded/emitters.py`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_eval.cli import main
from agent_eval.io.recorded import RecordedSource, load_recorded
from agent_eval.schema import EvalCase, EvalStatus
from agent_eval.store.engine import new_engine
from agent_eval.store.queries import case_scores, list_runs, load_case_records, metric_means
from agent_eval.store.reports import load_report
from tests.conftest import REPO_ROOT
from tests.recorded.emitters import APP_NAME, USER_ID, Fixtures

# Per turn (prompt + output tokens of its model calls), from the emitter's script (`SESSIONS`).
WEATHER_TURNS = [(101 + 11) + (152 + 12), 203 + 13]  # 276, 216
DEVICES_TURNS = [(254 + 24) + (305 + 15)]  # 598


def agent_eval(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """The console script, with a store and a Prefect home of this test's own, on the session's Prefect server
    when one runs (a temporary server of its own costs ~15 s), else on Prefect's temporary server."""
    from prefect.settings import PREFECT_API_URL

    env = {key: value for key, value in os.environ.items() if key != "PREFECT_API_URL"}
    if PREFECT_API_URL.value():
        env["PREFECT_API_URL"] = str(PREFECT_API_URL.value())
    env["AGENT_EVAL_PREFECT_SERVER"] = "ephemeral"
    env["AGENT_EVAL_DB_URL"] = f"sqlite:///{tmp_path / 'store.db'}"
    env["PREFECT_HOME"] = str(tmp_path / "prefect")
    return subprocess.run(
        [sys.executable, "-m", "agent_eval.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO_ROOT,
        env=env,
        check=False,
    )


def cases_of_spans(spans: Path) -> dict[str, EvalCase]:
    """The recorded cases of a span file, read in this process (where each case was recorded)."""
    loaded = load_recorded(RecordedSource(paths=[str(spans)]))
    return {case.eval_id: case for case in loaded.eval_set.eval_cases}


def output_of(done: subprocess.CompletedProcess[str]) -> str:
    return f"--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-4000:]}"


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_server")
def test_run_on_spans_without_content_scores_efficiency_and_fails_the_broken_session(
    recorded: Fixtures, tmp_path: Path
) -> None:
    spans = recorded.traces_jsonl("adk2-nocontent")

    done = agent_eval("run", str(spans), tmp_path=tmp_path)

    assert done.returncode == 1, output_of(done)
    assert "Traceback" not in done.stderr, output_of(done)
    assert "Total: 3  Passed: 2  Failed: 1" in done.stdout
    assert "agent: replay" in done.stdout
    assert "Input: recorded input: 4 turn(s) in 3 session(s), 0 skipped" in done.stdout
    assert f"  FAIL traces/s-broken  (recorded at {spans}:" in done.stdout
    agent_error = next(line for line in done.stdout.splitlines() if "agent error:" in line)
    assert "the recorded session failed: turn 1:" in agent_error
    assert "ConnectionError: hub hub-1 is unreachable" in agent_error
    content_lines = [line for line in done.stderr.splitlines() if "content not captured in 3 session(s)" in line]
    assert len(content_lines) == 1, output_of(done)
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY" in content_lines[0]

    engine = new_engine(f"sqlite:///{tmp_path / 'store.db'}")
    (stored,) = list_runs(engine)
    assert (stored.status, stored.total, stored.passed, stored.failed) == ("completed", 3, 2, 1)
    assert stored.agent_reference == "replay" and stored.eval_set_ids == ["traces"]
    records = {record.eval_id: record for record in load_case_records(stored.id, engine)}
    assert sorted(records) == ["s-broken", "s-devices", "s-weather"]
    assert records["s-broken"].status == EvalStatus.FAILED and records["s-broken"].error_kind == "agent"
    assert records["s-broken"].error is not None and "ConnectionError" in records["s-broken"].error
    assert {eval_id: record.token_usage for eval_id, record in records.items()} == {
        eval_id: {
            "input_tokens": tokens_in,
            "output_tokens": tokens_out,
            "total_tokens": tokens_in + tokens_out,
            "by_model": {"gemini-2.5-flash": {"calls": calls, "input_tokens": tokens_in, "output_tokens": tokens_out}},
        }
        for eval_id, (calls, tokens_in, tokens_out) in {
            "s-weather": (3, 456, 36),
            "s-devices": (2, 559, 39),  # its two model calls (spans), as s-weather has three and s-broken one
            "s-broken": (1, 356, 16),
        }.items()
    }
    assert [len(records[i].actual_invocations) for i in ("s-weather", "s-devices", "s-broken")] == [2, 1, 1]

    scores = {(s.eval_id, s.metric_name): s.score for s in case_scores(stored.id, engine)}
    # token_usage_v1: total tokens per turn, averaged over the case's turns (metrics/efficiency.py).
    assert scores[("s-weather", "token_usage_v1")] == sum(WEATHER_TURNS) / 2 == 246.0
    assert scores[("s-devices", "token_usage_v1")] == DEVICES_TURNS[0] == 598.0
    assert scores[("s-weather", "tool_call_count_v1")] == (1 + 0) / 2
    assert scores[("s-devices", "tool_call_count_v1")] == 2.0
    assert scores[("s-weather", "inference_call_count_v1")] == (2 + 1) / 2
    assert scores[("s-devices", "inference_call_count_v1")] == 2.0
    assert scores[("s-broken", "token_usage_v1")] is None  # a failed case run is not scored
    assert scores[("s-weather", "invocation_duration_v1")] is not None
    assert scores[("s-weather", "invocation_duration_v1")] > 0
    means = metric_means([stored.id], engine)[stored.id]
    assert means["token_usage_v1"] == (246.0 + 598.0) / 2 == 422.0
    assert means["tool_call_count_v1"] == 1.25
    assert means["inference_call_count_v1"] == 1.75
    assert "token_usage_v1           422.000" in done.stdout

    report = load_report(stored.id, engine)
    broken = next(case for case in report.cases if case.eval_id == "s-broken")
    origin = cases_of_spans(spans)["s-broken"].recorded
    assert origin is not None and origin.sources[0].startswith(f"{spans}:")
    assert broken.recorded_from == origin.sources


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_server")
def test_run_with_references_and_a_config_scores_the_reference_criteria(
    recorded: Fixtures, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from google.adk.evaluation.eval_case import EvalCase, IntermediateData, Invocation
    from google.adk.evaluation.eval_set import EvalSet
    from google.genai import types
    from rouge_score import rouge_scorer  # type: ignore[import-untyped]

    def turn(user: str, answer: str, *tools: tuple[str, dict[str, str]]) -> Invocation:
        return Invocation(
            user_content=types.Content(role="user", parts=[types.Part(text=user)]),
            final_response=types.Content(role="model", parts=[types.Part(text=answer)]),
            intermediate_data=IntermediateData(
                tool_uses=[types.FunctionCall(name=name, args=args) for name, args in tools]
            ),
        )

    devices_expected = "The lamp is on."
    reference = EvalSet(
        eval_set_id="regression",
        eval_cases=[
            EvalCase(
                eval_id="s-weather",
                conversation=[
                    turn(
                        "What is the weather in Paris?",
                        "It is sunny in Paris, 21°C.",
                        ("get_weather", {"city": "Paris"}),
                    ),
                    turn("Thanks!", "You're welcome."),
                ],
            ),
            EvalCase(
                eval_id="s-devices",
                conversation=[
                    turn(
                        "Turn on the lamp and the fan",
                        devices_expected,
                        ("set_device", {"device_id": "lamp", "status": "on"}),
                        ("set_device", {"device_id": "fan", "status": "on"}),
                    )
                ],
            ),
            EvalCase(eval_id="s-never-recorded", conversation=[turn("Hello", "Hi")]),
        ],
    )
    reference_file = tmp_path / "regression.evalset.json"
    reference_file.write_text(reference.model_dump_json(exclude_none=True), encoding="utf-8")
    config = tmp_path / "test_config.json"
    config.write_text(
        json.dumps({"criteria": {"response_match_score": 0.8, "tool_trajectory_avg_score": 1.0}}), encoding="utf-8"
    )
    spans = recorded.traces_jsonl("adk2-content")

    store = f"sqlite:///{tmp_path / 'store.db'}"

    # In this process, on the session's Prefect server: the subprocess path is the test above.
    code = main(["run", str(spans), "--reference", str(reference_file), "--config", str(config), "--db-url", store])

    stdout = capsys.readouterr().out
    assert code == 1, stdout
    assert "Total: 3  Passed: 1  Failed: 2" in stdout
    assert "Input: 1 reference case(s) have no recorded session of the same id" in stdout
    assert f"  FAIL traces/s-devices  (recorded at {spans}:" in stdout
    assert f"  FAIL traces/s-broken  (recorded at {spans}:" in stdout
    assert "FAIL traces/s-weather" not in stdout

    engine = new_engine(f"sqlite:///{tmp_path / 'store.db'}")
    (stored,) = list_runs(engine)
    statuses = {r.eval_id: EvalStatus(r.status) for r in load_case_records(stored.id, engine)}
    assert statuses == {"s-weather": EvalStatus.PASSED, "s-devices": EvalStatus.FAILED, "s-broken": EvalStatus.FAILED}
    scores = {(s.eval_id, s.metric_name): s.score for s in case_scores(stored.id, engine)}
    assert set(name for _, name in scores) == {"response_match_score", "tool_trajectory_avg_score"}
    assert scores[("s-weather", "response_match_score")] == 1.0
    assert scores[("s-weather", "tool_trajectory_avg_score")] == 1.0
    assert scores[("s-devices", "tool_trajectory_avg_score")] == 1.0
    rouge = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)
    expected = rouge.score(devices_expected, "The lamp and the fan are on.")["rouge1"].fmeasure
    assert expected == pytest.approx(6 / 11)  # 3 shared words of 4 and 7
    assert scores[("s-devices", "response_match_score")] == pytest.approx(expected)
    assert scores[("s-broken", "response_match_score")] is None
    assert "response_match_score: score 0.545 < threshold 0.8" in stdout


def test_import_sessions_writes_what_adk_reads_and_bad_input_writes_nothing(recorded: Fixtures, tmp_path: Path) -> None:
    from google.adk.evaluation.eval_set import EvalSet

    output = tmp_path / "out" / "prod.evalset.json"

    done = agent_eval(
        "import-sessions", str(recorded.sessions_json("adk2-content")), "-o", str(output), tmp_path=tmp_path
    )

    assert done.returncode == 0, output_of(done)
    assert f"Wrote 2 case(s) to {output}" in done.stdout
    assert "agent-eval: left out 1 failed session(s): s-broken" in done.stdout
    written = EvalSet.model_validate_json(output.read_text(encoding="utf-8"))
    assert written.eval_set_id == "prod"
    assert [case.eval_id for case in written.eval_cases] == ["s-devices", "s-weather"]
    weather = next(case for case in written.eval_cases if case.eval_id == "s-weather")
    assert weather.session_input is not None
    assert (weather.session_input.app_name, weather.session_input.user_id) == (APP_NAME, USER_ID)
    assert weather.session_input.state == {"home": "flat 3"}
    assert [(turn.user_content.parts or [])[0].text for turn in weather.conversation or []] == [
        "What is the weather in Paris?",
        "Thanks!",
    ]
    assert not (tmp_path / "store.db").exists()  # import-sessions does not touch the store

    not_recorded = tmp_path / "notes.txt"
    not_recorded.write_text("a file that is not recorded traffic\n", encoding="utf-8")
    refused = tmp_path / "refused.evalset.json"

    bad = agent_eval("import-sessions", str(not_recorded), "-o", str(refused), tmp_path=tmp_path)

    assert bad.returncode == 2, output_of(bad)
    assert bad.stdout == ""
    (line,) = bad.stderr.strip().splitlines()
    assert line == f"agent-eval: error: {not_recorded}: not recorded traffic: neither OTLP spans nor ADK sessions"
    assert not refused.exists()
    assert not refused.with_name(refused.name + ".tmp").exists()
