"""Reading a whole run back as the `RunReport` the flow returned, in full or as the summaries a comparison reads."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy.engine import Engine
from sqlalchemy.orm import QueryableAttribute, defer
from sqlalchemy.sql.base import ExecutableOption
from sqlmodel import Session, col, select

from agent_eval.results.aggregate import summarize
from agent_eval.results.model import CaseResult, InvocationScore, MetricResult, RunReport, RunSummary
from agent_eval.schema import AgentRun, CacheOrigin, EvalCase, EvalSet, EvalStatus, Invocation, TokenUsage
from agent_eval.store.engine import get_engine
from agent_eval.store.models import CaseRecord, MetricRecord, RunRead, RunStatus, as_utc
from agent_eval.store.queries import eval_set_versions, run_row

__all__ = ["agent_run_of", "load_report"]

_CASE_DETAILS, _METRIC_DETAILS = (
    tuple(cast("QueryableAttribute[Any]", column) for column in columns)  # SQLModel types them as their values
    for columns in (
        (CaseRecord.actual_invocations, CaseRecord.final_session_state),
        (MetricRecord.per_invocation, MetricRecord.details),
    )
)
"""What `load_report(..., details=False)` leaves unread: the large JSON of each case run."""
_READ_CHUNK = 500
"""Case runs read at once by `load_report` (SQLite allows 999 parameters in a statement before 3.32)."""


def load_report(run_id: str, engine: Engine | None = None, *, details: bool = True) -> RunReport:
    """The `RunReport` of a stored run, as the flow returned it (a run not completed: what was recorded).

    Case runs come in the flow's order (run index, eval set, case in its file) when the eval set versions
    are stored, else in the order they were written; the expected invocations come from those versions.
    `details=False`: each case run as a summary (`CaseResult.summary_only`), what a comparison with a baseline
    reads: without its invocations, final session state, expected conversation, per-turn scores and metric
    details, which are then not read from the store at all.

    Raises:
        RunNotFoundError: no such run.
    """
    with Session(engine or get_engine()) as session:
        run = RunRead.model_validate(run_row(session, run_id))
        eval_sets = eval_set_versions(session, run_id)
        results = _case_results(session, run_id, _cases_by_key(eval_sets), details=details)
    return _report(run, _in_flow_order(results, run.eval_set_ids, eval_sets))


def _case_results(
    session: Session, run_id: str, known: dict[tuple[str, str], EvalCase], *, details: bool
) -> list[CaseResult]:
    """The run's case results in the order they were written, read `_READ_CHUNK` case runs (and their metric
    results) at a time: the rows of one chunk are freed before the next is read."""
    ids = list(session.exec(select(CaseRecord.id).where(CaseRecord.run_id == run_id).order_by(col(CaseRecord.id))))
    results: list[CaseResult] = []
    for start in range(0, len(ids), _READ_CHUNK):
        chunk = ids[start : start + _READ_CHUNK]
        case_query = select(CaseRecord).where(col(CaseRecord.id).in_(chunk)).order_by(col(CaseRecord.id))
        metric_query = (
            select(MetricRecord)
            .where(col(MetricRecord.case_result_id).in_(chunk))
            .order_by(col(MetricRecord.case_result_id), col(MetricRecord.id))
        )
        by_case: dict[int | None, list[MetricRecord]] = defaultdict(list)
        for metric in session.exec(metric_query.options(*_unread(_METRIC_DETAILS, details))):
            by_case[metric.case_result_id].append(metric)
        for case in session.exec(case_query.options(*_unread(_CASE_DETAILS, details))):
            known_case = known.get((case.eval_set_id, case.eval_id))
            result = _case_result(case, by_case[case.id], known_case, details=details)
            results.append(result if details else result.summary_only())
        session.expunge_all()  # the chunk's rows go with the last reference to them
    return results


def _unread(columns: tuple[QueryableAttribute[Any], ...], details: bool) -> list[ExecutableOption]:
    """The query options that leave `columns` unread, unless the `details` are asked for."""
    return [] if details else [defer(column) for column in columns]


def _cases_by_key(eval_sets: dict[str, EvalSet]) -> dict[tuple[str, str], EvalCase]:
    """Each stored case by (eval set, case id); of two cases of one id, the first."""
    cases: dict[tuple[str, str], EvalCase] = {}
    for eval_set in eval_sets.values():
        for case in eval_set.eval_cases:
            cases.setdefault((eval_set.eval_set_id, case.eval_id), case)
    return cases


def _case_result(
    record: CaseRecord, metrics: list[MetricRecord], case: EvalCase | None, *, details: bool
) -> CaseResult:
    key = {"eval_set_id": record.eval_set_id, "eval_id": record.eval_id, "run_index": record.run_index}
    return CaseResult(
        **key,
        status=EvalStatus(record.status),
        agent_run=agent_run_of(record, details=details),
        expected_invocations=case.conversation if case and details else None,
        metrics=[_metric_result(m, record, details=details) for m in metrics],
        recorded_from=case.recorded.sources if case is not None and case.recorded is not None else [],
    )


def agent_run_of(record: CaseRecord, *, details: bool = True) -> AgentRun:
    """The `AgentRun` a stored case result holds: invocations, error (kind, traceback), where it came from;
    `details=False`: no invocations nor final session state (see `load_report`)."""
    origin = CacheOrigin(run_id=record.cached_from_run_id, invoked_at=as_utc(record.cached_at))
    return AgentRun(
        eval_set_id=record.eval_set_id,
        eval_id=record.eval_id,
        run_index=record.run_index,
        invocations=[Invocation.model_validate(i) for i in record.actual_invocations or []] if details else [],
        latency_seconds=record.latency_seconds,
        error=record.error,
        error_kind=record.error_kind,
        error_traceback=record.error_traceback,
        attempts=record.attempts,
        token_usage=TokenUsage.model_validate(record.token_usage) if record.token_usage else None,
        final_session_state=record.final_session_state if details else None,
        cached_from=origin if record.cached_from_run_id else None,
    )


def _metric_result(metric: MetricRecord, case: CaseRecord, *, details: bool) -> MetricResult:
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
        per_invocation=[InvocationScore.model_validate(p) for p in metric.per_invocation or []] if details else [],
        details=(metric.details or {}) if details else {},
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


_SUMMARISED = (RunStatus.COMPLETED, RunStatus.ERRORED, RunStatus.STOPPED)
"""The statuses of a run that ended by writing its report, summary included (with what only the run counted:
the judges' and the limits' figures, the cost); a crashed or cancelled run's summary is counted again from its
case runs."""


def _report(run: RunRead, cases: Sequence[CaseResult]) -> RunReport:
    summarised = run.status in _SUMMARISED and run.summary
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
        cases=list(cases),
        summary=RunSummary.model_validate(run.summary) if summarised else summarize(cases),
        regression=run.regression,
        status=run.status,
        error=run.error,
        store=run.store_url,
        judges=run.judges,
    )
