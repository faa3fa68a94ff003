"""agent-eval's own run records: what one run of an agent over one case produced."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from agent_eval.schema.base import EvalBaseModel
from agent_eval.schema.eval_sets import Invocation

__all__ = [
    "SERVER_SESSION_KEY",
    "AgentRun",
    "CacheOrigin",
    "ErrorKind",
    "TokenUsage",
]


class TokenUsage(EvalBaseModel):
    """Tokens an agent reported for a case run (all optional: not every agent reports them)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None


ErrorKind = Literal["agent", "transport", "timeout"]
"""Why a case run failed: the agent's own error (a bug, a refusal, a 400), the agent could not be reached
(connection refused, DNS, TLS, 5xx or 429 after the retries, 401/403), or a turn ran out of time."""


class CacheOrigin(EvalBaseModel):
    """Where an invocation came from: the run (and Prefect flow run) that invoked the agent, and when."""

    run_id: str | None = None
    flow_run_id: str | None = None
    invoked_at: datetime | None = None


SERVER_SESSION_KEY = "agent_eval:server_session"
"""The key, in `AgentRun.final_session_state`, of the agent server's own session (`agent_eval.agents.http_agent`):
`{"base_url", "app_name", "user_id", "session_id", "kept"}`."""


class AgentRun(EvalBaseModel):
    """What one run of an agent over one eval case produced: the actual invocations and how it went."""

    eval_set_id: str
    eval_id: str
    run_index: int = 0
    invocations: list[Invocation] = Field(default_factory=list)
    latency_seconds: float = 0.0
    error: str | None = None
    error_kind: ErrorKind | None = None
    error_traceback: str | None = None
    attempts: int = 1
    token_usage: TokenUsage | None = None
    final_session_state: dict[str, Any] | None = None
    cached_from: CacheOrigin | None = None

    @property
    def failed(self) -> bool:
        """Whether the agent itself failed on this case run."""
        return self.error is not None
