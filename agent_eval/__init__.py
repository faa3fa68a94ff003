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

from agent_eval.lazy import lazy_exports

if TYPE_CHECKING:
    from agent_eval.agents.base import Agent, AgentSession, AgentTurn, ToolCallRecord
    from agent_eval.agents.genai_agent import GenaiAgent
    from agent_eval.api import aevaluate, arerun, arescore, evaluate, rerun, rescore
    from agent_eval.compare.run_history import history, show
    from agent_eval.errors import EvalInputError
    from agent_eval.io import load_eval_config, load_eval_set, load_eval_sets
    from agent_eval.metrics.custom import CustomMetric, invocation_metric, register_custom_metric
    from agent_eval.metrics.registry import REGISTRY, metric
    from agent_eval.render import (
        format_summary,
        metrics_table,
        report_json,
        summary_metrics,
        write_html,
        write_junit,
        write_outputs,
    )
    from agent_eval.results import CaseResult, MetricResult, RunReport
    from agent_eval.schema import (
        EvalCase,
        EvalConfig,
        EvalMetric,
        EvalSet,
        EvalStatus,
        EvaluationResult,
        Invocation,
        PerInvocationResult,
    )
    from agent_eval.testing import assert_eval_passes

_EXPORTS = {
    "agent_eval.agents.base": ("Agent", "AgentSession", "AgentTurn", "ToolCallRecord"),
    "agent_eval.agents.genai_agent": ("GenaiAgent",),
    "agent_eval.api": ("aevaluate", "arerun", "arescore", "evaluate", "rerun", "rescore"),
    "agent_eval.compare.run_history": ("history", "show"),
    "agent_eval.errors": ("EvalInputError",),
    "agent_eval.io": ("load_eval_config", "load_eval_set", "load_eval_sets"),
    "agent_eval.metrics.custom": ("CustomMetric", "invocation_metric", "register_custom_metric"),
    "agent_eval.metrics.registry": ("REGISTRY", "metric"),
    "agent_eval.render": (
        "format_summary",
        "metrics_table",
        "report_json",
        "summary_metrics",
        "write_html",
        "write_junit",
        "write_outputs",
    ),
    "agent_eval.results": ("CaseResult", "MetricResult", "RunReport"),
    "agent_eval.schema": (
        "EvalCase",
        "EvalConfig",
        "EvalMetric",
        "EvalSet",
        "EvalStatus",
        "EvaluationResult",
        "Invocation",
        "PerInvocationResult",
    ),
    "agent_eval.testing": ("assert_eval_passes",),
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "REGISTRY",
    "Agent",
    "AgentSession",
    "AgentTurn",
    "CaseResult",
    "CustomMetric",
    "EvalCase",
    "EvalConfig",
    "EvalInputError",
    "EvalMetric",
    "EvalSet",
    "EvalStatus",
    "EvaluationResult",
    "GenaiAgent",
    "Invocation",
    "MetricResult",
    "PerInvocationResult",
    "RunReport",
    "ToolCallRecord",
    "aevaluate",
    "arerun",
    "arescore",
    "assert_eval_passes",
    "evaluate",
    "format_summary",
    "history",
    "invocation_metric",
    "load_eval_config",
    "load_eval_set",
    "load_eval_sets",
    "metric",
    "metrics_table",
    "register_custom_metric",
    "report_json",
    "rerun",
    "rescore",
    "show",
    "summary_metrics",
    "write_html",
    "write_junit",
    "write_outputs",
]
__version__ = "0.1.0"
