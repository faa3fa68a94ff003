"""How agent errors are classified: transient ones are retried, everything else is the agent's failure."""

from __future__ import annotations

from agent_eval.agents.base import TransientAgentError
from agent_eval.schema import AgentRun

__all__ = ["AgentFailure", "is_transient"]

_TRANSIENT_STATUS = {408, 429, 500, 502, 503, 504}


class AgentFailure(Exception):
    """The agent failed for good on a case run; `run` holds what it did before, with `run.error` set."""

    def __init__(self, run: AgentRun) -> None:
        super().__init__(run.error)
        self.run = run


def is_transient(error: BaseException) -> bool:
    """Timeouts, lost connections, rate limits and 5xx answers: worth another attempt."""
    if isinstance(error, TransientAgentError | TimeoutError | ConnectionError):
        return True
    status = getattr(error, "status_code", None) or getattr(error, "code", None)
    return isinstance(status, int) and status in _TRANSIENT_STATUS
