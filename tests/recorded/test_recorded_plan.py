"""Planning a run of recorded traffic (no fixture, no Prefect): the default criteria, references by case id."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from agent_eval.io.recorded import RecordedSource
from agent_eval.plan.eval_plan import (
    RECORDED_DEFAULT_METRICS,
    EvalRequest,
    prepare,
    recorded_default_config,
    with_references,
)
from agent_eval.schema import EvalCase, EvalSet, Invocation, RecordedOrigin, Rubric, SessionInput

EFFICIENCY = ["tool_call_count_v1", "inference_call_count_v1", "token_usage_v1", "invocation_duration_v1"]


def invocation(user: str, answer: str) -> Invocation:
    return Invocation.model_validate(
        {
            "invocation_id": f"e-{user}",
            "user_content": {"role": "user", "parts": [{"text": user}]},
            "final_response": {"role": "model", "parts": [{"text": answer}]},
        }
    )


def recorded_case(eval_id: str) -> EvalCase:
    return EvalCase(
        eval_id=eval_id,
        actual_conversation=[invocation("hi", "hello")],
        recorded=RecordedOrigin(sources=[f"spans.jsonl:{eval_id}"]),
    )


def session_document(session_id: str) -> dict[str, Any]:
    """An ADK session as the api_server returns it: one turn."""
    return {
        "id": session_id,
        "appName": "shop",
        "userId": "u-1",
        "state": {"cart": 2},
        "events": [
            {
                "invocationId": "e-1",
                "author": "user",
                "content": {"role": "user", "parts": [{"text": "hi"}]},
                "timestamp": 1_700_000_000.0,
            },
            {
                "invocationId": "e-1",
                "author": "shop_agent",
                "content": {"role": "model", "parts": [{"text": "hello"}]},
                "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 2},
                "modelVersion": "gemini-2.5-flash",
                "timestamp": 1_700_000_001.0,
            },
        ],
    }


def write_json(path: Path, document: Any) -> Path:
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def reference_file(tmp_path: Path) -> Path:
    reference = EvalSet(
        eval_set_id="regression",
        eval_cases=[
            EvalCase(eval_id="s-1", conversation=[invocation("hi", "hello")]),
            EvalCase(eval_id="s-unseen", conversation=[invocation("bye", "goodbye")]),
        ],
    )
    path = tmp_path / "regression.evalset.json"
    path.write_text(reference.model_dump_json(exclude_none=True), encoding="utf-8")
    return path


def test_default_config_is_the_efficiency_metrics_and_adks_defaults_with_references() -> None:
    plain = recorded_default_config(with_references=False)
    referenced = recorded_default_config(with_references=True)

    assert list(RECORDED_DEFAULT_METRICS) == EFFICIENCY
    assert [(m.metric_name, m.effective_threshold) for m in plain.eval_metrics()] == [(n, None) for n in EFFICIENCY]
    assert [(m.metric_name, m.effective_threshold) for m in referenced.eval_metrics()] == [
        ("tool_trajectory_avg_score", 1.0),
        ("response_match_score", 0.8),
        *[(n, None) for n in EFFICIENCY],
    ]


def test_a_request_needs_paths_or_recorded_traffic() -> None:
    with pytest.raises(ValidationError, match="give eval files"):
        EvalRequest()


def test_prepare_recorded_sessions_without_config(tmp_path: Path) -> None:
    session = write_json(tmp_path / "session.json", session_document("s-1"))

    plan = prepare(EvalRequest(recorded=RecordedSource(paths=[str(session)])))

    assert plan.agent.reference == "replay"
    assert [metric.metric_name for metric, _ in plan.metrics] == EFFICIENCY
    assert [group.files for group in plan.config_groups()] == [{"session": None}]
    assert plan.notes == ("recorded input: 1 turn(s) in 1 session(s), 0 skipped",)
    (eval_set,) = plan.eval_sets
    assert eval_set.eval_set_id == "session"
    (case,) = eval_set.eval_cases
    assert case.eval_id == "s-1" and case.conversation is None
    assert case.recorded is not None and case.recorded.state == {"cart": 2}


def test_prepare_with_references_matches_cases_by_id_and_adds_adks_defaults(tmp_path: Path) -> None:
    session = write_json(tmp_path / "session.json", [session_document("s-1"), session_document("s-2")])
    reference = reference_file(tmp_path)

    plan = prepare(EvalRequest(paths=[str(reference)], recorded=RecordedSource(paths=[str(session)])))

    assert [(m.metric_name, m.effective_threshold) for m, _ in plan.metrics][:2] == [
        ("tool_trajectory_avg_score", 1.0),
        ("response_match_score", 0.8),
    ]
    cases = {case.eval_id: case for case in plan.eval_sets[0].eval_cases}
    assert sorted(cases) == ["s-1", "s-2"]
    assert cases["s-1"].conversation == [invocation("hi", "hello")]
    assert cases["s-1"].actual_conversation is not None  # still the recorded turns
    assert cases["s-2"].conversation is None  # no reference of that id
    assert plan.notes[-1] == "1 reference case(s) have no recorded session of the same id"


def test_prepare_with_a_config_uses_only_that_config(tmp_path: Path) -> None:
    session = write_json(tmp_path / "session.json", session_document("s-1"))

    plan = prepare(
        EvalRequest(
            recorded=RecordedSource(paths=[str(session)]),
            config={"criteria": {"token_usage_v1": {}}},
        )
    )

    assert [metric.metric_name for metric, _ in plan.metrics] == ["token_usage_v1"]


def test_with_references_copies_conversation_and_rubrics_and_counts_the_unmatched() -> None:
    rubric = Rubric.model_validate({"rubric_id": "r1", "rubric_content": {"text_property": "polite"}})
    reference = EvalCase(eval_id="a", conversation=[invocation("hi", "hello")], rubrics=[rubric])
    scenario = EvalCase.model_validate(
        {"eval_id": "b", "conversation_scenario": {"starting_prompt": "hi", "conversation_plan": "say hi"}}
    )
    recorded = EvalSet(eval_set_id="traces", eval_cases=[recorded_case("a"), recorded_case("b"), recorded_case("c")])

    joined, unmatched = with_references(
        recorded,
        [
            EvalSet(eval_set_id="r1", eval_cases=[reference, scenario]),
            EvalSet(eval_set_id="r2", eval_cases=[EvalCase(eval_id="zz", conversation=[invocation("x", "y")])]),
        ],
    )

    cases = {case.eval_id: case for case in joined.eval_cases}
    assert unmatched == 1  # "zz"
    assert cases["a"].conversation == reference.conversation and cases["a"].rubrics == [rubric]
    assert cases["a"].recorded == recorded_case("a").recorded
    assert cases["b"].conversation is None  # a scenario gives no expected invocations
    assert cases["c"] == recorded_case("c")


def test_with_references_copies_the_session_input_as_documented() -> None:
    session_input = SessionInput(app_name="shop", user_id="u-1", state={"cart": 2})
    reference = EvalCase(eval_id="a", conversation=[invocation("hi", "hello")], session_input=session_input)

    joined, _ = with_references(
        EvalSet(eval_set_id="t", eval_cases=[recorded_case("a")]), [EvalSet(eval_set_id="r", eval_cases=[reference])]
    )

    assert joined.eval_cases[0].session_input == session_input


def test_recorded_traffic_options_on_eval_files_are_refused_not_ignored(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agent_eval.cli import main

    eval_file = next((data_dir / "adk").rglob("*.evalset.json"))

    code = main(["run", str(eval_file), "--since", "24h", "--service", "shop", "--agent", "replay"])

    assert code == 2
    assert capsys.readouterr().err.strip() == (
        "agent-eval: error: field 'paths': --since, --service: only for recorded traffic (span files, ADK sessions)"
    )


def test_eval_files_beside_an_initial_session_are_eval_files_not_recorded_traffic(data_dir: Path) -> None:
    """ADK's legacy format keeps `initial.session.json` (a session with no event) beside the eval files."""
    from agent_eval.io.recorded import detect_recorded_format

    initial = data_dir / "adk" / "trip_planner_agent" / "initial.session.json"

    assert detect_recorded_format(data_dir / "adk") is None
    assert detect_recorded_format(initial) is None  # a session without events is no traffic
