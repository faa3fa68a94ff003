"""The store: SQLModel tables for eval set versions, runs, case and metric results; SQLite by default,
PostgreSQL by URL; Alembic migrations applied on first use of an engine.

Internal: the public API is `agent_eval`'s; this package's `__all__` serves extension work
(queries over the run history) and may change between releases.

Names are imported on first use (`agent_eval.lazy`), so importing the package is cheap."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_eval.lazy import lazy_exports

if TYPE_CHECKING:
    from agent_eval.store.engine import DB_URL_ENV as DB_URL_ENV
    from agent_eval.store.engine import check_store as check_store
    from agent_eval.store.engine import default_db_url as default_db_url
    from agent_eval.store.engine import get_engine as get_engine
    from agent_eval.store.engine import normalize_url as normalize_url
    from agent_eval.store.engine import shown_url as shown_url
    from agent_eval.store.models import CaseRecord as CaseRecord
    from agent_eval.store.models import EvalSetVersion as EvalSetVersion
    from agent_eval.store.models import MetricRecord as MetricRecord
    from agent_eval.store.models import Run as Run
    from agent_eval.store.models import RunCreate as RunCreate
    from agent_eval.store.models import RunEvalSet as RunEvalSet
    from agent_eval.store.models import RunRead as RunRead
    from agent_eval.store.models import RunStatus as RunStatus
    from agent_eval.store.queries import CaseScore as CaseScore
    from agent_eval.store.queries import RunNotFoundError as RunNotFoundError
    from agent_eval.store.queries import case_run_outcomes as case_run_outcomes
    from agent_eval.store.queries import case_scores as case_scores
    from agent_eval.store.queries import eval_set_hashes as eval_set_hashes
    from agent_eval.store.queries import find_baseline as find_baseline
    from agent_eval.store.queries import get_run as get_run
    from agent_eval.store.queries import list_runs as list_runs
    from agent_eval.store.queries import load_case_records as load_case_records
    from agent_eval.store.queries import metric_means as metric_means
    from agent_eval.store.queries import stored_eval_sets as stored_eval_sets
    from agent_eval.store.reports import agent_run_of as agent_run_of
    from agent_eval.store.reports import load_report as load_report
    from agent_eval.store.repository import HEARTBEAT_SECONDS as HEARTBEAT_SECONDS
    from agent_eval.store.repository import STALE_AFTER as STALE_AFTER
    from agent_eval.store.repository import complete_run as complete_run
    from agent_eval.store.repository import end_run as end_run
    from agent_eval.store.repository import heartbeat as heartbeat
    from agent_eval.store.repository import mark_abandoned_runs as mark_abandoned_runs
    from agent_eval.store.repository import mark_run_crashed as mark_run_crashed
    from agent_eval.store.repository import mark_stale_runs as mark_stale_runs
    from agent_eval.store.repository import record_case_results as record_case_results
    from agent_eval.store.repository import record_case_run as record_case_run
    from agent_eval.store.repository import record_regression as record_regression
    from agent_eval.store.repository import start_run as start_run
    from agent_eval.store.repository import this_host as this_host
    from agent_eval.store.settled import SettledLimits as SettledLimits
    from agent_eval.store.settled import settled_limits as settled_limits


__getattr__, __dir__, __all__ = lazy_exports(__name__, __file__)
