"""Judged items, human labels and judge checks in the store.

A run's judged items (`agent_eval.results.judged_items`) are written with its metric results (`judged_rows`,
called by `agent_eval.store.repository`); a person's label is stored under the item's content key, one per key
and labeller (a new label by the same person replaces the old one; `delete_label` undoes it). Agreement reads
both (`labelled_pairs`): every judged item that has a label, with the run's judge identity for its metric.

Labels are written in one transaction per call, so an import with one bad row writes nothing. A judge check
(`agent_eval.judges.check`) is one row of `judge_checks`: `save_judge_check`, `judge_checks` (newest first). A judge
profile (`agent_eval.judges.align`) is one row of `judge_profiles` per version: `save_judge_profile` (numbering
the versions of a name 1, 2, ...), `judge_profile`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator
from sqlalchemy import delete, func
from sqlalchemy import select as columns  # any number of columns (sqlmodel's select types up to 4)
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from agent_eval.results.judged_items import JudgedItem, judged_items, rubric_texts_of
from agent_eval.results.model import CaseResult
from agent_eval.results.run_configs import configs_by_eval_set
from agent_eval.store.engine import get_engine
from agent_eval.store.models import (
    CaseRecord,
    JudgeCheckRecord,
    JudgedItemRecord,
    JudgeProfileRecord,
    LabelRecord,
    Run,
)

__all__ = [
    "ItemView",
    "Label",
    "LabelView",
    "LabelledPair",
    "backfill_judged_items",
    "delete_label",
    "judge_checks",
    "judge_profile",
    "judged_items_of_run",
    "judged_rows",
    "labelled_pairs",
    "labels",
    "rubric_texts_by_eval_set",
    "save_judge_check",
    "save_judge_profile",
    "save_labels",
]


class Label(BaseModel):
    """A person's verdict on one judged item: `passed` (pass/fail) or `score` (a scored metric), or both."""

    model_config = ConfigDict(extra="forbid")

    item_key: str = Field(min_length=64, max_length=64)
    metric_name: str
    rubric_id: str | None = None
    passed: bool | None = None
    score: float | None = None
    labeller: str = Field(min_length=1, max_length=255)
    note: str | None = None
    labelled_at: datetime | None = None
    run_id: str | None = None
    eval_set_id: str | None = None
    eval_id: str | None = None
    turn: int | None = None

    @model_validator(mode="after")
    def _has_a_verdict(self) -> Label:
        if self.passed is None and self.score is None:
            raise ValueError("a label needs a verdict: pass/fail or a score")
        return self


@dataclass(frozen=True, slots=True)
class ItemView:
    """The columns of a judged item that agreement, checks and alignment read (`JudgedItemRecord`'s)."""

    id: int
    run_id: str
    case_result_id: int
    metric_name: str
    rubric_id: str | None
    turn: int
    item_key: str
    judge_score: float | None
    judge_passed: bool | None
    samples: list[Any]


@dataclass(frozen=True, slots=True)
class LabelView:
    """The columns of a label that agreement, checks and alignment read (`LabelRecord`'s)."""

    passed: bool | None
    score: float | None
    note: str | None
    labeller: str
    labelled_at: datetime


@dataclass(frozen=True)
class LabelledPair:
    """A judged item with a person's label: what the judge said, what the person said, and who judged."""

    item: ItemView
    label: LabelView
    run_id: str
    eval_set_id: str
    judge: Mapping[str, Any] | None


_ITEM_COLUMNS = tuple(getattr(JudgedItemRecord, name) for name in ItemView.__slots__)
_LABEL_COLUMNS = tuple(getattr(LabelRecord, name) for name in LabelView.__slots__)


def judged_rows(
    run_id: str, case_result_id: int, case: CaseResult, rubric_texts: Mapping[str, str] | None = None
) -> list[JudgedItemRecord]:
    """The `judged_items` rows of one stored case run."""
    return [_row(run_id, case_result_id, item) for item in judged_items(case, rubric_texts)]


def rubric_texts_by_eval_set(config: Mapping[str, Any], eval_set_ids: Sequence[str]) -> dict[str, dict[str, str]]:
    """Per eval set of a run (its `runs.config`), the rubric texts of its criteria by rubric id."""
    texts: dict[str, dict[str, str]] = {}
    for eval_set_id, one in configs_by_eval_set(config, eval_set_ids).items():
        criteria = one.get("criteria")
        found = criteria.values() if isinstance(criteria, Mapping) else ()
        texts[eval_set_id] = {k: v for c in found for k, v in rubric_texts_of(c).items()}
    return texts


def save_labels(labels: Iterable[Label], engine: Engine | None = None) -> int:
    """Store labels in one transaction (each replacing the same labeller's label of the same item); the count."""
    count = 0
    with Session(engine or get_engine()) as session, session.begin():
        for label in labels:
            _upsert(session, label)
            count += 1
    return count


def delete_label(item_key: str, labeller: str, engine: Engine | None = None) -> bool:
    """Remove a labeller's label of an item (undo); whether there was one."""
    with Session(engine or get_engine()) as session, session.begin():
        where = (col(LabelRecord.item_key) == item_key, col(LabelRecord.labeller) == labeller)
        return bool(session.execute(delete(LabelRecord).where(*where)).rowcount)  # type: ignore[attr-defined]


def labels(engine: Engine | None = None, *, metric: str | None = None) -> list[Label]:
    """Every stored label (of one metric), oldest first."""
    statement = select(LabelRecord).order_by(col(LabelRecord.labelled_at), col(LabelRecord.id))
    if metric is not None:
        statement = statement.where(col(LabelRecord.metric_name) == metric)
    with Session(engine or get_engine()) as session:
        return [Label.model_validate(row, from_attributes=True) for row in session.exec(statement).all()]


def judged_items_of_run(run_id: str, engine: Engine | None = None) -> list[tuple[JudgedItemRecord, CaseRecord]]:
    """A run's judged items with their case runs, in case-run, metric, turn and rubric order."""
    statement = (
        select(JudgedItemRecord, CaseRecord)
        .join(CaseRecord, col(CaseRecord.id) == col(JudgedItemRecord.case_result_id))
        .where(col(JudgedItemRecord.run_id) == run_id)
        .order_by(col(JudgedItemRecord.id))
    )
    with Session(engine or get_engine()) as session:
        return [(item, case) for item, case in session.exec(statement).all()]


def labelled_pairs(engine: Engine | None = None, *, metric: str | None = None) -> list[LabelledPair]:
    """Every judged item that has a label (the latest label of its key when several people labelled it), with
    its run's judge identity for the item's metric; one query for items and labels (columns, not ORM objects:
    10,000 labelled items load in ~0.2 s), one for the runs."""
    engine = engine or get_engine()
    statement = (
        columns(*_ITEM_COLUMNS, *_LABEL_COLUMNS, col(CaseRecord.eval_set_id))
        .join(LabelRecord, col(LabelRecord.item_key) == col(JudgedItemRecord.item_key))
        .join(CaseRecord, col(CaseRecord.id) == col(JudgedItemRecord.case_result_id))
        .order_by(col(JudgedItemRecord.id), col(LabelRecord.labelled_at))
    )
    if metric is not None:
        statement = statement.where(col(JudgedItemRecord.metric_name) == metric)
    items, labels_at = len(_ITEM_COLUMNS), len(_ITEM_COLUMNS) + len(_LABEL_COLUMNS)
    latest: dict[int, tuple[ItemView, LabelView, str]] = {}
    with Session(engine) as session:
        for row in session.execute(statement):  # ordered by labelled_at: the last label of an item wins
            item = ItemView(*row[:items])
            latest[item.id] = (item, LabelView(*row[items:labels_at]), row[labels_at])
        run_ids = {item.run_id for item, _, _ in latest.values()}
        judges = dict(session.exec(select(Run.id, Run.judges).where(col(Run.id).in_(run_ids))).all())
    return [
        LabelledPair(item, label, item.run_id, eval_set_id, _identity(judges.get(item.run_id), eval_set_id, item))
        for item, label, eval_set_id in latest.values()
    ]


def _identity(judges: Any, eval_set_id: str, item: ItemView) -> Mapping[str, Any] | None:
    found = ((judges or {}).get(eval_set_id) or {}).get(item.metric_name) if isinstance(judges, Mapping) else None
    return found if isinstance(found, Mapping) else None


def _upsert(session: Session, label: Label) -> None:
    values = label.model_dump()
    values["labelled_at"] = label.labelled_at or datetime.now(UTC)
    where = (col(LabelRecord.item_key) == label.item_key, col(LabelRecord.labeller) == label.labeller)
    existing = session.exec(select(LabelRecord).where(*where)).first()
    if existing is None:
        session.add(LabelRecord.model_validate(values))
    else:
        existing.sqlmodel_update(values)
        session.add(existing)
    session.flush()


def _row(run_id: str, case_result_id: int, item: JudgedItem) -> JudgedItemRecord:
    return JudgedItemRecord(
        run_id=run_id,
        case_result_id=case_result_id,
        metric_name=item.metric_name,
        rubric_id=item.rubric_id,
        turn=item.turn,
        item_key=item.key,
        judge_score=item.judge_score,
        judge_passed=item.judge_passed,
        samples=item.samples,
    )


def save_judge_check(check: JudgeCheckRecord, engine: Engine | None = None) -> JudgeCheckRecord:
    """Store a judge check; returns it with its id."""
    with Session(engine or get_engine(), expire_on_commit=False) as session, session.begin():
        session.add(check)
        session.flush()
        session.refresh(check)
    return check


def judge_checks(
    engine: Engine | None = None, *, metric: str | None = None, judge_key: str | None = None, limit: int | None = None
) -> list[JudgeCheckRecord]:
    """The stored judge checks (of one metric, of one judge identity), newest first."""
    statement = select(JudgeCheckRecord).order_by(
        col(JudgeCheckRecord.checked_at).desc(), col(JudgeCheckRecord.id).desc()
    )
    if metric is not None:
        statement = statement.where(col(JudgeCheckRecord.metric_name) == metric)
    if judge_key is not None:
        statement = statement.where(col(JudgeCheckRecord.judge_key) == judge_key)
    if limit is not None:
        statement = statement.limit(limit)
    with Session(engine or get_engine(), expire_on_commit=False) as session:
        return list(session.exec(statement).all())


def save_judge_profile(profile: JudgeProfileRecord, engine: Engine | None = None) -> JudgeProfileRecord:
    """Store a new version of a profile (its `version` set to the name's next one); returns it with its id."""
    with Session(engine or get_engine(), expire_on_commit=False) as session, session.begin():
        newest = session.exec(
            select(func.max(JudgeProfileRecord.version)).where(col(JudgeProfileRecord.name) == profile.name)
        ).one()
        profile.version = (newest or 0) + 1
        session.add(profile)
        session.flush()
        session.refresh(profile)
    return profile


def judge_profile(
    name: str, engine: Engine | None = None, *, version: int | None = None, kept_only: bool = True
) -> JudgeProfileRecord | None:
    """A profile's version (`version`), else its newest version (the newest kept one with `kept_only`)."""
    statement = select(JudgeProfileRecord).where(col(JudgeProfileRecord.name) == name)
    if version is not None:
        statement = statement.where(col(JudgeProfileRecord.version) == version)
    elif kept_only:
        statement = statement.where(col(JudgeProfileRecord.kept).is_(True))
    statement = statement.order_by(col(JudgeProfileRecord.version).desc()).limit(1)
    with Session(engine or get_engine(), expire_on_commit=False) as session:
        return session.exec(statement).first()


def backfill_judged_items(run_id: str, engine: Engine | None = None) -> int:
    """Write the judged items of a run stored before they were recorded (a release before this table), so its
    labels join its judges' verdicts; the number written (0 when the run has some already or none to write)."""
    from agent_eval.store.reports import load_report  # reports are read here only

    engine = engine or get_engine()
    with Session(engine) as session:
        if session.exec(select(JudgedItemRecord.id).where(col(JudgedItemRecord.run_id) == run_id).limit(1)).first():
            return 0
        statement = select(CaseRecord.id, CaseRecord.eval_set_id, CaseRecord.eval_id, CaseRecord.run_index)
        ids = {(s, e, i): case_id for case_id, s, e, i in session.exec(statement.where(CaseRecord.run_id == run_id))}
    report = load_report(run_id, engine)
    texts = rubric_texts_by_eval_set(report.config, report.eval_set_ids)
    rows = [
        row
        for case in report.cases
        if (case_id := ids.get((case.eval_set_id, case.eval_id, case.run_index))) is not None
        for row in judged_rows(run_id, case_id, case, texts.get(case.eval_set_id))
    ]
    with Session(engine) as session, session.begin():
        session.add_all(rows)
    return len(rows)
