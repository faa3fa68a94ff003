"""The replay adapter: cases that already hold the agent's invocations (`actual_conversation`) are scored as
they are, with no agent call ("bring your own dataset", recorded traffic).

A recorded case whose turn failed (a span or an event with an error) is a failed case run, as the live agent's
failure would be; tokens are the sum of what the recorded model calls reported."""

from __future__ import annotations

from agent_eval.agents.errors import AgentFailure
from agent_eval.schema import AgentRun, EvalCase, Invocation, InvocationEvents, ModelUsage, TokenUsage, add_usage

__all__ = ["REPLAY_REFERENCE", "ReplayAgent", "replay_agent"]

REPLAY_REFERENCE = "replay"


class ReplayAgent:
    """Returns each case's recorded `actual_conversation`; a case without one is a recorded failure."""

    @property
    def reference(self) -> str:
        """Always `replay`."""
        return REPLAY_REFERENCE

    @property
    def fingerprint(self) -> str:
        """Constant: the output depends only on the case, which is part of the cache key."""
        return "replay-v1"

    async def preflight(self) -> None:
        """Nothing to check: no agent is called."""

    async def run_case(self, case: EvalCase, eval_set_id: str, run_index: int) -> AgentRun:
        """The case's recorded invocations, at no cost.

        Raises:
            AgentFailure: the case has no recorded invocations.
        """
        run = AgentRun(eval_set_id=eval_set_id, eval_id=case.eval_id, run_index=run_index)
        if case.actual_conversation is None:
            run.error = "no recorded response or predicted_trajectory to replay, and no agent given"
            run.error_kind = "agent"
            raise AgentFailure(run)
        run.invocations = list(case.actual_conversation)
        run.latency_seconds = sum(inv.duration or 0.0 for inv in case.actual_conversation)
        run.token_usage = recorded_token_usage(case.actual_conversation)
        if case.recorded is not None and case.recorded.error:
            run.error = f"the recorded session failed: {case.recorded.error}"
            run.error_kind = "agent"
            raise AgentFailure(run)
        return run


def recorded_token_usage(invocations: list[Invocation]) -> TokenUsage | None:
    """The tokens the invocations' model events reported (prompt / candidates, and per model, by each event's
    `model_version`), None when none did."""
    events = [
        event
        for invocation in invocations
        if isinstance(invocation.intermediate_data, InvocationEvents)
        for event in invocation.intermediate_data.invocation_events
        if event.usage_metadata is not None
    ]
    if not events:
        return None
    by_model: dict[str, ModelUsage] = {}
    for event in events:
        add_usage(by_model, event.model_version, ModelUsage.of_genai(event.usage_metadata))
    input_tokens = sum(event.usage_metadata.prompt_token_count or 0 for event in events if event.usage_metadata)
    output_tokens = sum(event.usage_metadata.candidates_token_count or 0 for event in events if event.usage_metadata)
    total = input_tokens + output_tokens
    return TokenUsage(input_tokens=input_tokens, output_tokens=output_tokens, total_tokens=total, by_model=by_model)


def replay_agent(reference: str) -> ReplayAgent:
    """The agent of the `replay` reference form (`agent_eval.agents.references`)."""
    del reference
    return ReplayAgent()
