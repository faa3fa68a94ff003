"""The one agent protocol every adapter implements, and the small types agents return."""

from __future__ import annotations

import uuid
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from agent_eval.schema import AgentRun, EvalCase, ModelUsage

__all__ = ["Agent", "AgentSession", "AgentTurn", "Preflighted", "ToolCallRecord", "TransientAgentError"]


class TransientAgentError(Exception):
    """An error worth retrying (timeout, rate limit, 5xx, lost connection); anything else is final.

    Args:
        *args: the message.
        status_code: the HTTP status that made it transient, when there was one.
        retry_after: the seconds the agent's server asked to wait before the next try (a 429's `Retry-After`),
            when it said; a 429 is a rate limit (`agent_eval.runtime.ratelimit.rate_limit_of`), retried after it.
    """

    def __init__(self, *args: object, status_code: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(*args)
        self.status_code, self.retry_after = status_code, retry_after


class ToolCallRecord(BaseModel):
    """One tool call an agent made, with the tool's response when known."""

    model_config = ConfigDict(extra="forbid")

    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None
    response: Any = None


class AgentTurn(BaseModel):
    """What an agent did for one user message: its tool calls and its final text."""

    model_config = ConfigDict(extra="forbid")

    response: str = ""
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    intermediate_responses: list[str] = Field(default_factory=list)
    input_tokens: int | None = None
    output_tokens: int | None = None
    model_usage: dict[str, ModelUsage] = Field(default_factory=dict)
    """Per model, the calls and tokens of this turn (an adapter that knows the model fills it)."""


class AgentSession(BaseModel):
    """A fresh session per eval case; `state` carries over between the turns of one case."""

    model_config = ConfigDict(extra="forbid")

    app_name: str = "agent_eval"
    user_id: str = "eval_user"
    session_id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    state: dict[str, Any] = Field(default_factory=dict)
    history: list[AgentTurn] = Field(default_factory=list)


@runtime_checkable
class Agent(Protocol):
    """Runs one eval case, all its turns in one fresh session, and reports what happened.

    Implementations return an `AgentRun`, raise `AgentFailure` (its run with `error`, `error_kind` and
    `error_traceback` set) when the agent failed for a reason that is not worth retrying, and raise the
    transient error itself (see `agent_eval.agents.errors.is_transient`) for one that is.

    An agent may also have the `Preflighted` method `async def preflight(self) -> None`: a cheap check that it
    can be used (its server answers, its app exists, its credentials are set), run once per run before the
    first case (`preflight_agent`), before anything is stored. It is optional so that any object with
    `reference`, `fingerprint` and `run_case` stays an agent; the adapters of this package all have one
    (`TurnAgent`'s checks nothing, `GenaiAgent`'s its credentials, `HttpAgent`'s its server and app).
    """

    @property
    def reference(self) -> str:
        """The string that selects this agent (e.g. `"package.module:attr"`)."""
        ...

    @property
    def fingerprint(self) -> str:
        """A hash that changes when the agent's code or version changes (part of the cache key)."""
        ...

    async def run_case(self, case: EvalCase, eval_set_id: str, run_index: int) -> AgentRun:
        """Run every turn of `case` in a fresh session and return the actual invocations."""
        ...


@runtime_checkable
class Preflighted(Protocol):
    """An agent's optional check before the run (see `Agent`)."""

    async def preflight(self) -> None:
        """Check cheaply that the agent can be used.

        Raises:
            agent_eval.errors.EvalInputError: a user mistake (a wrong app name, missing credentials).
            agent_eval.errors.InfrastructureError: the agent's server cannot be reached.
        """
        ...
