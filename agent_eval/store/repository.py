"""Writing runs to the store, incrementally as the flow goes.

The life of a run row (see `agent_eval.flows.evaluate`):

1. `start_run`: the run with status `running`, the eval set versions it evaluates;
2. `record_case_run`: each case run as soon as the agent's invocation finished (its final status comes later);
3. `complete_run`: in one transaction, the final case statuses, every metric result, the summary, `completed`.
   A run evaluated a part at a time (a large recorded input) writes each part's final case statuses and metric
   results as the part is scored (`record_case_results`), and then only completes the run row.

A run that never gets to 3 never looks complete. The ending rules: a flow that fails marks its own run
`crashed`, one cancelled (a signal, the UI) `cancelled`, one that could not reach its agent `errored`
(`end_run`). A process killed outright (SIGKILL, power loss) leaves it `running` until `mark_abandoned_runs`,
called before every run and history command, marks it `crashed`: at once when its process id on this host is
gone, else when its heartbeat (`updated_at`, bumped every `HEARTBEAT_SECONDS` and by each case run written) is
older than `STALE_AFTER`.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from agent_eval.results.model import CaseResult, RunReport
from agent_eval.runtime.processes import process_alive
from agent_eval.schema import AgentRun, EvalSet, EvalStatus
from agent_eval.secrets import redact_text
from agent_eval.store.engine import get_engine
from agent_eval.store.labels import judged_rows, rubric_texts_by_eval_set
from agent_eval.store.models import (
    CaseRecord,
    EvalSetVersion,
    JudgedItemRecord,
    MetricRecord,
    Run,
    RunCreate,
    RunEvalSet,
    RunStatus,
    eval_set_version,
)

__all__ = [
    "HEARTBEAT_SECONDS",
    "STALE_AFTER",
    "complete_run",
    "end_run",
    "heartbeat",
    "mark_abandoned_runs",
    "mark_run_crashed",
    "mark_stale_runs",
    "record_case_results",
    "record_case_run",
    "record_regression",
    "start_run",
    "this_host",
]

CaseKey = tuple[str, str, int]
RubricTexts = Mapping[str, Mapping[str, str]]
"""Per eval set id, its criteria's rubric texts by rubric id."""
_KEYS_PER_QUERY = 500
"""Case ids per `IN (...)` query: well under SQLite's bound on a statement's parameters."""

HEARTBEAT_SECONDS = 30.0
"""How often a running flow bumps its run's `updated_at`."""
STALE_AFTER = timedelta(minutes=10)
"""A running run with no heartbeat for this long is crashed (its process died on another machine)."""


def start_run(run: RunCreate, eval_sets: Sequence[EvalSet] = (), engine: Engine | None = None) -> str:
    """Insert a run (normally status `running`) and the versions of the eval sets it evaluates.

    Args:
        run: the run row; `tags`, `git_commit` and `deployment_name` are optional provenance.
        eval_sets: the eval sets as evaluated; each content version is stored once and linked to the run.
        engine: the store (default: `get_engine()`).

    Returns:
        The run id.
    """
    with Session(engine or get_engine()) as session, session.begin():
        _add_run(session, Run.model_validate(run), eval_sets)
    return run.id


def record_case_run(run_id: str, agent_run: AgentRun, engine: Engine | None = None) -> None:
    """Write (or rewrite) one case run as soon as the agent finished it, and bump the run's heartbeat.

    Its status is FAILED when the agent failed, else NOT_EVALUATED until `complete_run` sets the final one.
    """
    status = EvalStatus.FAILED if agent_run.failed else EvalStatus.NOT_EVALUATED
    with Session(engine or get_engine()) as session, session.begin():
        _upsert_case(session, run_id, agent_run, status, _existing_case(session, run_id, agent_run))
        session.execute(update(Run).where(col(Run.id) == run_id).values(updated_at=datetime.now(UTC)))


def complete_run(report: RunReport, engine: Engine | None = None, *, cases_stored: bool = False) -> str:
    """In one transaction: every case run's final status, every metric result, the summary, `completed`.

    Case runs not yet written are written; metric results written before (a repeated call) are replaced.
    A run that was never started is inserted whole; one marked `crashed` while still alive becomes `completed`.
    `cases_stored`: the case runs and their metric results were written a part at a time (`record_case_results`;
    the report's case runs may then lack their invocations): only the run row is completed.

    Returns:
        The run id.
    """
    with Session(engine or get_engine()) as session, session.begin():
        run = session.get(Run, report.run_id)
        if run is None:
            session.add(_run_row(report))
        else:
            run.sqlmodel_update(_completion(report))
        session.flush()
        if not cases_stored:
            session.execute(delete(MetricRecord).where(col(MetricRecord.run_id) == report.run_id))
            _write_cases(
                session, report.run_id, report.cases, rubric_texts_by_eval_set(report.config, report.eval_set_ids)
            )
    return report.run_id


def record_case_results(run_id: str, cases: Sequence[CaseResult], engine: Engine | None = None) -> None:
    """In one transaction: these case runs with their final status and metric results (metric results written
    before for them are replaced), and the run's heartbeat. A run evaluated a part at a time stores each part so;
    `complete_run(..., cases_stored=True)` then completes it."""
    with Session(engine or get_engine()) as session, session.begin():
        run = session.get(Run, run_id)
        texts = rubric_texts_by_eval_set(run.config or {}, run.eval_set_ids) if run is not None else None
        _write_cases(session, run_id, cases, texts)  # judged items keyed as `complete_run` keys them
        session.execute(update(Run).where(col(Run.id) == run_id).values(updated_at=datetime.now(UTC)))


def record_regression(
    run_id: str, baseline_run_id: str, regressed: bool, payload: dict[str, Any], engine: Engine | None = None
) -> None:
    """Store a run's comparison with its baseline (the payload of `RegressionReport.to_payload`)."""
    with Session(engine or get_engine()) as session, session.begin():
        values = {"baseline_run_id": baseline_run_id, "regressed": regressed, "regression": payload}
        session.execute(update(Run).where(col(Run.id) == run_id).values(**values))


def end_run(run_id: str, status: str, error: str | None = None, engine: Engine | None = None) -> bool:
    """End a run that is still `running` with `status` (crashed, cancelled, errored) and its first cause;
    returns whether it was running. A run that already ended keeps its status."""
    values: dict[str, Any] = {"status": status, "updated_at": datetime.now(UTC)}
    if error is not None:
        values["error"] = error
    with Session(engine or get_engine()) as session, session.begin():
        statement = update(Run).where(col(Run.id) == run_id, col(Run.status) == RunStatus.RUNNING)
        return bool(session.execute(statement.values(**values)).rowcount)  # type: ignore[attr-defined]


def mark_run_crashed(run_id: str, engine: Engine | None = None, error: str | None = None) -> bool:
    """Mark one run `crashed` if it is still `running`; returns whether it was."""
    return end_run(run_id, RunStatus.CRASHED, error, engine)


def heartbeat(run_id: str, engine: Engine | None = None) -> None:
    """Bump a running run's `updated_at`: the flow does it every `HEARTBEAT_SECONDS` while the run lives."""
    with Session(engine or get_engine()) as session, session.begin():
        statement = update(Run).where(col(Run.id) == run_id, col(Run.status) == RunStatus.RUNNING)
        session.execute(statement.values(updated_at=datetime.now(UTC)))


def mark_stale_runs(older_than: timedelta, engine: Engine | None = None, *, now: datetime | None = None) -> list[str]:
    """Mark `crashed` every `running` run with no write for `older_than`; returns their ids, sorted.

    The last write is the run's heartbeat `updated_at` (bumped every `HEARTBEAT_SECONDS` while its flow lives,
    and by each case run written), or its start for runs of the first release.
    """
    cutoff = (now or datetime.now(UTC)) - older_than
    last_write = func.coalesce(col(Run.updated_at), col(Run.started_at))
    with Session(engine or get_engine()) as session:
        stale = select(Run.id).where(col(Run.status) == RunStatus.RUNNING, last_write < cutoff)
        ids = sorted(session.exec(stale).all())
    error = f"no heartbeat for {older_than}: the process that ran it died"
    return [run_id for run_id in ids if end_run(run_id, RunStatus.CRASHED, error, engine)]


def mark_abandoned_runs(engine: Engine | None = None, *, stale_after: timedelta = STALE_AFTER) -> list[str]:
    """Mark `crashed` the running runs whose process is gone: on this host, a process id that no longer
    lives; anywhere, no heartbeat for `stale_after`. Called before every run and history command, so no
    run stays `running` in history. Returns the ids marked."""
    engine = engine or get_engine()
    with Session(engine) as session:
        statement = select(Run.id, Run.pid).where(col(Run.status) == RunStatus.RUNNING, col(Run.host) == this_host())
        dead = {run_id: pid for run_id, pid in session.exec(statement).all() if pid and not process_alive(pid)}
    error = "its process ({pid} on {host}) ended without finishing the run"
    marked = [
        run_id
        for run_id, pid in sorted(dead.items())
        if end_run(run_id, RunStatus.CRASHED, error.format(pid=pid, host=this_host()), engine)
    ]
    return sorted({*marked, *mark_stale_runs(stale_after, engine)})


def this_host() -> str:
    """The name this machine's runs are recorded under."""
    return socket.gethostname()


def _add_run(session: Session, run: Run, eval_sets: Sequence[EvalSet]) -> None:
    """The run row, the eval set versions (each stored once) and the links between them."""
    versions = {eval_set.eval_set_id: eval_set_version(eval_set) for eval_set in eval_sets}
    if eval_sets:
        _insert_missing_versions(session, eval_sets, versions)
    session.add(run)
    session.flush()
    session.add_all(
        RunEvalSet(run_id=run.id, eval_set_id=eval_set_id, eval_set_hash=versions.get(eval_set_id))
        for eval_set_id in dict.fromkeys(run.eval_set_ids or list(versions))
    )


def _insert_missing_versions(session: Session, eval_sets: Sequence[EvalSet], versions: dict[str, str]) -> None:
    """`INSERT ... ON CONFLICT DO NOTHING` (SQLite and PostgreSQL): two runs may store one version at once."""
    now = datetime.now(UTC)
    rows = [
        {
            "content_hash": versions[eval_set.eval_set_id],
            "eval_set_id": eval_set.eval_set_id,
            "content": eval_set.model_dump(mode="json", exclude_none=True),
            "created_at": now,
        }
        for eval_set in eval_sets
    ]
    dialect = postgresql if session.get_bind().dialect.name == "postgresql" else sqlite
    session.execute(dialect.insert(EvalSetVersion).values(rows).on_conflict_do_nothing())


def _existing_case(session: Session, run_id: str, run: AgentRun) -> CaseRecord | None:
    statement = select(CaseRecord).where(
        CaseRecord.run_id == run_id,
        CaseRecord.eval_set_id == run.eval_set_id,
        CaseRecord.eval_id == run.eval_id,
        CaseRecord.run_index == run.run_index,
    )
    return session.exec(statement).first()


def _write_cases(
    session: Session, run_id: str, cases: Sequence[CaseResult], rubric_texts: RubricTexts | None = None
) -> None:
    """The case runs (inserted or updated) with their metric results and judged items, replacing any written
    before for them; the rows already written are read `_KEYS_PER_QUERY` case ids at a time. `rubric_texts`: per
    eval set, its criteria's rubric texts (the judged items' keys include them)."""
    for start in range(0, len(cases), _KEYS_PER_QUERY):
        chunk = cases[start : start + _KEYS_PER_QUERY]
        existing = _existing_cases(session, run_id, {case.eval_id for case in chunk})
        known = [record.id for record in existing.values()]
        session.execute(delete(MetricRecord).where(col(MetricRecord.case_result_id).in_(known)))
        session.execute(delete(JudgedItemRecord).where(col(JudgedItemRecord.case_result_id).in_(known)))
        for case in chunk:
            key = (case.eval_set_id, case.eval_id, case.run_index)
            record = _upsert_case(session, run_id, case.agent_run, case.status, existing.get(key))
            assert record.id is not None
            session.add_all(_metric_rows(run_id, record.id, case))
            session.add_all(judged_rows(run_id, record.id, case, (rubric_texts or {}).get(case.eval_set_id)))


def _existing_cases(session: Session, run_id: str, eval_ids: set[str]) -> dict[CaseKey, CaseRecord]:
    statement = select(CaseRecord).where(CaseRecord.run_id == run_id, col(CaseRecord.eval_id).in_(eval_ids))
    return {(r.eval_set_id, r.eval_id, r.run_index): r for r in session.exec(statement).all()}


def _upsert_case(
    session: Session, run_id: str, run: AgentRun, status: EvalStatus, record: CaseRecord | None
) -> CaseRecord:
    values = _case_values(run_id, run, status)
    if record is None:
        record = CaseRecord.model_validate(values)
    else:
        record.sqlmodel_update(values)
    session.add(record)
    session.flush()
    return record


def _case_values(run_id: str, run: AgentRun, status: EvalStatus) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "eval_set_id": run.eval_set_id,
        "eval_id": run.eval_id,
        "run_index": run.run_index,
        "status": int(status),
        "failure": 1 if run.failed else 0,
        "error": redact_text(run.error) if run.error else None,
        "error_kind": run.error_kind,
        "error_traceback": redact_text(run.error_traceback) if run.error_traceback else None,
        "latency_seconds": run.latency_seconds,
        "attempts": run.attempts,
        "cached_from_run_id": run.cached_from.run_id if run.cached_from else None,
        "cached_at": run.cached_from.invoked_at if run.cached_from else None,
        "actual_invocations": [inv.model_dump(mode="json", exclude_none=True) for inv in run.invocations],
        "token_usage": run.token_usage.stored() if run.token_usage else None,
        "final_session_state": run.final_session_state,
    }


def _completion(report: RunReport) -> dict[str, Any]:
    """The columns a finished run sets: `completed`, `errored` (with its cause) for an outage, or `stopped` (with
    why) by its budget."""
    summary = report.summary
    ended = {RunStatus.ERRORED, RunStatus.STOPPED}
    return {
        "status": report.status if report.status in ended else RunStatus.COMPLETED,
        "error": report.error,
        "completed_at": report.completed_at,
        "updated_at": report.completed_at,
        "total": summary.total,
        "passed": summary.passed,
        "failed": summary.failed,
        "pass_rate": summary.pass_rate,
        "summary": summary.model_dump(mode="json"),
    }


def _run_row(report: RunReport) -> Run:
    return Run(
        id=report.run_id,
        flow_run_id=report.flow_run_id,
        agent_reference=report.agent_reference,
        agent_fingerprint=report.agent_fingerprint,
        config=report.config,
        config_hash=report.config_hash,
        eval_set_ids=report.eval_set_ids,
        num_runs=report.num_runs,
        started_at=report.started_at,
        store_url=report.store,
        judges=report.judges,
        **_completion(report),
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
