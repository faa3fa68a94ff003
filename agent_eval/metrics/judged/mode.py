"""Which prompts and rules judge ADK's judged metrics: ADK's own ("adk-exact") or agent-eval's ("agent-eval").

ADK's judged metrics (`final_response_match_v2`, `rubric_based_final_response_quality_v1`,
`rubric_based_tool_use_quality_v1`, `hallucinations_v1`, `per_turn_user_simulator_quality_v1`) take the
criterion option `judge_mode`:
- `"adk-exact"`: the installed google-adk's own evaluator classes write the judge's requests, parse its
  answers and vote, so a score equals `adk eval`'s on the same judge answers (`judged.adk_exact`). Our judge
  client still makes the calls (backends, cache, retries, the shared concurrency cap).
- `"agent-eval"`: agent-eval's structured prompts and votes (`judged.adk`, `judged.rubrics`, ...): fenced data, a
  JSON answer schema, failed samples dropped from the vote rather than unscoring the turn.
Unset: `"adk-exact"` when google-adk is importable (the `adk` extra), else `"agent-eval"` with one warning per
metric and process saying that scores may differ from `adk eval`. `safety_v1` has only `"agent-eval"`: ADK
scores it with Vertex AI's evaluation service, not with a judge prompt. Every result says its mode in
`details["judge_mode"]`.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
from functools import cache
from typing import Literal, TypeAlias

from pydantic import Field, field_validator, model_validator

from agent_eval.metrics.common import CriterionOptions
from agent_eval.metrics.judged.base import JudgeExample, JudgeModelOptions

__all__ = [
    "ADK_EXACT",
    "AGENT_EVAL",
    "AdkJudgedOptions",
    "JudgeMode",
    "JudgedOptions",
    "adk_installed",
    "check_requested_mode",
    "judge_mode_for",
    "missing_adk_warning",
]

JudgeMode: TypeAlias = Literal["adk-exact", "agent-eval"]
ADK_EXACT: JudgeMode = "adk-exact"
AGENT_EVAL: JudgeMode = "agent-eval"

_log = logging.getLogger(__name__)
_warned: set[str] = set()
_warned_lock = threading.Lock()


@cache
def adk_installed() -> bool:
    """Whether google-adk's evaluation package can be imported (the `adk` extra is installed)."""
    try:
        return importlib.util.find_spec("google.adk.evaluation") is not None
    except ImportError:  # `google.adk` itself missing
        return False


def missing_adk_warning(metric_name: str) -> str:
    """The one-line warning given when google-adk is missing for an ADK judged metric."""
    return f"scores of {metric_name} may differ from `adk eval`: install agent-eval[adk] for ADK's own judge prompts"


def check_requested_mode(value: JudgeMode | None) -> JudgeMode | None:
    """A `judge_mode` option, checked: `"adk-exact"` needs google-adk.

    Raises:
        ValueError: `"adk-exact"` is asked for and google-adk is not installed.
    """
    if value == ADK_EXACT and not adk_installed():
        raise ValueError(
            "judge_mode 'adk-exact' needs google-adk: pip install 'agent-eval[adk]' (or choose 'agent-eval')"
        )
    return value


def judge_mode_for(metric_name: str, requested: JudgeMode | None) -> JudgeMode:
    """The mode that scores `metric_name`: the requested one, else ADK's when google-adk is installed.

    Without google-adk and without a requested mode, warns once per metric name in this process.
    """
    if requested is not None:
        return requested
    if adk_installed():
        return ADK_EXACT
    with _warned_lock:
        first = metric_name not in _warned
        _warned.add(metric_name)
    if first:
        _log.warning(missing_adk_warning(metric_name))
    return AGENT_EVAL


class JudgedOptions(CriterionOptions):
    """Options of every judged metric (ADK's LlmAsAJudgeCriterion), and agent-eval's examples for the judge.

    `judge_examples`: people's verdicts on earlier items, sent with every judge request as fenced examples to
    follow. `judge_profile`: the name of a stored judge profile (`agent-eval judges align`), which the plan turns
    into its `judge_examples` (the newest kept version, or `name@version`). Either needs agent-eval's prompts:
    ADK's prompts have no slot for examples, so a metric with ADK-exact mode takes `judge_mode: "agent-eval"`
    when none is given, and refuses `"adk-exact"`.
    """

    judge_model_options: JudgeModelOptions = Field(default_factory=JudgeModelOptions)
    judge_examples: list[JudgeExample] = Field(default_factory=list)
    judge_profile: str | None = None


class AdkJudgedOptions(JudgedOptions):
    """Options of ADK's judged metrics that have an ADK-exact mode: `judge_mode` too (see `judged.mode`)."""

    judge_mode: JudgeMode | None = None

    @field_validator("judge_mode")
    @classmethod
    def _adk_installed(cls, value: JudgeMode | None) -> JudgeMode | None:
        return check_requested_mode(value)

    @model_validator(mode="after")
    def _examples_need_our_prompts(self) -> AdkJudgedOptions:
        if not (self.judge_examples or self.judge_profile):
            return self
        if self.judge_mode == ADK_EXACT:
            raise ValueError(
                "judge_examples and judge_profile need judge_mode 'agent-eval': ADK's prompts have no slot for examples"
            )
        self.judge_mode = AGENT_EVAL
        return self
