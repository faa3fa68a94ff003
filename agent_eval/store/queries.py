"""Reading runs back: run lists, per-metric means, case scores for comparisons, whole reports."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from agent_eval.errors import EvalInputError
from agent_eval.report.aggregate import summarize
from agent_eval.report.models import CaseResult, InvocationScore, MetricResult, RunReport, RunSummary
from agent_eval.schema import AgentRun, CacheOrigin, EvalSet, EvalStatus, Invocation, TokenUsage
from agent_eval.store.engine import get_engine
from agent_eval.store.models import (
    CaseRecord,
    EvalSetVersion,
    MetricRecord,
    Run,
    RunEvalSet,
    RunRead,
    RunStatus,
    as_utc,
)

__all__ = [
    "CaseScore",
    "RunNotFoundError",
    "agent_run_of",
    "case_scores",
    "eval_set_hashes",
    "find_baseline",
    "get_run",
    "list_runs",
    "load_case_records",
    "load_report",
    "metric_means",
    "stored_eval_sets",
]


class RunNotFoundError(EvalInputError, LookupError):
    """No run with this id in the store (bad input: the CLI exits 2 with this one line)."""

    def __init__(self, run_id: str, store: str = "the store") -> None:
        self.run_id = run_id
        super().__init__(f"no run {run_id!r} in {store}; `agent-eval history` lists the runs")


@dataclass(frozen=True)
class CaseScore:
    """One case run's status and one metric's score on it (`metric_name` None: the case has no metric)."""

    eval_set_id: str
    eval_id: str
    run_index: int
    status: EvalStatus
    metric_name: str | None
    score: float | None


def list_runs(
    engine: Engine | None = None,
    limit: int | None = 20,
    *,
    eval_set_id: str | None = None,
    agent_reference: str | None = None,
) -> list[RunRead]:
    """Runs, newest first, optionally of one eval set or one agent reference."""
    statement = select(Run).order_by(col(Run.started_at).desc(), col(Run.id)).limit(limit)
    if eval_set_id is not None:
        with_set = select(RunEvalSet.run_id).where(RunEvalSet.eval_set_id == eval_set_id)
        statement = statement.where(col(Run.id).in_(with_set))
    if agent_reference is not None:
        statement = statement.where(Run.agent_reference == agent_reference)
    with Session(engine or get_engine()) as session:
        return [RunRead.model_validate(run) for run in session.exec(statement).all()]


def get_run(run_id: str, engine: Engine | None = None) -> RunRead:
    """One run.

    Raises:
        RunNotFoundError: no such run.
    """
    with Session(engine or get_engine()) as session:
        return RunRead.model_validate(_run(session, run_id))


def metric_means(run_ids: Sequence[str], engine: Engine | None = None) -> dict[str, dict[str, float]]:
    """Per run, the mean score of each metric over its scored case runs (metrics ordered by name)."""
    statement = (
        select(MetricRecord.run_id, MetricRecord.metric_name, func.avg(MetricRecord.score))
        .where(col(MetricRecord.run_id).in_(run_ids), col(MetricRecord.score).is_not(None))
        .group_by(col(MetricRecord.run_id), col(MetricRecord.metric_name))
        .order_by(col(MetricRecord.metric_name))
    )
    means: dict[str, dict[str, float]] = defaultdict(dict)
    with Session(engine or get_engine()) as session:
        for run_id, metric_name, mean in session.exec(statement).all():
            means[run_id][metric_name] = float(mean)
    return dict(means)


def case_scores(run_id: str, engine: Engine | None = None) -> list[CaseScore]:
    """Every case run of a run with each of its metric scores, in the order they were written.

    Raises:
        RunNotFoundError: no such run.
    """
    statement = (
        select(CaseRecord, MetricRecord.metric_name, MetricRecord.score)
        .outerjoin(MetricRecord, col(MetricRecord.case_result_id) == col(CaseRecord.id))
        .where(CaseRecord.run_id == run_id)
        .order_by(col(CaseRecord.id), col(MetricRecord.id))
    )
    with Session(engine or get_engine()) as session:
        _run(session, run_id)
        rows = session.exec(statement).all()
    return [
        CaseScore(case.eval_set_id, case.eval_id, case.run_index, EvalStatus(case.status), name, score)
        for case, name, score in rows
    ]


def eval_set_hashes(run_id: str, engine: Engine | None = None) -> dict[str, str | None]:
    """The content hash of each eval set the run evaluated (None when not recorded)."""
    statement = select(RunEvalSet.eval_set_id, RunEvalSet.eval_set_hash).where(RunEvalSet.run_id == run_id)
    with Session(engine or get_engine()) as session:
        return dict(session.exec(statement).all())


def find_baseline(run_id: str, engine: Engine | None = None) -> str | None:
    """The run to compare `run_id` with: the latest other completed run of the same agent reference over the
    same eval set versions (every eval set id with the same content hash), or None."""
    engine = engine or get_engine()
    wanted = eval_set_hashes(run_id, engine)
    with Session(engine) as session:
        run = _run(session, run_id)
        statement = (
            select(Run.id)
            .where(col(Run.agent_reference) == run.agent_reference, col(Run.status) == RunStatus.COMPLETED)
            .where(col(Run.id) != run_id, col(Run.started_at) <= run.started_at)
            .order_by(col(Run.started_at).desc())
        )
        candidates = list(session.exec(statement).all())
        links = session.exec(
            select(RunEvalSet.run_id, RunEvalSet.eval_set_id, RunEvalSet.eval_set_hash).where(
                col(RunEvalSet.run_id).in_(candidates)
            )
        ).all()
    versions: dict[str, dict[str, str | None]] = defaultdict(dict)
    for candidate, eval_set_id, eval_set_hash in links:  # one query for all candidates, not one each
        versions[candidate][eval_set_id] = eval_set_hash
    return next((c for c in candidates if versions.get(c, {}) == wanted), None)


def stored_eval_sets(run_id: str, engine: Engine | None = None) -> list[EvalSet]:
    """The eval set versions a run evaluated, in the run's order.

    Raises:
        RunNotFoundError: no such run.
    """
    with Session(engine or get_engine()) as session:
        run = _run(session, run_id)
        by_id = _eval_sets(session, run_id)
        return [by_id[eval_set_id] for eval_set_id in run.eval_set_ids if eval_set_id in by_id]


def load_case_records(run_id: str, engine: Engine | None = None) -> list[CaseRecord]:
    """The case results of one run, in the order they were written."""
    with Session(engine or get_engine()) as session:
        statement = select(CaseRecord).where(CaseRecord.run_id == run_id).order_by(col(CaseRecord.id))
        return list(session.exec(statement).all())


def load_report(run_id: str, engine: Engine | None = None) -> RunReport:
    """The `RunReport` of a stored run, as the flow returned it (a run not completed: what was recorded).

    Case runs come in the flow's order (run index, eval set, case in its file) when the eval set versions
    are stored, else in the order they were written; the expected invocations come from those versions.

    Raises:
        RunNotFoundError: no such run.
    """
    with Session(engine or get_engine()) as session:
        run = RunRead.model_validate(_run(session, run_id))
        records = session.exec(select(CaseRecord).where(CaseRecord.run_id == run_id).order_by(col(CaseRecord.id)))
        cases = list(records.all())
        metrics = session.exec(
            select(MetricRecord).where(MetricRecord.run_id == run_id).order_by(col(MetricRecord.id))
        ).all()
        eval_sets = _eval_sets(session, run_id)
    by_case: dict[int | None, list[MetricRecord]] = defaultdict(list)
    for metric in metrics:
        by_case[metric.case_result_id].append(metric)
    results = [_case_result(case, by_case[case.id], eval_sets.get(case.eval_set_id)) for case in cases]
    return _report(run, _in_flow_order(results, run.eval_set_ids, eval_sets))


def _run(session: Session, run_id: str) -> Run:
    run = session.get(Run, run_id)
    if run is None:
        raise RunNotFoundError(run_id, str(session.get_bind().engine.url))  # the password is masked
    return run


def _eval_sets(session: Session, run_id: str) -> dict[str, EvalSet]:
    statement = (
        select(EvalSetVersion)
        .join(RunEvalSet, col(RunEvalSet.eval_set_hash) == col(EvalSetVersion.content_hash))
        .where(RunEvalSet.run_id == run_id)
    )
    return {v.eval_set_id: EvalSet.model_validate(v.content) for v in session.exec(statement).all()}


def _case_result(record: CaseRecord, metrics: list[MetricRecord], eval_set: EvalSet | None) -> CaseResult:
    key = {"eval_set_id": record.eval_set_id, "eval_id": record.eval_id, "run_index": record.run_index}
    case = next((c for c in eval_set.eval_cases if c.eval_id == record.eval_id), None) if eval_set else None
    return CaseResult(
        **key,
        status=EvalStatus(record.status),
        agent_run=agent_run_of(record),
        expected_invocations=case.conversation if case else None,
        metrics=[_metric_result(m, record) for m in metrics],
    )


def agent_run_of(record: CaseRecord) -> AgentRun:
    """The `AgentRun` a stored case result holds: invocations, error (kind, traceback), where it came from."""
    origin = CacheOrigin(run_id=record.cached_from_run_id, invoked_at=as_utc(record.cached_at))
    return AgentRun(
        eval_set_id=record.eval_set_id,
        eval_id=record.eval_id,
        run_index=record.run_index,
        invocations=[Invocation.model_validate(i) for i in record.actual_invocations or []],
        latency_seconds=record.latency_seconds,
        error=record.error,
        error_kind=record.error_kind,
        error_traceback=record.error_traceback,
        attempts=record.attempts,
        token_usage=TokenUsage.model_validate(record.token_usage) if record.token_usage else None,
        final_session_state=record.final_session_state,
        cached_from=origin if record.cached_from_run_id else None,
    )


def _metric_result(metric: MetricRecord, case: CaseRecord) -> MetricResult:
    return MetricResult(
        metric_name=metric.metric_name,
        eval_set_id=case.eval_set_id,
        eval_id=case.eval_id,
        run_index=case.run_index,
        score=metric.score,
        status=EvalStatus(metric.status),
        threshold=metric.threshold,
        explanation=metric.explanation,
        error=metric.error,
        per_invocation=[InvocationScore.model_validate(p) for p in metric.per_invocation or []],
        details=metric.details or {},
    )


def _in_flow_order(cases: list[CaseResult], eval_set_ids: list[str], eval_sets: dict[str, EvalSet]) -> list[CaseResult]:
    """Sorted as the flow ran them; what the stored versions cannot place keeps its written order."""
    set_position = {eval_set_id: i for i, eval_set_id in enumerate(eval_set_ids)}
    case_position = {(s.eval_set_id, c.eval_id): i for s in eval_sets.values() for i, c in enumerate(s.eval_cases)}
    unknown = len(case_position) + len(set_position)
    return sorted(
        cases,
        key=lambda c: (
            c.run_index,
            set_position.get(c.eval_set_id, unknown),
            case_position.get((c.eval_set_id, c.eval_id), unknown),
        ),
    )


def _report(run: RunRead, cases: list[CaseResult]) -> RunReport:
    completed = run.status == RunStatus.COMPLETED and run.summary
    return RunReport(
        run_id=run.id,
        eval_set_ids=run.eval_set_ids,
        agent_reference=run.agent_reference,
        agent_fingerprint=run.agent_fingerprint,
        config=run.config,
        config_hash=run.config_hash,
        num_runs=run.num_runs,
        started_at=run.started_at,
        completed_at=run.completed_at or run.updated_at or run.started_at,
        flow_run_id=run.flow_run_id,
        source_run_id=run.source_run_id,
        cases=cases,
        summary=RunSummary.model_validate(run.summary) if completed else summarize(cases),
        regression=run.regression,
    )
