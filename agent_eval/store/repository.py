"""Writing run reports to the store and reading runs back."""

from __future__ import annotations

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from agent_eval.report.models import CaseResult, RunReport
from agent_eval.store.engine import get_engine
from agent_eval.store.models import CaseRecord, MetricRecord, Run, RunStatus

__all__ = ["list_runs", "load_case_records", "save_report"]


def save_report(report: RunReport, engine: Engine | None = None) -> str:
    """Persist a run with all its case and metric results in one transaction; returns the run id."""
    engine = engine or get_engine()
    with Session(engine) as session, session.begin():
        session.add(_run_row(report))
        session.flush()
        for case in report.cases:
            record = _case_row(report.run_id, case)
            session.add(record)
            session.flush()
            assert record.id is not None
            session.add_all(_metric_rows(report.run_id, record.id, case))
    return report.run_id


def list_runs(engine: Engine | None = None, limit: int = 20) -> list[Run]:
    """The most recent runs first."""
    with Session(engine or get_engine()) as session:
        statement = select(Run).order_by(col(Run.started_at).desc()).limit(limit)
        return list(session.exec(statement).all())


def load_case_records(run_id: str, engine: Engine | None = None) -> list[CaseRecord]:
    """The case results of one run, in the order they were written."""
    with Session(engine or get_engine()) as session:
        statement = select(CaseRecord).where(CaseRecord.run_id == run_id).order_by(col(CaseRecord.id))
        return list(session.exec(statement).all())


def _run_row(report: RunReport) -> Run:
    summary = report.summary
    return Run(
        id=report.run_id,
        flow_run_id=report.flow_run_id,
        agent_reference=report.agent_reference,
        agent_fingerprint=report.agent_fingerprint,
        config=report.config,
        config_hash=report.config_hash,
        eval_set_ids=report.eval_set_ids,
        num_runs=report.num_runs,
        status=RunStatus.COMPLETED,
        started_at=report.started_at,
        completed_at=report.completed_at,
        total=summary.total,
        passed=summary.passed,
        failed=summary.failed,
        pass_rate=summary.pass_rate,
        summary=summary.model_dump(mode="json"),
    )


def _case_row(run_id: str, case: CaseResult) -> CaseRecord:
    run = case.agent_run
    return CaseRecord(
        run_id=run_id,
        eval_set_id=case.eval_set_id,
        eval_id=case.eval_id,
        run_index=case.run_index,
        status=int(case.status),
        failure=case.failure,
        error=run.error,
        latency_seconds=run.latency_seconds,
        attempts=run.attempts,
        actual_invocations=[inv.model_dump(mode="json", exclude_none=True) for inv in run.invocations],
        token_usage=run.token_usage.model_dump(mode="json") if run.token_usage else None,
    )


def _metric_rows(run_id: str, case_result_id: int, case: CaseResult) -> list[MetricRecord]:
    return [
        MetricRecord(
            run_id=run_id,
            case_result_id=case_result_id,
            metric_name=result.metric_name,
            score=result.score,
            status=int(result.status),
            threshold=result.threshold,
            explanation=result.explanation,
            error=result.error,
            per_invocation=[p.model_dump(mode="json") for p in result.per_invocation],
            details=result.details,
        )
        for result in case.metrics
    ]
