"""Recorded traffic read as turns, checked against ADK's own reading of the same conversations.

The fixtures are made by the real emitters (`tests/recorded/emitters.py`): ADK's Runner under its two telemetry
schemas, with and without message content, and the google-genai instrumentor. ADK's session of each run is the
reference: `convert_session_to_eval_invocations` (the rule `adk eval` and ADK's web UI use) must give the same
turns from the session that we read from the spans. No Prefect here.
"""

from __future__ import annotations

import asyncio
import gzip
import io
import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agent_eval.agents.errors import AgentFailure
from agent_eval.agents.replay import ReplayAgent, recorded_token_usage
from agent_eval.errors import EvalInputError
from agent_eval.io.recorded import (
    CONTENT_SETTING,
    RecordedLoad,
    RecordedSource,
    detect_recorded_format,
    load_recorded,
    read_turns,
)
from agent_eval.io.recorded.export import adk_eval_set, write_adk_eval_set
from agent_eval.io.recorded.otlp import read_spans
from agent_eval.io.recorded.traces import group_traces
from agent_eval.metrics import REGISTRY
from agent_eval.metrics.common import NO_REFERENCE_FOR_RECORDED
from agent_eval.metrics.scoring import score_case_run
from agent_eval.schema import EvalCase, EvalMetric, EvalStatus, ModelUsage, TokenUsage
from tests.recorded.emitters import APP_NAME, SESSIONS, USER_ID, Fixtures

SESSION_IDS = ["s-broken", "s-devices", "s-weather"]
CONTENT_VARIANTS = ["adk2-content", "legacy-content"]
NO_CONTENT_VARIANTS = ["adk2-nocontent", "legacy-nocontent"]
SCRIPTED = {session.id: session for session in SESSIONS}


# ---------------------------------------------------------------------------------------------------- helpers
def adk_invocations(sessions_file: Path) -> dict[str, list[dict[str, Any]]]:
    """ADK's own turns of each session of an api_server JSON file, dumped as JSON."""
    from google.adk.cli.utils.evals import convert_session_to_eval_invocations
    from google.adk.sessions import Session

    documents = json.loads(sessions_file.read_text(encoding="utf-8"))
    documents = documents if isinstance(documents, list) else [documents]
    converted = {}
    for document in documents:
        session = Session.model_validate(document)
        converted[session.id] = [dump(invocation) for invocation in convert_session_to_eval_invocations(session)]
    return converted


def dump(invocation: Any) -> dict[str, Any]:
    """An invocation (ours or ADK's) as JSON, without None fields."""
    dumped: dict[str, Any] = invocation.model_dump(mode="json", exclude_none=True)
    return dumped


def load(*paths: Path, **options: Any) -> RecordedLoad:
    return load_recorded(RecordedSource(paths=[str(path) for path in paths], **options))


def cases_of(loaded: RecordedLoad) -> dict[str, EvalCase]:
    return {case.eval_id: case for case in loaded.eval_set.eval_cases}


def turns_of(case: EvalCase) -> list[dict[str, Any]]:
    return [dump(invocation) for invocation in case.actual_conversation or []]


def text(content: dict[str, Any] | None) -> str | None:
    """The text parts of a content, joined; None when it has none."""
    texts = [part["text"] for part in (content or {}).get("parts") or [] if part.get("text")]
    return "".join(texts) if texts else None


def _parts(invocation: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    events = (invocation.get("intermediate_data") or {}).get("invocation_events") or []
    return [part[kind] for event in events for part in (event.get("content") or {}).get("parts") or [] if kind in part]


def calls(invocation: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool calls of a turn, in order: name, args, id (None when absent)."""
    return [
        {"name": c.get("name"), "args": c.get("args"), "id": c.get("id")} for c in _parts(invocation, "function_call")
    ]


def responses(invocation: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool responses of a turn, in order: name, id, response."""
    return [
        {"name": r.get("name"), "id": r.get("id"), "response": r.get("response")}
        for r in _parts(invocation, "function_response")
    ]


def tokens(invocation: dict[str, Any]) -> tuple[int, int]:
    """(prompt, candidates) tokens summed over the turn's events."""
    events = (invocation.get("intermediate_data") or {}).get("invocation_events") or []
    usages = [event["usage_metadata"] for event in events if event.get("usage_metadata")]
    return (
        sum(usage.get("prompt_token_count") or 0 for usage in usages),
        sum(usage.get("candidates_token_count") or 0 for usage in usages),
    )


def scripted_tokens(session_id: str) -> tuple[int, int]:
    """The tokens the emitter's script reported for a whole session."""
    replies = SCRIPTED[session_id].replies
    return sum(r.prompt_tokens for r in replies), sum(r.output_tokens for r in replies)


def session_tokens(case: EvalCase) -> tuple[int, int]:
    per_turn = [tokens(turn) for turn in turns_of(case)]
    return sum(p for p, _ in per_turn), sum(c for _, c in per_turn)


def without_failing_tool_id(session_id: str, expected_calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """ADK's calls as the spans can give them: the tool that raised (s-broken's reboot_hub) has no id on its span
    (ADK writes `<not specified>`), so ours is None; ADK's session has the model's call id."""
    if session_id != "s-broken":
        return expected_calls
    assert [c["name"] for c in expected_calls] == ["reboot_hub"]
    assert str(expected_calls[0]["id"]).startswith("adk-")
    return [{**c, "id": None} for c in expected_calls]


def event_kind(event: dict[str, Any]) -> str:
    """`call` (function calls), `response` (function responses) or `model` (a model call without calls)."""
    parts = (event.get("content") or {}).get("parts") or []
    if any("function_call" in part for part in parts):
        return "call"
    return "response" if any("function_response" in part for part in parts) else "model"


def event_shapes(invocation: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    """Each event's kind, author and model version, in order."""
    events = (invocation.get("intermediate_data") or {}).get("invocation_events") or []
    return [(event_kind(event), event["author"], event.get("model_version")) for event in events]


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


# ---------------------------------------------------------------------------------------- 1. trace parity
@pytest.mark.parametrize("variant", CONTENT_VARIANTS)
def test_turns_from_spans_equal_adks_conversion_of_the_same_sessions(recorded: Fixtures, variant: str) -> None:
    expected = adk_invocations(recorded.sessions_json(variant))
    cases = cases_of(load(recorded.traces_jsonl(variant)))

    assert sorted(cases) == sorted(expected) == SESSION_IDS
    for session_id, adk_turns in expected.items():
        ours = turns_of(cases[session_id])
        assert len(ours) == len(adk_turns) == len(SCRIPTED[session_id].turns), session_id
        for index, (mine, theirs) in enumerate(zip(ours, adk_turns, strict=True)):
            where = f"{variant} {session_id} turn {index + 1}"
            assert mine["invocation_id"] == theirs["invocation_id"], where
            assert text(mine["user_content"]) == text(theirs["user_content"]) is not None, where
            assert text(mine.get("final_response")) == text(theirs.get("final_response")), where
            assert calls(mine) == without_failing_tool_id(session_id, calls(theirs)), where
            assert responses(mine) == responses(theirs), where
            assert tokens(mine) == tokens(theirs), where
            assert event_shapes(mine) == event_shapes(theirs), where
        assert session_tokens(cases[session_id]) == scripted_tokens(session_id)

    # The comparison above is not vacuous: what ADK itself recorded.
    weather, devices = expected["s-weather"], expected["s-devices"]
    assert calls(weather[0]) == [{"name": "get_weather", "args": {"city": "Paris"}, "id": calls(weather[0])[0]["id"]}]
    assert responses(weather[0])[0]["response"] == {"city": "Paris", "sky": "sunny", "temperature_c": 21}
    assert text(weather[0]["final_response"]) == "It is sunny in Paris, 21°C."
    assert [c["id"] for c in calls(devices[0])] == ["call-lamp", "call-fan"]
    assert [r["id"] for r in responses(devices[0])] == ["call-lamp", "call-fan"]
    assert [tokens(turn) for turn in weather] == [(253, 23), (203, 13)]
    assert "final_response" not in expected["s-broken"][0]
    assert responses(expected["s-broken"][0]) == []


@pytest.mark.parametrize("variant", CONTENT_VARIANTS)
def test_protobuf_spans_give_the_same_cases_as_json_lines(recorded: Fixtures, variant: str) -> None:
    from_json = load(recorded.traces_jsonl(variant)).eval_set.eval_cases
    from_proto = load(recorded.traces_binpb(variant)).eval_set.eval_cases

    def comparable(case: EvalCase) -> dict[str, Any]:
        return case.model_dump(mode="json", exclude={"recorded": {"sources"}})

    assert [comparable(case) for case in from_proto] == [comparable(case) for case in from_json]
    assert len(from_proto) == 3
    for case in from_proto:
        assert case.recorded is not None
        assert all(source.startswith(f"{recorded.traces_binpb(variant)}#") for source in case.recorded.sources)


def test_recorded_origin_of_traces_names_service_agent_lines_and_the_failure(recorded: Fixtures) -> None:
    path = recorded.traces_jsonl("adk2-content")
    cases = cases_of(load(path))

    weather = cases["s-weather"].recorded
    assert weather is not None
    assert (weather.service, weather.agent_name, weather.content_captured) == ("home-service", "home_agent", True)
    assert len(weather.sources) == 2  # one per turn: FILE:LINE of its first span
    assert all(source.startswith(f"{path}:") and source.rsplit(":", 1)[1].isdigit() for source in weather.sources)
    assert (weather.app_name, weather.user_id, weather.error) == (None, None, None)
    broken = cases["s-broken"].recorded
    assert broken is not None and broken.error is not None
    assert broken.error.startswith("turn 1: ")
    assert "ConnectionError: hub hub-1 is unreachable" in broken.error


# ------------------------------------------------------------------------------------ 2. legacy tokens once
def test_legacy_tokens_are_counted_once_though_call_llm_and_generate_content_both_carry_them(
    recorded: Fixtures,
) -> None:
    path = recorded.traces_jsonl("legacy-content")
    spans = list(read_spans([path], lambda skipped: None))
    with_usage = [span.name for span in spans if "gen_ai.usage.input_tokens" in span.attributes]
    assert with_usage.count("call_llm") == with_usage.count("generate_content gemini-2.5-flash") == 6

    cases = cases_of(load(path))

    weather = cases["s-weather"]
    assert session_tokens(weather) == (456, 36) == scripted_tokens("s-weather")
    assert [tokens(turn) for turn in turns_of(weather)] == [(253, 23), (203, 13)]
    model_events = [
        event
        for turn in turns_of(weather)
        for event in turn["intermediate_data"]["invocation_events"]
        if event.get("usage_metadata")
    ]
    assert len(model_events) == 3  # three model calls, not six
    assert recorded_token_usage(weather.actual_conversation or []) == TokenUsage(
        input_tokens=456,
        output_tokens=36,
        total_tokens=492,
        by_model={"gemini-2.5-flash": ModelUsage(calls=3, input_tokens=456, output_tokens=36)},  # the 3 calls' model
    )
    assert session_tokens(cases["s-devices"]) == (559, 39)
    assert session_tokens(cases["s-broken"]) == (356, 16)


# -------------------------------------------------------------------------------- 3. content not captured
@pytest.mark.parametrize("variant", NO_CONTENT_VARIANTS)
def test_without_content_tool_names_ids_and_tokens_remain(recorded: Fixtures, variant: str) -> None:
    expected = adk_invocations(recorded.sessions_json(variant))
    loaded = load(recorded.traces_jsonl(variant))
    cases = cases_of(loaded)

    assert sorted(cases) == SESSION_IDS
    for session_id, adk_turns in expected.items():
        case = cases[session_id]
        assert case.recorded is not None and case.recorded.content_captured is False
        ours = turns_of(case)
        assert len(ours) == len(adk_turns)
        for mine, theirs in zip(ours, adk_turns, strict=True):
            their_calls = without_failing_tool_id(session_id, calls(theirs))
            assert [(c["name"], c["id"]) for c in calls(mine)] == [(c["name"], c["id"]) for c in their_calls]
            assert all(c["args"] is None for c in calls(mine))  # no arguments recorded
            assert [(r["name"], r["id"]) for r in responses(mine)] == [(r["name"], r["id"]) for r in responses(theirs)]
            assert tokens(mine) == tokens(theirs)
            assert mine["user_content"]["parts"] == []
            assert "final_response" not in mine
    assert [len(calls(turn)) for turn in turns_of(cases["s-devices"])] == [2]
    assert session_tokens(cases["s-weather"]) == (456, 36)

    notes = loaded.notes()
    assert notes[0] == "recorded input: 4 turn(s) in 3 session(s), 0 skipped"
    blind = [note for note in notes if CONTENT_SETTING in note]
    assert len(blind) == 1
    assert blind[0].startswith("content not captured in 3 session(s)")
    assert CONTENT_SETTING == "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY"


def test_with_content_no_note_about_content(recorded: Fixtures) -> None:
    notes = load(recorded.traces_jsonl("adk2-content")).notes()

    assert notes == ["recorded input: 4 turn(s) in 3 session(s), 0 skipped"]


def test_criteria_that_need_content_are_not_evaluated_on_blind_cases(recorded: Fixtures) -> None:
    blind = cases_of(load(recorded.traces_jsonl("adk2-nocontent")))["s-weather"]
    referenced = blind.model_copy(update={"conversation": blind.actual_conversation})
    agent_run = run(ReplayAgent().run_case(referenced, "traces", 0))

    for name in ("response_match_score", "tool_trajectory_avg_score"):
        result = run(
            score_case_run(REGISTRY.get(name), EvalMetric(metric_name=name, threshold=0.5), referenced, agent_run)
        )
        assert result.status is EvalStatus.NOT_EVALUATED, name
        assert result.score is None
        assert result.explanation is not None and "content not captured" in result.explanation
        assert CONTENT_SETTING.split("=")[0] in result.explanation

    tokens_result = run(
        score_case_run(REGISTRY.get("token_usage_v1"), EvalMetric(metric_name="token_usage_v1"), blind, agent_run)
    )
    assert tokens_result.status is EvalStatus.INFORMATIONAL
    assert tokens_result.score == pytest.approx((253 + 23 + 203 + 13) / 2)


def test_reference_criteria_on_a_recorded_case_without_reference_are_not_applicable(recorded: Fixtures) -> None:
    case = cases_of(load(recorded.traces_jsonl("adk2-content")))["s-devices"]
    agent_run = run(ReplayAgent().run_case(case, "traces", 0))
    metric = EvalMetric(metric_name="response_match_score", threshold=0.8)

    result = run(score_case_run(REGISTRY.get("response_match_score"), metric, case, agent_run))

    assert result.status is EvalStatus.NOT_EVALUATED
    assert result.explanation == f"not applicable: {NO_REFERENCE_FOR_RECORDED}"


def test_replay_of_a_failed_recorded_session_is_a_failed_case_run_with_its_tokens(recorded: Fixtures) -> None:
    cases = cases_of(load(recorded.traces_jsonl("adk2-content")))

    with pytest.raises(AgentFailure) as failed:
        run(ReplayAgent().run_case(cases["s-broken"], "traces", 0))
    agent_run = failed.value.run
    assert agent_run.error is not None
    assert agent_run.error.startswith("the recorded session failed: turn 1: ")
    assert "ConnectionError" in agent_run.error
    assert agent_run.error_kind == "agent"
    assert agent_run.token_usage == TokenUsage(
        input_tokens=356,
        output_tokens=16,
        total_tokens=372,
        by_model={"gemini-2.5-flash": ModelUsage(calls=1, input_tokens=356, output_tokens=16)},
    )

    passed = run(ReplayAgent().run_case(cases["s-devices"], "traces", 0))
    assert passed.error is None
    assert passed.token_usage == TokenUsage(
        input_tokens=559,
        output_tokens=39,
        total_tokens=598,
        by_model={"gemini-2.5-flash": ModelUsage(calls=2, input_tokens=559, output_tokens=39)},
    )
    assert passed.invocations == cases["s-devices"].actual_conversation


# ---------------------------------------------------------------------------------- 4. plain GenAI spans
def test_genai_instrumented_calls_are_traces_of_their_own_joined_into_turns(recorded: Fixtures) -> None:
    path = recorded.traces_jsonl("genai-instrumented")
    traces = list(group_traces(read_spans([path], lambda skipped: None), lambda skipped: None))
    assert [len(trace) for trace in traces] == [1] * 5  # one root span per model call
    assert all(trace[0].parent_id is None for trace in traces)

    loaded = load(path)
    cases = cases_of(loaded)

    assert sorted(cases) == ["s-devices", "s-weather"]
    assert loaded.turns == 3
    weather = turns_of(cases["s-weather"])
    assert len(weather) == 2
    first, second = weather
    assert text(first["user_content"]) == "What is the weather in Paris?"
    assert text(first["final_response"]) == "It is sunny in Paris, 21°C."
    assert calls(first) == [{"name": "get_weather", "args": {"city": "Paris"}, "id": None}]
    assert responses(first) == [
        {"name": "get_weather", "id": None, "response": {"city": "Paris", "sky": "sunny", "temperature_c": 21}}
    ]
    assert tokens(first) == (253, 23)
    events = first["intermediate_data"]["invocation_events"]
    kinds = [event_kind(event) for event in events]
    assert kinds == ["call", "response", "model"]
    assert text(second["user_content"]) == "Thanks!"
    assert text(second["final_response"]) == "You're welcome."
    assert calls(second) == [] and tokens(second) == (203, 13)
    assert second["creation_timestamp"] > first["creation_timestamp"]
    assert first["duration"] >= first["model_duration"] > 0

    devices = turns_of(cases["s-devices"])
    assert len(devices) == 1
    assert [(c["name"], c["args"]) for c in calls(devices[0])] == [
        ("set_device", {"device_id": "lamp", "status": "on"}),
        ("set_device", {"device_id": "fan", "status": "on"}),
    ]
    assert [r["name"] for r in responses(devices[0])] == ["set_device", "set_device"]
    assert [r["response"]["device_id"] for r in responses(devices[0])] == ["lamp", "fan"]
    assert tokens(devices[0]) == (559, 39)
    assert text(devices[0]["final_response"]) == "The lamp and the fan are on."
    origin = cases["s-devices"].recorded
    assert origin is not None and origin.content_captured and origin.service == "home-service"


# ---------------------------------------------------------------------------------------- 5. ADK sessions
def _session_source(recorded: Fixtures, kind: str) -> RecordedSource:
    if kind == "db":
        return RecordedSource(sessions_db=recorded.db_url)
    return RecordedSource(paths=[str(recorded.adk2_content / kind)])


@contextmanager
def sessions_on_postgres(sqlite_url: str) -> Iterator[str]:
    """The fixture's session database copied into a fresh PostgreSQL database, through ADK's own schema (v1)
    created there, as a DatabaseSessionService on PostgreSQL holds it; its URL in ADK's asyncpg form."""
    from google.adk.sessions.schemas.v1 import Base
    from sqlalchemy import create_engine

    from tests.store.conftest import fresh_postgres_database

    with fresh_postgres_database() as url:
        source, target = create_engine(sqlite_url.replace("+aiosqlite", "")), create_engine(url)
        Base.metadata.create_all(target)
        with source.connect() as reading, target.begin() as writing:
            for table in Base.metadata.sorted_tables:
                rows = [dict(row._mapping) for row in reading.execute(table.select())]
                if rows:
                    writing.execute(table.insert(), rows)
        source.dispose()
        target.dispose()
        yield url.replace("postgresql+psycopg://", "postgresql+asyncpg://")


@pytest.mark.parametrize("kind", ["sessions.json", "session-s-weather.json", "db", "postgres"])
def test_sessions_give_adks_own_invocations(recorded: Fixtures, kind: str) -> None:
    expected = adk_invocations(recorded.sessions_json("adk2-content"))
    if kind == "postgres":
        with sessions_on_postgres(recorded.db_url) as url:
            loaded = load_recorded(RecordedSource(sessions_db=url))
    else:
        loaded = load_recorded(_session_source(recorded, kind))
    cases = cases_of(loaded)

    wanted = ["s-weather"] if kind == "session-s-weather.json" else SESSION_IDS
    assert sorted(cases) == wanted
    for session_id, case in cases.items():
        # Stored events carry no timing, app details or rubrics: ADK leaves those None, and so do we; every
        # other field (ids, contents, events with their usage and model version, timestamps) must be equal.
        assert turns_of(case) == expected[session_id], session_id
        origin = case.recorded
        assert origin is not None
        assert (origin.app_name, origin.user_id, origin.agent_name) == (APP_NAME, USER_ID, "home_agent")
        assert origin.state == dict(SCRIPTED[session_id].state)
        assert origin.content_captured is True
        assert len(origin.sources) == 1
        assert origin.sources[0].endswith(session_id)
    assert cases["s-weather"].recorded is not None
    assert cases["s-weather"].recorded.state == {"home": "flat 3"}
    if "s-broken" in cases:
        broken = cases["s-broken"].recorded
        assert broken is not None and broken.error is not None
        assert "ConnectionError" in broken.error and "hub hub-1 is unreachable" in broken.error
        assert cases["s-devices"].recorded is not None and cases["s-devices"].recorded.error is None
    assert (
        loaded.notes()[0]
        == f"recorded input: {2 if len(cases) == 1 else 4} turn(s) in {len(cases)} session(s), 0 skipped"
    )


def test_session_db_sources_name_app_user_and_session(recorded: Fixtures) -> None:
    cases = cases_of(load_recorded(RecordedSource(sessions_db=recorded.db_url)))

    origin = cases["s-devices"].recorded
    assert origin is not None
    assert origin.sources == [f"{recorded.db_url}#{APP_NAME}/{USER_ID}/s-devices"]


def test_session_db_by_app_name(recorded: Fixtures) -> None:
    loaded = load_recorded(RecordedSource(sessions_db=recorded.db_url, app_name=APP_NAME))

    assert sorted(cases_of(loaded)) == SESSION_IDS


# ---------------------------------------------------------------------------------- 6. import-sessions
@pytest.mark.parametrize("source", ["sessions.json", "traces.jsonl"])
def test_the_exported_eval_set_is_read_by_adk(recorded: Fixtures, source: str) -> None:
    from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet

    loaded = load(recorded.adk2_content / source, eval_set_id="prod")
    exported, left_out = adk_eval_set(loaded.eval_set)
    written = exported.model_dump_json(exclude_none=True)

    adk = AdkEvalSet.model_validate_json(written)

    assert adk.eval_set_id == "prod"
    ours = cases_of(loaded)
    assert [case.eval_id for case in adk.eval_cases] == ["s-devices", "s-weather"]  # s-broken failed: left out
    assert left_out == ["left out 1 failed session(s): s-broken"]
    for adk_case in adk.eval_cases:
        case = ours[adk_case.eval_id]
        assert [dump(invocation) for invocation in adk_case.conversation or []] == turns_of(case)
        first = (case.actual_conversation or [])[0]
        assert adk_case.creation_timestamp == first.creation_timestamp
        if source == "sessions.json":
            assert adk_case.session_input is not None
            assert (adk_case.session_input.app_name, adk_case.session_input.user_id) == (APP_NAME, USER_ID)
            assert adk_case.session_input.state == dict(SCRIPTED[adk_case.eval_id].state)
        else:  # spans do not name the app or the user: no session input
            assert adk_case.session_input is None
    assert "actual_conversation" not in written and '"recorded"' not in written


@pytest.mark.parametrize("source", ["sessions.json", "traces.jsonl"])
def test_the_eval_set_written_a_part_at_a_time_is_the_whole_one(recorded: Fixtures, source: str) -> None:
    from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet

    loaded = load(recorded.adk2_content / source, eval_set_id="prod")
    whole, left_out = adk_eval_set(loaded.eval_set)
    target = io.StringIO()

    imported = write_adk_eval_set(loaded.eval_sets(1), "prod", target)  # a part per session: one turn each

    assert json.loads(target.getvalue()) == json.loads(whole.model_dump_json(exclude_none=True))
    assert (imported.written, imported.notes()) == (2, left_out)
    assert [case.eval_id for case in AdkEvalSet.model_validate_json(target.getvalue()).eval_cases] == [
        "s-devices",
        "s-weather",
    ]


# ----------------------------------------------------------------------------------------------- 7. filters
def _weather_turn_starts(recorded: Fixtures) -> list[int]:
    source = RecordedSource(paths=[str(recorded.traces_jsonl("adk2-content"))])
    turns = [turn for turn in read_turns(source, lambda skipped: None) if turn.session_id == "s-weather"]
    return sorted(turn.started_ns for turn in turns)


def _moment(ns: int) -> datetime:
    return datetime.fromtimestamp(ns / 1e9, UTC)


def test_since_and_until_select_turns_by_their_start(recorded: Fixtures) -> None:
    first, second = _weather_turn_starts(recorded)
    between = _moment((first + second) // 2)
    path = recorded.traces_jsonl("adk2-content")

    later = load(path, since=between)
    earlier = load(path, until=between)

    later_cases = cases_of(later)
    assert sorted(later_cases) == SESSION_IDS
    assert [text(turn["user_content"]) for turn in turns_of(later_cases["s-weather"])] == ["Thanks!"]
    assert later.filtered_out == 1
    assert later.notes()[0] == "recorded input: 3 turn(s) in 3 session(s), 0 skipped, 1 outside the filters"
    earlier_cases = cases_of(earlier)
    assert sorted(earlier_cases) == ["s-weather"]
    assert [text(turn["user_content"]) for turn in turns_of(earlier_cases["s-weather"])] == [
        "What is the weather in Paris?"
    ]
    assert earlier.filtered_out == 3
    assert load(path, since=_moment(first - 1_000_000)).filtered_out == 0  # 1 ms before the first turn
    assert sorted(cases_of(load(path, until=_moment(second + 1_000_000)))) == ["s-weather"]


def test_sample_is_reproducible_by_seed(recorded: Fixtures) -> None:
    path = recorded.traces_jsonl("adk2-content")

    chosen = {seed: sorted(cases_of(load(path, sample=2, seed=seed))) for seed in range(12)}

    for seed, ids in chosen.items():
        assert len(ids) == 2 and set(ids) <= set(SESSION_IDS)
        assert sorted(cases_of(load(path, sample=2, seed=seed))) == ids  # same input, same seed: same sessions
    assert len({tuple(ids) for ids in chosen.values()}) > 1  # the seed matters
    with_weather = next(seed for seed, ids in chosen.items() if "s-weather" in ids)
    assert len(cases_of(load(path, sample=2, seed=with_weather))["s-weather"].actual_conversation or []) == 2
    assert sorted(cases_of(load(path, sample=5, seed=1))) == SESSION_IDS


def test_service_and_agent_filters(recorded: Fixtures) -> None:
    path = recorded.traces_jsonl("adk2-content")

    assert sorted(cases_of(load(path, services=["home-service"]))) == SESSION_IDS
    assert sorted(cases_of(load(path, agent_names=["home_agent"]))) == SESSION_IDS
    with pytest.raises(EvalInputError) as no_agent:
        load(path, agent_names=["other_agent"])
    assert "no turn in the given time range or filters" in str(no_agent.value)
    assert str(path) in str(no_agent.value)
    with pytest.raises(EvalInputError):  # plain GenAI spans name no agent
        load(recorded.traces_jsonl("genai-instrumented"), agent_names=["home_agent"])


def test_a_service_filter_that_matches_nothing_says_so(recorded: Fixtures) -> None:
    with pytest.raises(EvalInputError) as caught:
        load(recorded.traces_jsonl("adk2-content"), services=["other"])

    assert "no turn in the given time range or filters" in str(caught.value)


def test_an_app_name_that_matches_nothing_says_so(recorded: Fixtures) -> None:
    with pytest.raises(EvalInputError) as caught:
        load_recorded(RecordedSource(sessions_db=recorded.db_url, app_name="other_app"))

    assert "no turn in the given time range or filters" in str(caught.value)


# --------------------------------------------------------------------------------------------- 8. bad input
def test_a_truncated_line_is_skipped_with_its_file_and_line(recorded: Fixtures, tmp_path: Path) -> None:
    lines = recorded.traces_jsonl("adk2-content").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 7
    last_line = len(lines)  # holds only s-broken's root span; its other spans (line 6) become orphans
    broken = tmp_path / "traces.jsonl"
    broken.write_text("\n".join([*lines[:-1], lines[-1][: len(lines[-1]) // 2]]) + "\n", encoding="utf-8")

    loaded = load(broken)

    cases = cases_of(loaded)
    assert sorted(cases) == ["s-devices", "s-weather"]
    intact = cases_of(load(recorded.traces_jsonl("adk2-content")))
    assert turns_of(cases["s-weather"]) == turns_of(intact["s-weather"])
    assert turns_of(cases["s-devices"]) == turns_of(intact["s-devices"])
    notes = loaded.notes()
    assert notes[0] == "recorded input: 3 turn(s) in 2 session(s), 2 skipped"
    assert any(note.startswith(f"skipped {broken}:{last_line}: truncated or invalid JSON") for note in notes), notes
    orphans = [note for note in notes if "orphans" in note]
    assert len(orphans) == 1 and orphans[0].startswith(f"skipped {broken}:6: trace ")
    assert "3 span(s) whose root span is not in the input" in orphans[0]


def test_spans_whose_root_is_missing_are_counted_as_orphans(recorded: Fixtures, tmp_path: Path) -> None:
    source = recorded.traces_jsonl("adk2-content")
    devices_trace = next(
        span.trace_id
        for span in read_spans([source], lambda skipped: None)
        if span.attributes.get("gen_ai.conversation.id") == "s-devices"
    )
    rewritten = []
    for line in source.read_text(encoding="utf-8").splitlines():
        request = json.loads(line)
        for resource_spans in request["resourceSpans"]:
            for scope_spans in resource_spans["scopeSpans"]:
                scope_spans["spans"] = [
                    s for s in scope_spans["spans"] if s["traceId"] != devices_trace or s.get("parentSpanId")
                ]
        rewritten.append(json.dumps(request))
    orphaned = tmp_path / "no-root.jsonl"
    orphaned.write_text("\n".join(rewritten) + "\n", encoding="utf-8")

    loaded = load(orphaned)

    assert sorted(cases_of(loaded)) == ["s-broken", "s-weather"]
    assert len(loaded.skipped) == 1
    skipped = loaded.skipped[0]
    assert skipped.source == f"{orphaned}:3"  # the line of the trace's first span
    assert skipped.reason == f"trace {devices_trace}: 6 span(s) whose root span is not in the input (orphans)"
    assert loaded.notes()[0] == "recorded input: 3 turn(s) in 2 session(s), 1 skipped"


def test_a_gzipped_folder_reads_like_the_plain_file(recorded: Fixtures, tmp_path: Path) -> None:
    folder = tmp_path / "spans"
    folder.mkdir()
    with recorded.traces_jsonl("legacy-content").open("rb") as plain, gzip.open(folder / "a.jsonl.gz", "wb") as packed:
        shutil.copyfileobj(plain, packed)

    from_folder = load(folder).eval_set.eval_cases
    from_file = load(recorded.traces_jsonl("legacy-content")).eval_set.eval_cases

    assert [turns_of(case) for case in from_folder] == [turns_of(case) for case in from_file]
    assert [case.eval_id for case in from_folder] == SESSION_IDS


def test_formats_are_detected_from_content(recorded: Fixtures, tmp_path: Path) -> None:
    reference = tmp_path / "ref.evalset.json"
    reference.write_text('{"eval_set_id": "x", "eval_cases": []}', encoding="utf-8")

    assert detect_recorded_format(recorded.traces_jsonl("adk2-content")) == "otel"
    assert detect_recorded_format(recorded.traces_binpb("adk2-content")) == "otel"
    assert detect_recorded_format(recorded.sessions_json("adk2-content")) == "adk-session"
    assert detect_recorded_format(recorded.adk2_content / "session-s-weather.json") == "adk-session"
    assert detect_recorded_format(reference) is None


@pytest.mark.parametrize(
    "document", [{"id": "s-1", "turns": []}, [1, 2, 3], {"eval_set_id": "x", "eval_cases": []}], ids=str
)
def test_a_json_file_that_is_not_a_session_is_one_input_error(tmp_path: Path, document: Any) -> None:
    path = tmp_path / "not-a-session.json"
    path.write_text(json.dumps(document), encoding="utf-8")

    with pytest.raises(EvalInputError) as caught:
        load(path, format="adk-session")

    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: not an ADK session")


def test_a_missing_sqlite_session_db_is_an_input_error_and_is_not_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)

    for url in ("sqlite:///missing.db", "sqlite+aiosqlite:///missing.db", f"sqlite:///{tmp_path / 'abs.db'}"):
        with pytest.raises(EvalInputError) as caught:
            load_recorded(RecordedSource(sessions_db=url))
        assert str(caught.value) == f"{url}: no such session database file"
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_database_password_is_masked_in_errors() -> None:
    url = "postgresql+asyncpg://alice:s3cret@127.0.0.1:1/sessions"

    with pytest.raises(EvalInputError) as caught:
        load_recorded(RecordedSource(sessions_db=url))

    message = str(caught.value)
    assert "s3cret" not in message
    assert message.startswith("postgresql+asyncpg://alice:***@127.0.0.1:1/sessions: cannot read ADK sessions: ")
    assert "\n" not in message


def test_a_sqlite_url_with_a_password_is_masked_too(recorded: Fixtures) -> None:
    # An encrypted SQLite database (SQLCipher) takes its key as the URL's password.
    url = f"sqlite+aiosqlite://alice:s3cret@/{recorded.db_path}"

    with pytest.raises(EvalInputError) as caught:
        load_recorded(RecordedSource(sessions_db=url, app_name="no_such_app"))

    assert "s3cret" not in str(caught.value)


def test_a_database_driver_that_is_not_installed_is_an_input_error() -> None:
    # ADK's DatabaseSessionService takes MySQL URLs; agent-eval ships no MySQL driver.
    url = "mysql+aiomysql://bob:pw@127.0.0.1:1/sessions"

    with pytest.raises(EvalInputError) as caught:
        load_recorded(RecordedSource(sessions_db=url))
    assert "pw@" not in str(caught.value)


def test_a_session_database_url_can_come_from_the_environment(
    recorded: Fixtures, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ADK_SESSIONS_DB", recorded.db_url)
    monkeypatch.delenv("UNSET_SESSIONS_DB", raising=False)

    loaded = load_recorded(RecordedSource(sessions_db="env:ADK_SESSIONS_DB"))
    with pytest.raises(EvalInputError) as unset:
        load_recorded(RecordedSource(sessions_db="env:UNSET_SESSIONS_DB"))

    assert sorted(cases_of(loaded)) == SESSION_IDS
    assert str(unset.value) == "sessions_db: the environment variable 'UNSET_SESSIONS_DB' it names is not set"
