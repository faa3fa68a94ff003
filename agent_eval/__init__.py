"""agent-eval: evaluate AI agents with Prefect flows, ADK / Vertex AI / ADK-Rust compatible metrics, and a
SQLModel run history.

Names are imported on first use (`agent_eval.lazy`), so importing the package is cheap."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_eval.lazy import lazy_exports

if TYPE_CHECKING:
    from agent_eval.api import aevaluate, arerun, arescore, evaluate, rerun, rescore
    from agent_eval.errors import EvalInputError
    from agent_eval.io import load_eval_config, load_eval_set, load_eval_sets
    from agent_eval.metrics import REGISTRY, metric
    from agent_eval.report import RunReport, format_summary
    from agent_eval.schema import EvalCase, EvalConfig, EvalMetric, EvalSet, EvalStatus, EvaluationResult, Invocation

_EXPORTS = {
    "agent_eval.api": ("aevaluate", "arerun", "arescore", "evaluate", "rerun", "rescore"),
    "agent_eval.errors": ("EvalInputError",),
    "agent_eval.io": ("load_eval_config", "load_eval_set", "load_eval_sets"),
    "agent_eval.metrics": ("REGISTRY", "metric"),
    "agent_eval.report": ("RunReport", "format_summary"),
    "agent_eval.schema": (
        "EvalCase",
        "EvalConfig",
        "EvalMetric",
        "EvalSet",
        "EvalStatus",
        "EvaluationResult",
        "Invocation",
    ),
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "REGISTRY",
    "EvalCase",
    "EvalConfig",
    "EvalInputError",
    "EvalMetric",
    "EvalSet",
    "EvalStatus",
    "EvaluationResult",
    "Invocation",
    "RunReport",
    "aevaluate",
    "arerun",
    "arescore",
    "evaluate",
    "format_summary",
    "load_eval_config",
    "load_eval_set",
    "load_eval_sets",
    "metric",
    "rerun",
    "rescore",
]
__version__ = "0.1.0"
