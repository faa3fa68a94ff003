"""The store: SQLModel tables for eval set versions, runs, case and metric results; SQLite by default,
PostgreSQL by URL; Alembic migrations applied on first use of an engine."""

from agent_eval.store.engine import DB_URL_ENV, default_db_url, get_engine, normalize_url
from agent_eval.store.models import (
    CaseRecord,
    EvalSetVersion,
    MetricRecord,
    Run,
    RunCreate,
    RunEvalSet,
    RunRead,
    RunStatus,
)
from agent_eval.store.queries import (
    CaseScore,
    RunNotFoundError,
    case_scores,
    eval_set_hashes,
    get_run,
    list_runs,
    load_case_records,
    load_report,
    metric_means,
)
from agent_eval.store.repository import (
    complete_run,
    mark_run_crashed,
    mark_stale_runs,
    record_case_run,
    save_report,
    start_run,
)

__all__ = [
    "DB_URL_ENV",
    "CaseRecord",
    "CaseScore",
    "EvalSetVersion",
    "MetricRecord",
    "Run",
    "RunCreate",
    "RunEvalSet",
    "RunNotFoundError",
    "RunRead",
    "RunStatus",
    "case_scores",
    "complete_run",
    "default_db_url",
    "eval_set_hashes",
    "get_engine",
    "get_run",
    "list_runs",
    "load_case_records",
    "load_report",
    "mark_run_crashed",
    "mark_stale_runs",
    "metric_means",
    "normalize_url",
    "record_case_run",
    "save_report",
    "start_run",
]
