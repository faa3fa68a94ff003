"""agent-eval: evaluate AI agents with Prefect flows, ADK / Vertex AI / ADK-Rust compatible metrics, and a
SQLModel run history."""

from agent_eval.api import evaluate, rerun, rescore
from agent_eval.errors import EvalInputError
from agent_eval.io import load_eval_config, load_eval_set, load_eval_sets
from agent_eval.metrics import REGISTRY, metric
from agent_eval.report import RunReport, format_summary
from agent_eval.schema import (
    EvalCase,
    EvalConfig,
    EvalMetric,
    EvalSet,
    EvalStatus,
    EvaluationResult,
    Invocation,
)

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
