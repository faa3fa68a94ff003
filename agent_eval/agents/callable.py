"""The plain-Python-callable adapter: `fn(message, session)` called once per turn, sync or async.

Accepted signatures: `fn(message: str)` or `fn(message: str, session: AgentSession)`; the session is fresh
per case run (app, user and state from the case's `session_input`) and its `state` carries over between turns.
Accepted return shapes, per turn:
- `str`: the final response, no tool calls;
- `AgentTurn` (or a dict of its fields: `response`, `tool_calls[{name, args, id?, response?}]`,
  `intermediate_responses`, `input_tokens`, `output_tokens`);
- a Vertex-style dict `{"response": str, "predicted_trajectory": [{"tool_name", "tool_input"}]}`.
A sync function runs on a daemon thread of its own (`agent_eval.agents.threads`): a turn that hangs past the
turn timeout is abandoned and never keeps the process from exiting.
Errors: `TransientAgentError`, timeouts, lost connections and HTTP 408 / 429 / 5xx errors are retried by the
flow (`agent_eval.agents.errors.is_transient`); any other exception, `SystemExit` and `KeyboardInterrupt`
included, is the agent's own failure and ends the case run (recorded, not retried).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from agent_eval.agents.base import AgentSession, AgentTurn, ToolCallRecord
from agent_eval.agents.conversation import TurnAgent
from agent_eval.agents.threads import run_in_daemon_thread

__all__ = ["CallableAgent", "to_agent_turn"]


class CallableAgent(TurnAgent):
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
    def code_fingerprint(self) -> str:
        """Hash of the reference and the agent's source code."""
        return self._fingerprint

    async def answer(self, message: str, session: AgentSession) -> AgentTurn:
        """Call the function with the message (and the session when it takes two arguments)."""
        args: tuple[Any, ...] = (message, session) if self._takes_session else (message,)
        if inspect.iscoroutinefunction(self._function):
            output = await self._function(*args)
        else:
            # A daemon thread per turn: no pool caps sync agents below the flow's concurrency limit, and a
            # turn that never returns cannot keep the process alive.
            output = await run_in_daemon_thread(functools.partial(self._function, *args), name="agent-eval-agent-turn")
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
