"""ADK's `per_turn_user_simulator_quality_v1`: did the simulated user follow its conversation plan, and stop right?

For conversation_scenario cases only (any other case: not applicable). Options: `stop_signal` (default
`</finished>`), `judge_model_options`, `include_intermediate_responses_in_final` (unused here), `judge_mode`
(default `"adk-exact"` when google-adk is installed: ADK's own evaluator scores, see `judged.adk_exact`, and
counts a turn it could not evaluate as failed; the rules below are `"agent-eval"`'s).

Rules (ADK's, with our reliability rules of `judged.adk`):
- Turn 1 scores 1 when its user message is the scenario's `starting_prompt` (stripped), else 0; no judge.
- Every later user message is judged valid (1) or invalid (0) against the plan, the persona (a prebuilt id is
  given with the simulator's description of it), the stop signal and the conversation so far, by majority
  over `num_samples` samples (a tie is invalid).
- A last question asks whether ending the conversation after the final turn was right (the stop signal as
  the next user message); an "invalid" replaces the last turn's result (ADK), its details kept.
- Overall = mean over the evaluated turns. ADK counts a turn it could not evaluate as failed; we leave it out
  (its NOT_EVALUATED result says why), as for every judged metric.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
from collections.abc import Sequence
from typing import Any

from pydantic import Field

from agent_eval.metrics.common import MetricNotApplicable, status_for
from agent_eval.metrics.judged import prompts as jp
from agent_eval.metrics.judged.adk import ValidityAnswer, ask_binary, scored_by_adk
from agent_eval.metrics.judged.mode import AGENT_EVAL, AdkJudgedOptions
from agent_eval.metrics.judged.voting import Question, Scored, gather_scored, judged_result, sampler_for
from agent_eval.metrics.registry import MetricContext, metric
from agent_eval.schema import (
    ConversationScenario,
    EvaluationResult,
    Invocation,
    PerInvocationResult,
    content_text,
)

__all__ = ["UserSimulatorOptions", "UserTurnAnswer", "per_turn_user_simulator_quality_v1"]


class UserSimulatorOptions(AdkJudgedOptions):
    """Options of `per_turn_user_simulator_quality_v1` (ADK's LlmBackedUserSimulatorCriterion)."""

    stop_signal: str = Field(default="</finished>", min_length=1)


class UserTurnAnswer(ValidityAnswer):
    """A valid / invalid verdict on a simulated user's message, with the rules it breaks."""

    reasoning: str = Field(default="", alias="rationale")
    violations: list[str] = Field(default_factory=list)


# ------------------------------------------------------------------------------------------------- judging
def _persona(persona: str | dict[str, Any] | None) -> str:
    """The persona's description: a prebuilt id with the simulator's description of it, or the given JSON."""
    if persona is None:
        return "None given."
    if isinstance(persona, dict):
        return json.dumps(persona, ensure_ascii=False, default=str)
    described = getattr(importlib.import_module("agent_eval.agents.simulator"), "PERSONAS", {}).get(persona.upper())
    return f"{persona}: {described}" if described else persona


def _first_turn(first: Invocation, scenario: ConversationScenario, threshold: float | None) -> Scored:
    """1 when the first user message is the scenario's starting prompt (no judge needed)."""
    score = float(content_text(first.user_content).strip() == scenario.starting_prompt.strip())
    verdict = "is" if score else "is not"
    explanation = f"the first user message {verdict} the scenario's starting_prompt {scenario.starting_prompt!r}"
    result = PerInvocationResult(
        actual_invocation=first, score=score, eval_status=status_for(score, threshold), explanation=explanation
    )
    return result, {"check": "starting_prompt", "score": score, "agreement": None, "unusable_samples": 0}


def _user_turn_question(
    options: UserSimulatorOptions, scenario: ConversationScenario, history: Sequence[Invocation], message: str
) -> Question[UserTurnAnswer]:
    sections = [
        jp.fence("conversation_plan", scenario.conversation_plan),
        jp.fence("user_persona", _persona(scenario.user_persona)),
        jp.fence("stop_signal", options.stop_signal),
        jp.fence("conversation_history", jp.conversation_history(history)),
        jp.fence("user_message", message),
    ]
    task = "Is the user simulator's message valid? Answer as the system message says."
    return Question(jp.USER_SIMULATOR_SYSTEM, jp.user_message(sections, task), UserTurnAnswer)


def _questions(
    options: UserSimulatorOptions, scenario: ConversationScenario, turns: list[Invocation]
) -> list[tuple[Question[UserTurnAnswer], Invocation]]:
    """A question for every user message after the first, then the stop question (on the last turn)."""
    questions = [
        (_user_turn_question(options, scenario, turns[:i], content_text(turn.user_content)), turn)
        for i, turn in enumerate(turns)
        if i
    ]
    return [*questions, (_user_turn_question(options, scenario, turns, options.stop_signal), turns[-1])]


def _with_stop_check(scored: list[Scored], stop: Scored) -> list[Scored]:
    """A stop judged wrong replaces the last turn's result (ADK); the last turn's details stay."""
    if stop[0].score != 0.0:
        return scored
    last, details = scored[-1]
    replaced = stop[0].model_copy(
        update={"explanation": f"ending the conversation after this turn was wrong: {stop[0].explanation}"}
    )
    return [
        *scored[:-1],
        (
            replaced.model_copy(update={"actual_invocation": last.actual_invocation}),
            {**details, "replaced_by_stop_check": True},
        ),
    ]


@metric(
    "per_turn_user_simulator_quality_v1",
    options=UserSimulatorOptions,
    requires_expected=False,
    description="Share of simulated user turns that follow the conversation plan and stop rules (ADK; LLM judge).",
)
async def per_turn_user_simulator_quality_v1(ctx: MetricContext[UserSimulatorOptions]) -> EvaluationResult:
    """ADK's per-turn user simulator quality (see the module docstring)."""
    if ctx.scenario is None:
        raise MetricNotApplicable("the case has no conversation_scenario (no simulated user to judge)")
    if not ctx.actual:
        raise MetricNotApplicable("the conversation has no turn")
    options = ctx.options
    if (exact := await scored_by_adk(dataclasses.replace(ctx, expected=None))) is not None:
        return exact
    sampler, threshold = sampler_for(options), ctx.threshold
    turns, scenario = ctx.actual, ctx.scenario
    jobs = [
        ask_binary(sampler, question, turn, None, threshold) for question, turn in _questions(options, scenario, turns)
    ]
    *later, stop = await gather_scored(jobs)
    scored = _with_stop_check([_first_turn(turns[0], scenario, threshold), *later], stop)
    result = judged_result(scored, threshold, options.judge_model_options, stop_check=stop[1], judge_mode=AGENT_EVAL)
    unusable = result.details["unusable_samples"] + stop[1]["unusable_samples"]
    return result.model_copy(update={"details": {**result.details, "unusable_samples": unusable}})
