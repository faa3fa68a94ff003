"""Metrics: one registry for built-in and custom metrics, all with ADK's metric signature."""

# Importing the metric modules registers the built-ins.
from agent_eval.metrics import custom, efficiency, response, similarity  # noqa: F401
from agent_eval.metrics.judged import adk, rubrics, rust, user_simulator  # noqa: F401
from agent_eval.metrics.registry import REGISTRY, MetricRegistry, MetricSpec, metric
from agent_eval.metrics.response import response_match_score, rouge1_fmeasure
from agent_eval.metrics.scoring import score_case_run, score_criterion
from agent_eval.metrics.trajectory import adk as adk_trajectory  # noqa: F401
from agent_eval.metrics.trajectory import rust as rust_trajectory  # noqa: F401
from agent_eval.metrics.trajectory import tool_match, vertex  # noqa: F401
from agent_eval.metrics.trajectory.adk import MatchType, tool_trajectory_avg_score, trajectory_matches

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
