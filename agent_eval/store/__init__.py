"""The store: SQLModel tables for runs, case results and metric results; SQLite by default, Postgres by URL."""

from agent_eval.store.engine import DB_URL_ENV, default_db_url, get_engine, normalize_url
from agent_eval.store.models import CaseRecord, MetricRecord, Run, RunStatus
from agent_eval.store.repository import list_runs, load_case_records, save_report

__all__ = [
    "DB_URL_ENV",
    "CaseRecord",
    "MetricRecord",
    "Run",
    "RunStatus",
    "default_db_url",
    "get_engine",
    "list_runs",
    "load_case_records",
    "normalize_url",
    "save_report",
]
