"""Compare: a run against its baseline (paired bootstrap, regression verdict), the alerts a regression or an
outage sends, and the run-history queries (`history`, `show`, `compare`) over the store.

Internal: the public API is `agent_eval`'s; this package's `__all__` serves extension work
(alert setup, other comparisons) and may change between releases.

Names are imported on first use (`agent_eval.lazy`), so importing the package is cheap."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_eval.lazy import lazy_exports

if TYPE_CHECKING:
    from agent_eval.compare.alerts import DEFAULT_BLOCK_NAME, setup_alerts
    from agent_eval.compare.regression import RegressionReport, compare_runs
    from agent_eval.compare.run_history import Comparison, RunNotFoundError, compare, history, history_json, show

_EXPORTS = {
    "agent_eval.compare.alerts": ("DEFAULT_BLOCK_NAME", "setup_alerts"),
    "agent_eval.compare.run_history": ("Comparison", "RunNotFoundError", "compare", "history", "history_json", "show"),
    "agent_eval.compare.regression": ("RegressionReport", "compare_runs"),
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "DEFAULT_BLOCK_NAME",
    "Comparison",
    "RegressionReport",
    "RunNotFoundError",
    "compare",
    "compare_runs",
    "history",
    "history_json",
    "setup_alerts",
    "show",
]
