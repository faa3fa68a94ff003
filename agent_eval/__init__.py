"""agent-eval: evaluate AI agents with Prefect flows, ADK / Vertex AI / ADK-Rust compatible metrics, and a
SQLModel run history.

The public API is this package's `__all__`: one import path, `from agent_eval import evaluate, RunReport`.
The stage subpackages (`io`, `agents`, `metrics`, `render`, `compare`, `store`) expose their own `__all__` for
extension work (a new agent adapter, metric family or renderer); every other module is an implementation
detail that may change between releases. Each subpackage and internal module says so in its docstring
(`Internal: ...`). `docs/architecture.md` shows the stages and where each lives.

Names are imported on first use (`agent_eval.lazy`), so importing the package is cheap."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_eval.lazy import install_moved_modules, lazy_exports

if TYPE_CHECKING:
    from agent_eval.agents.base import Agent as Agent
    from agent_eval.agents.base import AgentSession as AgentSession
    from agent_eval.agents.base import AgentTurn as AgentTurn
    from agent_eval.agents.base import ToolCallRecord as ToolCallRecord
    from agent_eval.agents.genai_agent import GenaiAgent as GenaiAgent
    from agent_eval.api import aevaluate as aevaluate
    from agent_eval.api import arerun as arerun
    from agent_eval.api import arescore as arescore
    from agent_eval.api import estimate as estimate
    from agent_eval.api import evaluate as evaluate
    from agent_eval.api import rerun as rerun
    from agent_eval.api import rescore as rescore
    from agent_eval.compare.run_history import history as history
    from agent_eval.compare.run_history import show as show
    from agent_eval.errors import EvalInputError as EvalInputError
    from agent_eval.io import load_eval_config as load_eval_config
    from agent_eval.io import load_eval_set as load_eval_set
    from agent_eval.io import load_eval_sets as load_eval_sets
    from agent_eval.judges.api import export_labels as export_labels
    from agent_eval.judges.api import import_labels as import_labels
    from agent_eval.judges.api import judge_agreements as judge_agreements
    from agent_eval.judges.api import label as label
    from agent_eval.metrics.custom import CustomMetric as CustomMetric
    from agent_eval.metrics.custom import invocation_metric as invocation_metric
    from agent_eval.metrics.custom import register_custom_metric as register_custom_metric
    from agent_eval.metrics.registry import REGISTRY as REGISTRY
    from agent_eval.metrics.registry import metric as metric
    from agent_eval.render import format_summary as format_summary
    from agent_eval.render import metrics_table as metrics_table
    from agent_eval.render import report_json as report_json
    from agent_eval.render import summary_metrics as summary_metrics
    from agent_eval.render import write_html as write_html
    from agent_eval.render import write_junit as write_junit
    from agent_eval.render import write_outputs as write_outputs
    from agent_eval.results.estimate import CostEstimate as CostEstimate
    from agent_eval.results.model import CaseResult as CaseResult
    from agent_eval.results.model import MetricResult as MetricResult
    from agent_eval.results.model import RunReport as RunReport
    from agent_eval.schema import EvalCase as EvalCase
    from agent_eval.schema import EvalConfig as EvalConfig
    from agent_eval.schema import EvalMetric as EvalMetric
    from agent_eval.schema import EvalSet as EvalSet
    from agent_eval.schema import EvalStatus as EvalStatus
    from agent_eval.schema import EvaluationResult as EvaluationResult
    from agent_eval.schema import Invocation as Invocation
    from agent_eval.schema import PerInvocationResult as PerInvocationResult
    from agent_eval.testing import assert_eval_passes as assert_eval_passes


__getattr__, __dir__, __all__ = lazy_exports(__name__, __file__)

# Modules that moved when the package root was regrouped by role (0.1 → 0.2): their old paths keep working, with a
# DeprecationWarning, until 0.3. A moved package moves its submodules too (`agent_eval.warm.client`).
install_moved_modules(
    {
        "agent_eval.aggregate": "agent_eval.results.aggregate",
        "agent_eval.background": "agent_eval.runtime.background",
        "agent_eval.cli_parser": "agent_eval.cli.parser",
        "agent_eval.cli_recorded": "agent_eval.cli.recorded",
        "agent_eval.cli_server": "agent_eval.cli.server",
        "agent_eval.cli_values": "agent_eval.cli.values",
        "agent_eval.google_env": "agent_eval.agents.google_env",
        "agent_eval.outage": "agent_eval.results.outage",
        "agent_eval.processes": "agent_eval.runtime.processes",
        "agent_eval.progress": "agent_eval.runtime.progress",
        "agent_eval.request": "agent_eval.plan.request",
        "agent_eval.run_configs": "agent_eval.results.run_configs",
        "agent_eval.server": "agent_eval.runtime.server",
        "agent_eval.shutdown": "agent_eval.cli.shutdown",
        "agent_eval.signals": "agent_eval.runtime.signals",
        "agent_eval.stats": "agent_eval.results.stats",
        "agent_eval.stored_plans": "agent_eval.plan.stored",
        "agent_eval.tool_calls": "agent_eval.results.tool_calls",
        "agent_eval.warm": "agent_eval.runtime.warm",
    }
)

__version__ = "0.1.0"
