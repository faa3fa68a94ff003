"""Metrics: one registry for built-in and custom metrics, all with ADK's metric signature."""

# Importing the metric modules registers the built-ins.
from agent_eval.metrics import (  # noqa: F401
    adk_rust,
    custom,
    efficiency,
    judged,
    judged_rubrics,
    judged_rust,
    judged_user_simulator,
    response,
    tool_match,
    trajectory,
    vertex,
)
from agent_eval.metrics.registry import REGISTRY, MetricRegistry, MetricSpec, metric
from agent_eval.metrics.response import response_match_score, rouge1_fmeasure
from agent_eval.metrics.scoring import score_case_run, score_criterion
from agent_eval.metrics.trajectory import MatchType, tool_trajectory_avg_score, trajectory_matches

__all__ = [
    "REGISTRY",
    "MatchType",
    "MetricRegistry",
    "MetricSpec",
    "metric",
    "response_match_score",
    "rouge1_fmeasure",
    "score_case_run",
    "score_criterion",
    "tool_trajectory_avg_score",
    "trajectory_matches",
]
