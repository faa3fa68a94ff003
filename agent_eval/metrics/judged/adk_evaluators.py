"""google-adk's judged evaluators with our judge client as their model, noting what ADK parsed from each answer.

Each class here is the google-adk evaluator of one metric name, unchanged but for three things: its model is
the `ClientLlm` it is given (not one from ADK's model registry), the score ADK parses from each answer is noted
on the call (`ClientLlm.record_score`), and `Hallucinations` notes each checked text's score and ADK's
validation message per turn. Prompts, parsing, votes and aggregation stay ADK's.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from google.adk.evaluation.conversation_scenarios import ConversationScenario as AdkScenario
from google.adk.evaluation.eval_case import Invocation as AdkInvocation
from google.adk.evaluation.eval_metrics import EvalMetric as AdkEvalMetric
from google.adk.evaluation.evaluator import Evaluator as AdkEvaluator
from google.adk.evaluation.final_response_match_v2 import FinalResponseMatchV2Evaluator
from google.adk.evaluation.hallucinations_v1 import EvaluationStep, HallucinationsV1Evaluator
from google.adk.evaluation.llm_as_judge import AutoRaterScore
from google.adk.evaluation.rubric_based_final_response_quality_v1 import RubricBasedFinalResponseQualityV1Evaluator
from google.adk.evaluation.rubric_based_tool_use_quality_v1 import RubricBasedToolUseV1Evaluator
from google.adk.evaluation.simulation.per_turn_user_simulator_quality_v1 import PerTurnUserSimulatorQualityV1
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse

from agent_eval.metrics.judged.adk_llm import ClientLlm, JudgeCall
from agent_eval.metrics.judged.base import JudgeModelOptions
from agent_eval.schema import ConversationScenario

# ADK's "[EXPERIMENTAL]" notice for its evaluator classes says nothing to a user of agent-eval, which uses them
# internally; and ADK logs a failed judge sample with its traceback: one line is enough (principle 8).
warnings.filterwarnings(
    "ignore",
    message=r"\[EXPERIMENTAL\] (\w*Evaluator|LlmAsJudge|PerTurnUserSimulatorQualityV1)\b",
    category=UserWarning,
)


class _WithoutTraceback(logging.Filter):
    """Keeps a log record's message, drops its traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info, record.exc_text = None, None
        return True


logging.getLogger("google_adk.google.adk.evaluation.llm_as_judge").addFilter(_WithoutTraceback())

__all__ = [
    "EVALUATORS",
    "CheckedText",
    "FinalResponseMatchV2",
    "Hallucinations",
    "RubricFinalResponseQuality",
    "RubricToolUseQuality",
    "UserSimulatorQuality",
    "adk_scenario",
    "samples_per_question",
]


def _record(llm: ClientLlm, response: LlmResponse, score: AutoRaterScore) -> AutoRaterScore:
    rubrics = {rubric.rubric_id: rubric.score for rubric in score.rubric_scores or []}
    llm.record_score(response, score.score, rubrics)
    return score


class _OverClientLlm:
    """What ADK's LLM-as-judge evaluators share here: their auto-rater is our `ClientLlm`, and each parse of
    an answer is noted on its call. Mixed in before ADK's evaluator class."""

    client_llm: ClientLlm

    def __init__(self, eval_metric: AdkEvalMetric, llm: ClientLlm) -> None:
        self.client_llm = llm
        super().__init__(eval_metric)  # type: ignore[call-arg]  # ADK's evaluator, next in the MRO

    def _setup_auto_rater(self) -> BaseLlm:
        return self.client_llm

    def convert_auto_rater_response_to_score(self, auto_rater_response: LlmResponse) -> AutoRaterScore:
        """ADK's parse of the answer, noted on its call."""
        parse = super().convert_auto_rater_response_to_score  # type: ignore[misc]
        return _record(self.client_llm, auto_rater_response, parse(auto_rater_response))


class FinalResponseMatchV2(_OverClientLlm, FinalResponseMatchV2Evaluator):
    """ADK's `final_response_match_v2` evaluator over `ClientLlm`."""


class RubricFinalResponseQuality(_OverClientLlm, RubricBasedFinalResponseQualityV1Evaluator):
    """ADK's `rubric_based_final_response_quality_v1` evaluator over `ClientLlm`."""


class RubricToolUseQuality(_OverClientLlm, RubricBasedToolUseV1Evaluator):
    """ADK's `rubric_based_tool_use_quality_v1` evaluator over `ClientLlm`."""


@dataclass(frozen=True)
class CheckedText:
    """One text `hallucinations_v1` checked: its score and ADK's message (the labels as JSON, or the problem).

    Attributes:
        text: the checked response text.
        score: the share of supported or not applicable sentences; None when unscored.
        message: ADK's validation results (a JSON list) or why the text is unscored.
        calls: the judge calls made for it (the segmenter's, then the validator's).
    """

    text: str
    score: float | None
    message: str
    calls: list[JudgeCall]


class Hallucinations(HallucinationsV1Evaluator):
    """ADK's `hallucinations_v1` evaluator over `ClientLlm`; `turns` holds each turn's checked texts."""

    def __init__(self, eval_metric: AdkEvalMetric, llm: ClientLlm) -> None:
        self.client_llm = llm
        self.turns: list[list[CheckedText]] = []
        super().__init__(eval_metric)

    def _setup_auto_rater(self) -> BaseLlm:
        return self.client_llm

    def _get_steps_to_evaluate(self, actual: AdkInvocation) -> list[EvaluationStep]:
        self.turns.append([])  # ADK asks for each turn's texts once, just before checking them
        return super()._get_steps_to_evaluate(actual)

    async def _evaluate_nl_response(self, nl_response: str, context: str) -> tuple[float | None, str]:
        first = len(self.client_llm.calls)
        score, message = await super()._evaluate_nl_response(nl_response, context)
        self.turns[-1].append(CheckedText(nl_response, score, message, self.client_llm.calls[first:]))
        return score, message


class UserSimulatorQuality(PerTurnUserSimulatorQualityV1):
    """ADK's `per_turn_user_simulator_quality_v1` evaluator over `ClientLlm`."""

    def __init__(self, eval_metric: AdkEvalMetric, llm: ClientLlm) -> None:
        self.client_llm = llm
        super().__init__(eval_metric)

    def _setup_llm(self) -> BaseLlm:
        return self.client_llm

    def _convert_llm_response_to_score(self, auto_rater_response: LlmResponse) -> AutoRaterScore:
        score = super()._convert_llm_response_to_score(auto_rater_response)
        return _record(self.client_llm, auto_rater_response, score)


EVALUATORS: dict[str, Callable[[AdkEvalMetric, ClientLlm], AdkEvaluator]] = {
    "final_response_match_v2": FinalResponseMatchV2,
    "rubric_based_final_response_quality_v1": RubricFinalResponseQuality,
    "rubric_based_tool_use_quality_v1": RubricToolUseQuality,
    "hallucinations_v1": Hallucinations,
    "per_turn_user_simulator_quality_v1": UserSimulatorQuality,
}
"""google-adk's evaluator of each metric name with an ADK-exact mode."""


def adk_scenario(scenario: ConversationScenario | None) -> AdkScenario | None:
    """ADK's copy of a conversation scenario (a persona id becomes ADK's persona of that id)."""
    if scenario is None:
        return None
    data: dict[str, Any] = scenario.model_dump(exclude_none=True)
    return AdkScenario.model_validate(data)


def samples_per_question(evaluator: AdkEvaluator, options: JudgeModelOptions) -> int:
    """How many times ADK asks each question: once for `hallucinations_v1`, else `num_samples`."""
    return 1 if isinstance(evaluator, Hallucinations) else options.num_samples
