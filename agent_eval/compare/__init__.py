"""Compare: a run against its baseline (paired bootstrap, regression verdict), the alerts a regression or an
outage sends, and the run-history queries (`history`, `show`, `compare`) over the store.

Internal: the public API is `agent_eval`'s; this package's `__all__` serves extension work
(alert setup, other comparisons) and may change between releases.

Names are imported on first use (`agent_eval.lazy`), so importing the package is cheap."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_eval.lazy import lazy_exports

if TYPE_CHECKING:
    from agent_eval.compare.alerts import DEFAULT_BLOCK_NAME as DEFAULT_BLOCK_NAME
    from agent_eval.compare.alerts import setup_alerts as setup_alerts
    from agent_eval.compare.regression import RegressionReport as RegressionReport
    from agent_eval.compare.regression import compare_runs as compare_runs
    from agent_eval.compare.run_history import Comparison as Comparison
    from agent_eval.compare.run_history import RunNotFoundError as RunNotFoundError
    from agent_eval.compare.run_history import compare as compare
    from agent_eval.compare.run_history import history as history
    from agent_eval.compare.run_history import history_json as history_json
    from agent_eval.compare.run_history import show as show


__getattr__, __dir__, __all__ = lazy_exports(__name__, __file__)
