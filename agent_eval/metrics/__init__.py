"""Score: one registry for built-in and custom metrics, all called with ADK's metric signature; a built-in is one
function of a `MetricContext` plus its `@metric` line (`registry`), in a family module (`trajectory/`, `judged/`,
`response`, `similarity`, `efficiency`, `custom`).

Internal: the public API is `agent_eval`'s; this package's `__all__` serves extension work
(a new metric family) and may change between releases."""

# Importing the metric modules registers the built-ins.
import agent_eval.metrics.custom
import agent_eval.metrics.efficiency
import agent_eval.metrics.judged.adk
import agent_eval.metrics.judged.rubrics
import agent_eval.metrics.judged.rust
import agent_eval.metrics.judged.user_simulator
import agent_eval.metrics.response
import agent_eval.metrics.similarity
import agent_eval.metrics.trajectory.adk
import agent_eval.metrics.trajectory.rust
import agent_eval.metrics.trajectory.tool_match
import agent_eval.metrics.trajectory.vertex  # noqa: F401 (all twelve: imported for registering)
from agent_eval.metrics.registry import REGISTRY, MetricContext, MetricRegistry, MetricSpec, metric
from agent_eval.metrics.response import response_match_score, rouge1_fmeasure
from agent_eval.metrics.scoring import score_case_run, score_criterion
from agent_eval.metrics.trajectory.adk import MatchType, tool_trajectory_avg_score, trajectory_matches

__all__ = [
    "REGISTRY",
    "MatchType",
    "MetricContext",
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
