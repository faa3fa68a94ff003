"""The store: SQLModel tables for eval set versions, runs, case and metric results; SQLite by default,
PostgreSQL by URL; Alembic migrations applied on first use of an engine.

Internal: the public API is `agent_eval`'s; this package's `__all__` serves extension work
(queries over the run history) and may change between releases.

Names are imported on first use (`agent_eval.lazy`), so importing the package is cheap."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_eval.lazy import lazy_exports

if TYPE_CHECKING:
    from agent_eval.store.engine import DB_URL_ENV, check_store, default_db_url, get_engine, normalize_url, shown_url
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
        case_run_outcomes,
        case_scores,
        eval_set_hashes,
        find_baseline,
        get_run,
        list_runs,
        load_case_records,
        metric_means,
        stored_eval_sets,
    )
    from agent_eval.store.reports import agent_run_of, load_report
    from agent_eval.store.repository import (
        HEARTBEAT_SECONDS,
        STALE_AFTER,
        complete_run,
        end_run,
        heartbeat,
        mark_abandoned_runs,
        mark_run_crashed,
        mark_stale_runs,
        record_case_results,
        record_case_run,
        record_regression,
        start_run,
        this_host,
    )

_EXPORTS = {
    "agent_eval.store.engine": (
        "DB_URL_ENV",
        "check_store",
        "default_db_url",
        "get_engine",
        "normalize_url",
        "shown_url",
    ),
    "agent_eval.store.models": (
        "CaseRecord",
        "EvalSetVersion",
        "MetricRecord",
        "Run",
        "RunCreate",
        "RunEvalSet",
        "RunRead",
        "RunStatus",
    ),
    "agent_eval.store.queries": (
        "CaseScore",
        "RunNotFoundError",
        "case_run_outcomes",
        "case_scores",
        "eval_set_hashes",
        "find_baseline",
        "get_run",
        "list_runs",
        "load_case_records",
        "metric_means",
        "stored_eval_sets",
    ),
    "agent_eval.store.reports": ("agent_run_of", "load_report"),
    "agent_eval.store.repository": (
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
    ),
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "DB_URL_ENV",
    "HEARTBEAT_SECONDS",
    "STALE_AFTER",
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
    "agent_run_of",
    "case_run_outcomes",
    "case_scores",
    "check_store",
    "complete_run",
    "default_db_url",
    "end_run",
    "eval_set_hashes",
    "find_baseline",
    "get_engine",
    "get_run",
    "heartbeat",
    "list_runs",
    "load_case_records",
    "load_report",
    "mark_abandoned_runs",
    "mark_run_crashed",
    "mark_stale_runs",
    "metric_means",
    "normalize_url",
    "record_case_results",
    "record_case_run",
    "record_regression",
    "shown_url",
    "start_run",
    "stored_eval_sets",
    "this_host",
]
