"""ADK's metric models: the criteria, a metric and its results, per invocation and overall."""

from __future__ import annotations

import enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, alias_generators

from agent_eval.schema.base import EvalBaseModel
from agent_eval.schema.eval_sets import Invocation, RubricScore

__all__ = [
    "BaseCriterion",
    "EvalMetric",
    "EvalStatus",
    "EvaluationResult",
    "Interval",
    "MetricInfo",
    "MetricValueInfo",
    "PerInvocationResult",
]


class EvalStatus(enum.IntEnum):
    """Status of a metric or a case; written as ADK's integers."""

    PASSED = 1
    FAILED = 2
    NOT_EVALUATED = 3
    INFORMATIONAL = 4


class BaseCriterion(BaseModel):
    """A criterion: a threshold plus metric-specific options (kept as extra fields, snake or camel case)."""

    model_config = ConfigDict(alias_generator=alias_generators.to_camel, populate_by_name=True, extra="allow")

    threshold: float | None = None


class EvalMetric(EvalBaseModel):
    """A metric to compute, with its threshold and options."""

    metric_name: str
    threshold: float | None = None
    criterion: BaseCriterion | None = None
    custom_function_path: str | None = None

    @property
    def effective_threshold(self) -> float | None:
        """The criterion's threshold, else the deprecated top-level one."""
        if self.criterion is not None and self.criterion.threshold is not None:
            return self.criterion.threshold
        return self.threshold

    def option(self, name: str, default: Any = None) -> Any:
        """A criterion option by its snake_case name (camelCase input is accepted too)."""
        if self.criterion is None:
            return default
        extras = self.criterion.model_extra or {}
        camel = alias_generators.to_camel(name)
        return extras.get(name, extras.get(camel, default))


class PerInvocationResult(EvalBaseModel):
    """A metric's result on one invocation."""

    actual_invocation: Invocation
    expected_invocation: Invocation | None = None
    score: float | None = None
    eval_status: EvalStatus = EvalStatus.NOT_EVALUATED
    rubric_scores: list[RubricScore] | None = None
    explanation: str | None = None


class EvaluationResult(EvalBaseModel):
    """A metric's result on one case run: the overall score and the per-invocation scores."""

    overall_score: float | None = None
    overall_eval_status: EvalStatus = EvalStatus.NOT_EVALUATED
    per_invocation_results: list[PerInvocationResult] = Field(default_factory=list)
    overall_rubric_scores: list[RubricScore] | None = None
    explanation: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)


class Interval(EvalBaseModel):
    """The range a metric's value lives in."""

    min_value: float
    max_value: float
    open_at_min: bool = False
    open_at_max: bool = False

    def contains(self, value: float) -> bool:
        """Whether `value` lies in the interval."""
        above = value > self.min_value if self.open_at_min else value >= self.min_value
        below = value < self.max_value if self.open_at_max else value <= self.max_value
        return above and below


class MetricValueInfo(EvalBaseModel):
    """Information on a metric's values."""

    interval: Interval | None = None


class MetricInfo(EvalBaseModel):
    """A metric's name, description and value range (default [0, 1])."""

    metric_name: str
    description: str | None = None
    metric_value_info: MetricValueInfo = Field(
        default_factory=lambda: MetricValueInfo(interval=Interval(min_value=0.0, max_value=1.0))
    )
