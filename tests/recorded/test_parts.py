"""A recorded input read through its on-disk spill, and scored a part at a time: the same cases, scores and
stored rows as when it is held whole."""

from __future__ import annotations

import asyncio
import gc
import json
import weakref
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, select

from agent_eval import evaluate, rerun
from agent_eval.errors import EvalInputError
from agent_eval.flows import TracesRequest, traces_flow
from agent_eval.flows import evaluate as flows_evaluate
from agent_eval.io.recorded import RecordedSource, load_recorded
from agent_eval.io.recorded.parts import RecordedParts, is_outline
from agent_eval.schema import EvalSet
from agent_eval.store import CaseRecord, get_engine, load_report, stored_eval_sets

CONFIG = {"criteria": {"tool_call_count_v1": {}, "token_usage_v1": {}, "response_match_score": 0.5}}


def event(invocation: str, author: str, text: str, at: float, **extra: Any) -> dict[str, Any]:
    role = "user" if author == "user" else "model"
    return {"invocationId": invocation, "author": author, "content": {"role": role, "parts": [{"text": text}]},
            "timestamp": at, **extra}  # fmt: skip


def session(session_id: str, turns: int, start: float) -> dict[str, Any]:
    """An ADK session as its API returns it: `turns` turns, each a question and an answer with token usage."""
    events = []
    for turn in range(turns):
        at = start + 10 * turn
        usage = {"promptTokenCount": 10 + turn, "candidatesTokenCount": 2}
        events += [
            event(f"{session_id}-e{turn}", "user", f"question {turn} of {session_id}", at),
            event(f"{session_id}-e{turn}", "shop", f"answer {turn}", at + 1, usageMetadata=usage),
        ]
    return {"id": session_id, "appName": "shop", "userId": "u-1", "state": {}, "events": events}


@pytest.fixture
def sessions(tmp_path: Path) -> Path:
    """Seven sessions of one to three turns in two files; session s-3 is in both files (read twice)."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    first = [session(f"s-{n}", 1 + n % 3, 1_700_000_000.0 + 100 * n) for n in range(4)]
    second = [session(f"s-{n}", 1 + n % 3, 1_700_000_000.0 + 100 * n) for n in range(3, 7)]
    (folder / "a.json").write_text(json.dumps(first), encoding="utf-8")
    (folder / "b.json").write_text(json.dumps(second), encoding="utf-8")
    return folder


def reference(tmp_path: Path) -> Path:
    """Reference answers for two sessions: s-1's first answer matches, s-5's does not."""

    def case(eval_id: str, answers: list[str]) -> dict[str, Any]:
        conversation = [
            {"invocation_id": f"r{i}", "user_content": {"role": "user", "parts": [{"text": f"question {i}"}]},
             "final_response": {"role": "model", "parts": [{"text": answer}]}}
            for i, answer in enumerate(answers)
        ]  # fmt: skip
        return {"eval_id": eval_id, "conversation": conversation}

    path = tmp_path / "reference.evalset.json"
    cases = [case("s-1", ["answer 0", "answer 1"]), case("s-5", ["something else", "no", "no"])]
    path.write_text(json.dumps({"eval_set_id": "reference", "eval_cases": cases}), encoding="utf-8")
    return path


def test_the_spill_keeps_a_turn_read_twice_once_and_gives_the_same_cases_in_parts(sessions: Path) -> None:
    loaded = load_recorded(RecordedSource(paths=[str(sessions)]))
    try:
        whole = loaded.eval_set
        parts = list(loaded.eval_sets(4))
        one_long_session_a_part = [[c.eval_id for c in part.eval_cases] for part in loaded.eval_sets(2)]
    finally:
        loaded.close()

    assert loaded.session_ids == [f"s-{n}" for n in range(7)]
    # turns: 1, 2, 3, 1, 2, 3, 1 (s-3 read from both files counts once)
    assert loaded.turns == 13 and loaded.notes()[0] == "recorded input: 13 turn(s) in 7 session(s), 0 skipped"
    assert [len(case.actual_conversation or []) for case in whole.eval_cases] == [1, 2, 3, 1, 2, 3, 1]
    # parts of at most 4 turns: s-0 + s-1 (3 turns), s-2 + s-3 (4), s-4 (2: with s-5 it would be 5), s-5 + s-6 (4)
    assert [[c.eval_id for c in part.eval_cases] for part in parts] == [
        ["s-0", "s-1"],
        ["s-2", "s-3"],
        ["s-4"],
        ["s-5", "s-6"],
    ]
    assert one_long_session_a_part == [[f"s-{n}"] for n in range(7)]  # s-2's 3 turns: a part over 2 turns
    assert [case for part in parts for case in part.eval_cases] == whole.eval_cases
    texts = [inv.user_content.parts[0].text for inv in whole.eval_cases[2].actual_conversation or []]
    assert texts == ["question 0 of s-2", "question 1 of s-2", "question 2 of s-2"]  # in start order


def test_sample_chooses_the_same_sessions_as_before_the_spill(sessions: Path) -> None:
    import random

    loaded = load_recorded(RecordedSource(paths=[str(sessions)], sample=3, seed=7))
    loaded.close()

    assert loaded.session_ids == sorted(random.Random(7).sample([f"s-{n}" for n in range(7)], 3))


@pytest.mark.usefixtures("prefect_server")
def test_a_run_in_parts_stores_and_reports_what_a_whole_run_does(
    sessions: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    references = str(reference(tmp_path))
    whole_url, parts_url = f"sqlite:///{tmp_path / 'whole.db'}", f"sqlite:///{tmp_path / 'parts.db'}"
    whole = evaluate([references], recorded=RecordedSource(paths=[str(sessions)]), config=CONFIG, db_url=whole_url)
    monkeypatch.setattr("agent_eval.plan.eval_plan.RECORDED_PART_TURNS", 4)
    parted = evaluate([references], recorded=RecordedSource(paths=[str(sessions)]), config=CONFIG, db_url=parts_url)

    assert (whole.parts, parted.parts) == (1, 4)
    # the same summary, but for where the limit on case runs went (a part has fewer case runs to send at once)
    exclude = {"invocations"}
    assert parted.summary.model_dump(exclude=exclude) == whole.summary.model_dump(exclude=exclude)
    assert parted.summary.total == 7
    assert (parted.summary.invocations["rate_limited"], whole.summary.invocations["rate_limited"]) == (0, 0)
    assert whole.summary.failed == 1  # s-5's answers match no reference answer
    assert _outcomes(parted) == _outcomes(whole)
    # the parted report holds each case's summary; the store holds the rest
    assert all(case.agent_run.invocations == [] and case.expected_invocations is None for case in parted.cases)
    assert all(m.per_invocation == [] and m.details == {} for case in parted.cases for m in case.metrics)
    # per turn: the tool and token counts on 13 turns; the response match on the 2 + 3 referenced turns
    assert sum(len(m.per_invocation) for case in whole.cases for m in case.metrics) == 13 + 13 + 5
    assert _stored_rows(parts_url) == _stored_rows(whole_url)
    assert (
        load_report(parted.run_id, get_engine(parts_url)).cases
        == load_report(whole.run_id, get_engine(whole_url)).cases
    )

    (outline,) = stored_eval_sets(parted.run_id, get_engine(parts_url))
    (held,) = stored_eval_sets(whole.run_id, get_engine(whole_url))
    assert is_outline(outline) and not is_outline(held)
    assert [(c.eval_id, c.recorded, c.conversation) for c in outline.eval_cases] == [
        (c.eval_id, c.recorded, c.conversation) for c in held.eval_cases
    ]
    with pytest.raises(EvalInputError, match=f"agent-eval rescore {parted.run_id}"):
        rerun(parted.run_id, db_url=parts_url)


@pytest.mark.usefixtures("prefect_server")
@pytest.mark.parametrize("entry", ["evaluate", "traces_flow"])
def test_a_run_in_parts_lets_go_of_the_outline_once_it_is_stored(
    sessions: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: str
) -> None:
    """The outline (~3 KB per session) is stored at the run's start; the parts never read it again. Through the
    API and through the scheduled deployment's flow."""
    outlines: list[weakref.ref[EvalSet]] = []
    alive_in_parts: list[bool] = []
    make_outline, evaluate_part = RecordedParts.outline, flows_evaluate._evaluate_part

    def outline(self: RecordedParts) -> EvalSet:
        made = make_outline(self)
        outlines.append(weakref.ref(made))
        return made

    async def part(*args: Any, **kwargs: Any) -> Any:
        gc.collect()
        alive_in_parts.append(outlines[0]() is not None)
        return await evaluate_part(*args, **kwargs)

    monkeypatch.setattr(RecordedParts, "outline", outline)
    monkeypatch.setattr(flows_evaluate, "_evaluate_part", part)
    monkeypatch.setattr("agent_eval.plan.eval_plan.RECORDED_PART_TURNS", 4)
    url = f"sqlite:///{tmp_path / 'parts.db'}"
    source = RecordedSource(paths=[str(sessions)])
    if entry == "evaluate":
        report = evaluate([], recorded=source, config=CONFIG, db_url=url)
    else:  # the sessions were recorded in 2023: a first window that far back
        request = TracesRequest(recorded=source, config=CONFIG, db_url=url, settle_seconds=0, first_hours=10**5)
        report = asyncio.run(traces_flow(request))

    assert report.parts == len(alive_in_parts) == 4
    # at the first part, Prefect may still hold the start task's arguments (seen by their keys; whether depends on
    # the tests run before); from the second part on nothing holds the outline (before: it lived to the end)
    assert alive_in_parts[1:] == [False, False, False]
    (stored,) = stored_eval_sets(report.run_id, get_engine(url))
    assert is_outline(stored) and len(stored.eval_cases) == 7


def _outcomes(report: Any) -> list[tuple[str, int, list[tuple[str, float | None, int]]]]:
    return [
        (case.eval_id, int(case.status), [(m.metric_name, m.score, int(m.status)) for m in case.metrics])
        for case in report.cases
    ]


def _stored_rows(db_url: str) -> list[tuple[Any, ...]]:
    with Session(get_engine(db_url)) as session:
        records = session.exec(select(CaseRecord).order_by(CaseRecord.eval_id)).all()
        return [(r.eval_id, r.status, r.failure, r.actual_invocations, r.token_usage) for r in records]
