"""A run stored before judged items were recorded (no `judged_items` rows) gets them when it is labelled
(`backfill_judged_items`, called by `agent-eval label`): the same rows, with the same content keys, that storing
it today writes; a second call writes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import delete
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from agent_eval.store import get_engine
from agent_eval.store.labels import backfill_judged_items
from agent_eval.store.models import JudgedItemRecord
from tests.judges.stored_runs import RESPONSE, JudgedCase, judged, rubric_judged, store_cases, turn

RUN = "b0" * 16


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    return get_engine(f"sqlite:///{tmp_path / 'store.db'}")


def _rows(engine: Engine) -> list[tuple[object, ...]]:
    columns = (
        JudgedItemRecord.case_result_id,
        JudgedItemRecord.metric_name,
        JudgedItemRecord.rubric_id,
        JudgedItemRecord.turn,
        JudgedItemRecord.item_key,
        JudgedItemRecord.judge_score,
        JudgedItemRecord.judge_passed,
        JudgedItemRecord.samples,
    )
    with Session(engine) as session:
        return [tuple(row) for row in session.exec(select(*columns).order_by(col(JudgedItemRecord.item_key))).all()]


def test_a_run_without_judged_items_gets_the_rows_storing_it_today_writes(engine: Engine) -> None:
    kitchen = [turn("is the kitchen light on?", "Yes, it is on.", [("get_device", {"id": "k"})])]
    office = [turn("how warm is the office?", "22 degrees.", [])]
    store_cases(
        engine,
        RUN,
        [
            JudgedCase("kitchen", kitchen, [judged("kitchen", [1.0]), rubric_judged("kitchen", [{"polite": 0.0}])]),
            JudgedCase("office", office, [judged("office", [0.0], samples=[[0.0, None, 1.0]])]),
        ],
    )
    written_today = _rows(engine)
    assert len(written_today) == 3
    with Session(engine) as session, session.begin():
        session.execute(delete(JudgedItemRecord))  # as a run of an earlier release left it

    assert backfill_judged_items(RUN, engine) == 3
    assert _rows(engine) == written_today
    assert backfill_judged_items(RUN, engine) == 0  # it has them now
    assert len(_rows(engine)) == 3
    assert {row[1] for row in written_today} == {RESPONSE, "rubric_based_final_response_quality_v1"}
