"""The plain-Python-callable adapter: `fn(message, session)` called once per turn, sync or async.

Accepted signatures: `fn(message: str)` or `fn(message: str, session: AgentSession)`; the session is fresh
per case run (app, user and state from the case's `session_input`) and its `state` carries over between turns.
Accepted return shapes, per turn:
- `str`: the final response, no tool calls;
- `AgentTurn` (or a dict of its fields: `response`, `tool_calls[{name, args, id?, response?}]`,
  `intermediate_responses`, `input_tokens`, `output_tokens`);
- a Vertex-style dict `{"response": str, "predicted_trajectory": [{"tool_name", "tool_input"}]}`.
Errors: `TransientAgentError`, `TimeoutError` and `ConnectionError` are retried by the flow; any other
exception is the agent's own failure and ends the case run (recorded, not retried).
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable
from typing import Any

import anyio.to_thread
from google.genai import types as genai_types
from pydantic import ValidationError

from agent_eval.agents.base import AgentSession, AgentTurn, ToolCallRecord
from agent_eval.agents.errors import AgentFailure, is_transient
from agent_eval.schema import (
    AgentRun,
    EvalCase,
    IntermediateData,
    Invocation,
    TokenUsage,
    content_text,
)

__all__ = ["CallableAgent", "to_agent_turn"]


class CallableAgent:
    """Runs an eval case by calling a Python function once per user turn."""

    def __init__(self, function: Callable[..., Any], reference: str, fingerprint: str) -> None:
        self._function = function
        self._reference = reference
        self._fingerprint = fingerprint
        self._takes_session = _accepts_two_arguments(function)

    @property
    def reference(self) -> str:
        """The reference the agent was resolved from."""
        return self._reference

    @property
    def fingerprint(self) -> str:
        """Hash of the reference and the agent's source code."""
        return self._fingerprint

    async def run_case(self, case: EvalCase, eval_set_id: str, run_index: int) -> AgentRun:
        """Replay every user turn of `case` in one fresh session.

        Raises:
            AgentFailure: the agent failed for good; carries the invocations made before the failure.
            Exception: a transient error (see `is_transient`), for the caller to retry.
        """
        run = AgentRun(eval_set_id=eval_set_id, eval_id=case.eval_id, run_index=run_index)
        if case.conversation is None:
            raise AgentFailure(
                run.model_copy(
                    update={
                        "error": "conversation_scenario cases need a user simulator, which this agent adapter lacks"
                    }
                )
            )
        session = _fresh_session(case)
        started = time.perf_counter()
        for turn_index, expected in enumerate(case.conversation):
            turn_started = time.perf_counter()
            try:
                turn = await self._call(content_text(expected.user_content), session)
            except Exception as error:
                if is_transient(error):
                    raise
                run.error = f"turn {turn_index + 1}: {type(error).__name__}: {error}"
                run.latency_seconds = time.perf_counter() - started
                raise AgentFailure(run) from error
            session.history.append(turn)
            run.invocations.append(_invocation(expected, turn, time.perf_counter() - turn_started, turn_index))
        run.latency_seconds = time.perf_counter() - started
        run.token_usage = _token_usage(session.history)
        run.final_session_state = session.state
        return run

    async def _call(self, message: str, session: AgentSession) -> AgentTurn:
        args: tuple[Any, ...] = (message, session) if self._takes_session else (message,)
        if inspect.iscoroutinefunction(self._function):
            output = await self._function(*args)
        else:
            # anyio's worker pool (40 threads) rather than asyncio's (cores + 4), so sync agents are not
            # capped below the flow's own concurrency limit.
            output = await anyio.to_thread.run_sync(functools.partial(self._function, *args))
            if inspect.isawaitable(output):
                output = await output
        return to_agent_turn(output)


def to_agent_turn(output: object) -> AgentTurn:
    """Normalise one of the accepted return shapes (module docstring) to an `AgentTurn`.

    Raises:
        TypeError: the output is none of the accepted shapes.
    """
    if isinstance(output, AgentTurn):
        return output
    if isinstance(output, str):
        return AgentTurn(response=output)
    if isinstance(output, dict) and "predicted_trajectory" in output:
        calls = [
            ToolCallRecord(name=step["tool_name"], args=step.get("tool_input") or {})
            for step in output.get("predicted_trajectory") or []
        ]
        return AgentTurn(response=str(output.get("response") or ""), tool_calls=calls)
    if isinstance(output, dict):
        try:
            return AgentTurn.model_validate(output)
        except ValidationError as error:
            raise TypeError(f"the agent returned a dict that is not an AgentTurn: {error}") from None
    raise TypeError(
        f"the agent returned {type(output).__name__}; return a str, an AgentTurn, or a dict "
        "{response, tool_calls} / {response, predicted_trajectory}"
    )


def _accepts_two_arguments(function: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in parameters)


def _fresh_session(case: EvalCase) -> AgentSession:
    given = case.session_input
    if given is None:
        return AgentSession()
    session = AgentSession(app_name=given.app_name, user_id=given.user_id, state=dict(given.state))
    if given.session_id:
        session.session_id = given.session_id
    return session


def _invocation(expected: Invocation, turn: AgentTurn, seconds: float, index: int) -> Invocation:
    calls = [
        genai_types.FunctionCall(id=call.id or f"call_{index}_{i}", name=call.name, args=call.args)
        for i, call in enumerate(turn.tool_calls)
    ]
    responses = [
        genai_types.FunctionResponse(id=call.id, name=call.name, response=_response_dict(record.response))
        for call, record in zip(calls, turn.tool_calls, strict=True)
    ]
    return Invocation(
        invocation_id=expected.invocation_id or f"turn-{index + 1}",
        user_content=expected.user_content,
        final_response=genai_types.Content(role="model", parts=[genai_types.Part(text=turn.response)]),
        intermediate_data=IntermediateData(
            tool_uses=calls,
            tool_responses=responses,
            intermediate_responses=[("agent", [genai_types.Part(text=t)]) for t in turn.intermediate_responses],
        ),
        creation_timestamp=time.time(),
        duration=seconds,
    )


def _response_dict(response: object) -> dict[str, Any]:
    """Function responses are dicts in genai; anything else is wrapped as `{"result": value}`."""
    return response if isinstance(response, dict) else {"result": response}


def _token_usage(turns: list[AgentTurn]) -> TokenUsage | None:
    inputs = [t.input_tokens for t in turns if t.input_tokens is not None]
    outputs = [t.output_tokens for t in turns if t.output_tokens is not None]
    if not inputs and not outputs:
        return None
    total_in, total_out = sum(inputs), sum(outputs)
    return TokenUsage(input_tokens=total_in, output_tokens=total_out, total_tokens=total_in + total_out)
