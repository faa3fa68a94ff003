"""The conversation loop every session-based adapter shares: fixed conversations replayed turn by turn, or
a simulated user for `conversation_scenario` cases; errors classified; invocations recorded.

An adapter subclasses `TurnAgent` and implements `answer(message, session)` (plus `open_session` /
`close_session` when it keeps state elsewhere, e.g. an ADK session service or a remote server).
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Sequence
from contextvars import ContextVar
from typing import Protocol, runtime_checkable

from google.genai import types as genai_types

from agent_eval.agents.base import AgentSession, AgentTurn
from agent_eval.agents.errors import AgentFailure, TurnTimeoutError, fail_run, is_transient
from agent_eval.schema import (
    AgentRun,
    ConversationScenario,
    EvalCase,
    IntermediateData,
    Invocation,
    ModelUsage,
    TokenUsage,
    add_usage,
    content_text,
    merged_usage,
)

__all__ = [
    "DEFAULT_MAX_SIMULATED_TURNS",
    "MAX_RESPONSE_CHARS",
    "TurnAgent",
    "UserSimulator",
    "bound_turn",
    "count_simulator_usage",
    "fresh_session",
    "turn_invocation",
]

DEFAULT_MAX_SIMULATED_TURNS = 20
_SIMULATOR_USAGE: ContextVar[dict[str, ModelUsage] | None] = ContextVar("simulator_usage", default=None)
"""The user simulator's tokens of the case run in progress (each case run is a task of its own: its own copy)."""
MAX_RESPONSE_CHARS = 1_000_000
"""Longer final or intermediate texts are cut here (and say so), so a runaway answer cannot exhaust memory."""


@runtime_checkable
class UserSimulator(Protocol):
    """Plays the user of a `conversation_scenario` case."""

    @property
    def fingerprint(self) -> str:
        """Changes when the simulator's behaviour changes (part of the invocation cache key)."""
        ...

    async def next_message(
        self, scenario: ConversationScenario, history: list[AgentTurn], user_messages: Sequence[str]
    ) -> str | None:
        """The user's next message given the conversation so far, or `None` when the user is done.

        Args:
            scenario: the case's goal for the user.
            history: the agent's turns so far.
            user_messages: the user's messages so far, one per turn of `history` (the first is the scenario's
                `starting_prompt`).
        """
        ...


class TurnAgent(ABC):
    """Base of adapters that answer one user message at a time within a session.

    Attributes:
        simulator: plays the user of `conversation_scenario` cases (none: such cases are recorded failures).
        turn_timeout: seconds one turn may take before it is interrupted (`TurnTimeoutError`: retried, then
            recorded with kind `"timeout"`).
        max_simulated_turns: cap on the invocations of a simulated conversation.
    """

    simulator: UserSimulator | None = None
    turn_timeout: float | None = None
    max_simulated_turns: int = DEFAULT_MAX_SIMULATED_TURNS

    @property
    @abstractmethod
    def reference(self) -> str:
        """The string that selects this agent."""

    @property
    @abstractmethod
    def code_fingerprint(self) -> str:
        """A hash of the agent's code or configuration."""

    @property
    def fingerprint(self) -> str:
        """The code fingerprint, plus the simulator's when there is one (part of the cache key)."""
        if self.simulator is None:
            return self.code_fingerprint
        return f"{self.code_fingerprint}+{self.simulator.fingerprint}"

    @abstractmethod
    async def answer(self, message: str, session: AgentSession) -> AgentTurn:
        """The agent's turn for one user message (raise on failure; transient errors are retried)."""

    async def open_session(self, case: EvalCase) -> AgentSession:
        """A fresh session for one case run (app, user and state from the case's `session_input`)."""
        return fresh_session(case)

    async def close_session(self, session: AgentSession) -> None:
        """Release what `open_session` acquired (nothing by default)."""
        del session

    async def preflight(self) -> None:
        """Check cheaply, before the first case, that the agent can be used (nothing to check by default).

        Raises:
            agent_eval.errors.InfrastructureError: the agent's server cannot be reached.
            agent_eval.errors.EvalInputError: the reference names something the server does not have.
        """
        return None

    async def run_case(self, case: EvalCase, eval_set_id: str, run_index: int) -> AgentRun:
        """Run every user turn of `case` in one fresh session.

        Raises:
            AgentFailure: the agent failed for good (its run has the error, its kind and traceback, and the
                invocations made before the failure).
            Exception: a transient error (see `is_transient`), for the caller to retry.
        """
        run = AgentRun(eval_set_id=eval_set_id, eval_id=case.eval_id, run_index=run_index)
        started = time.perf_counter()
        simulated = _SIMULATOR_USAGE.set({})
        try:
            session = await self.open_session(case)
        except Exception as error:
            if is_transient(error):
                raise
            raise _failure(run, error, started) from error
        try:
            await self._converse(case, session, run, started)
        except AgentFailure:
            raise
        except Exception as error:  # from the session or the user simulator, between turns
            if is_transient(error):
                raise
            raise _failure(run, error, started) from error
        finally:
            await self.close_session(session)
            run.final_session_state = session.state  # a failed run's too: where it stopped
            run.token_usage = _token_usage(session.history, _SIMULATOR_USAGE.get() or {})  # a failed run's too
            _SIMULATOR_USAGE.reset(simulated)
        run.latency_seconds = time.perf_counter() - started
        return run

    async def _converse(self, case: EvalCase, session: AgentSession, run: AgentRun, started: float) -> None:
        """Every turn of the case, each recorded on `run` as an invocation."""
        async for index, user_content in self._user_turns(case, session, run):
            turn_started = time.perf_counter()
            turn = await self._answer_once(user_content, session, run, index, started)
            session.history.append(turn)
            run.invocations.append(turn_invocation(user_content, turn, time.perf_counter() - turn_started, index))

    async def _answer_once(
        self, user_content: genai_types.Content, session: AgentSession, run: AgentRun, index: int, started: float
    ) -> AgentTurn:
        """The agent's turn. A transient error is raised as it is, our turn timeout as `TurnTimeoutError`;
        anything else the agent raises, `SystemExit` and `KeyboardInterrupt` included, fails the case run."""
        timer = asyncio.timeout(self.turn_timeout)
        try:
            async with timer:
                return bound_turn(await self.answer(content_text(user_content), session))
        except asyncio.CancelledError:
            raise
        except BaseException as error:  # the agent's own SystemExit or KeyboardInterrupt fails this case run only
            if isinstance(error, TimeoutError) and timer.expired():
                raise TurnTimeoutError(f"turn {index + 1} took longer than {self.turn_timeout:g} s") from None
            if is_transient(error):
                raise
            raise _failure(run, error, started, turn=index + 1) from error

    async def _user_turns(
        self, case: EvalCase, session: AgentSession, run: AgentRun
    ) -> AsyncIterator[tuple[int, genai_types.Content]]:
        """The user contents to send: the case's conversation, or what the simulator says."""
        if case.conversation is not None:
            for index, invocation in enumerate(case.conversation):
                yield index, invocation.user_content
            return
        scenario = case.conversation_scenario
        assert scenario is not None  # an EvalCase has one or the other
        if self.simulator is None:
            run.error = (
                "conversation_scenario cases need a user simulator: set user_simulator_config, and for the "
                "default LLM-backed one GOOGLE_API_KEY or GEMINI_API_KEY (or GOOGLE_GENAI_USE_VERTEXAI=true with "
                "GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION)"
            )
            run.error_kind = "agent"
            raise AgentFailure(run)
        message: str | None = scenario.starting_prompt
        sent: list[str] = []
        while message is not None and len(sent) < self.max_simulated_turns:
            yield len(sent), genai_types.Content(role="user", parts=[genai_types.Part(text=message)])
            sent.append(message)
            if len(sent) < self.max_simulated_turns:  # no model call for a message that would not be sent
                message = await self.simulator.next_message(scenario, session.history, list(sent))


def _failure(run: AgentRun, error: BaseException, started: float, *, turn: int | None = None) -> AgentFailure:
    """The `AgentFailure` for a final error: its run records the error (one line naming the turn, its kind,
    the traceback) and the time taken so far."""
    run.latency_seconds = time.perf_counter() - started
    return fail_run(run, error, turn=turn)


def fresh_session(case: EvalCase) -> AgentSession:
    """A new session with the case's `session_input` (its state copied, so runs never share it)."""
    given = case.session_input
    if given is None:
        return AgentSession()
    session = AgentSession(app_name=given.app_name, user_id=given.user_id, state=dict(given.state))
    if given.session_id:
        session.session_id = given.session_id
    return session


def bound_turn(turn: AgentTurn) -> AgentTurn:
    """The turn with its final and intermediate texts cut to `MAX_RESPONSE_CHARS`, each cut saying how much."""
    turn.response = _bounded(turn.response)
    turn.intermediate_responses = [_bounded(text) for text in turn.intermediate_responses]
    return turn


def _bounded(text: str) -> str:
    extra = len(text) - MAX_RESPONSE_CHARS
    return text if extra <= 0 else f"{text[:MAX_RESPONSE_CHARS]}… [truncated {extra} characters]"


def turn_invocation(user_content: genai_types.Content, turn: AgentTurn, seconds: float, index: int) -> Invocation:
    """The actual invocation of one turn: tool calls with ids, tool responses, intermediate texts, final text."""
    calls = [
        genai_types.FunctionCall(id=call.id or f"call_{index}_{i}", name=call.name, args=call.args)
        for i, call in enumerate(turn.tool_calls)
    ]
    responses = [
        genai_types.FunctionResponse(id=call.id, name=call.name, response=_response_dict(record.response))
        for call, record in zip(calls, turn.tool_calls, strict=True)
    ]
    return Invocation(
        invocation_id=f"turn-{index + 1}",
        user_content=user_content,
        final_response=genai_types.Content(role="model", parts=[genai_types.Part(text=turn.response)]),
        intermediate_data=IntermediateData(
            tool_uses=calls,
            tool_responses=responses,
            intermediate_responses=[("agent", [genai_types.Part(text=t)]) for t in turn.intermediate_responses],
        ),
        creation_timestamp=time.time(),
        duration=seconds,
    )


def _response_dict(response: object) -> dict[str, object]:
    """Function responses are dicts in genai; anything else is wrapped as `{"result": value}`."""
    return response if isinstance(response, dict) else {"result": response}


def count_simulator_usage(model: str, usage: ModelUsage) -> None:
    """Count one user simulator call's tokens in the case run in progress (`TokenUsage.user_simulator`); outside
    a case run (a simulator called on its own) nothing is counted."""
    found = _SIMULATOR_USAGE.get()
    if found is not None:
        add_usage(found, model, usage)


def _token_usage(turns: list[AgentTurn], simulator: dict[str, ModelUsage]) -> TokenUsage | None:
    """The turns' tokens in all (None: no turn reported any, nor the user simulator) and per model, and the user
    simulator's per model."""
    inputs = [t.input_tokens for t in turns if t.input_tokens is not None]
    outputs = [t.output_tokens for t in turns if t.output_tokens is not None]
    by_model = merged_usage(*(turn.model_usage for turn in turns))
    if not inputs and not outputs and not by_model and not simulator:
        return None
    total_in, total_out = (sum(inputs) if inputs else None), (sum(outputs) if outputs else None)
    total = None if total_in is None and total_out is None else (total_in or 0) + (total_out or 0)
    return TokenUsage(
        input_tokens=total_in, output_tokens=total_out, total_tokens=total, by_model=by_model, user_simulator=simulator
    )
