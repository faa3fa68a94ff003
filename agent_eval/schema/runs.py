"""agent-eval's own run records: what one run of an agent over one case produced."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from google.genai import types as genai_types
from pydantic import Field, PrivateAttr

from agent_eval.schema.base import EvalBaseModel
from agent_eval.schema.eval_sets import Invocation

__all__ = [
    "SERVER_SESSION_KEY",
    "UNKNOWN_MODEL",
    "AgentRun",
    "CacheOrigin",
    "ErrorKind",
    "ModelUsage",
    "TokenUsage",
    "add_usage",
    "merged_usage",
]


UNKNOWN_MODEL = "unknown model"
"""The model a call is counted under when the provider's answer names none."""


class ModelUsage(EvalBaseModel):
    """The tokens of one model's calls, as the provider reported them: a count that no call reported stays None
    (unknown, never 0). `input_tokens` are the prompt's (tool-use prompt included, cached input included),
    `cached_input_tokens` the part of them read from the provider's cache, `output_tokens` the answers' (thinking
    excluded), `thinking_tokens` the model's thoughts."""

    calls: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    thinking_tokens: int | None = None

    @classmethod
    def of_genai(cls, usage: genai_types.GenerateContentResponseUsageMetadata | None) -> ModelUsage:
        """One call's usage from google-genai's `usage_metadata` (None: a call that reported nothing)."""
        if usage is None:
            return cls(calls=1)
        return cls(
            calls=1,
            input_tokens=_known_sum([usage.prompt_token_count, usage.tool_use_prompt_token_count]),
            output_tokens=usage.candidates_token_count,
            cached_input_tokens=usage.cached_content_token_count,
            thinking_tokens=usage.thoughts_token_count,
        )

    def plus(self, other: ModelUsage) -> ModelUsage:
        """Both usages together: each count the sum of the known ones (None when neither knows it)."""
        return ModelUsage(
            calls=self.calls + other.calls,
            input_tokens=_known_sum([self.input_tokens, other.input_tokens]),
            output_tokens=_known_sum([self.output_tokens, other.output_tokens]),
            cached_input_tokens=_known_sum([self.cached_input_tokens, other.cached_input_tokens]),
            thinking_tokens=_known_sum([self.thinking_tokens, other.thinking_tokens]),
        )


def add_usage(totals: dict[str, ModelUsage], model: str | None, usage: ModelUsage) -> None:
    """Add one call's (or many calls') usage to per-model totals, in place."""
    name = model or UNKNOWN_MODEL
    totals[name] = totals[name].plus(usage) if name in totals else usage


def merged_usage(*parts: Mapping[str, ModelUsage]) -> dict[str, ModelUsage]:
    """Per-model totals of several per-model usages."""
    totals: dict[str, ModelUsage] = {}
    for part in parts:
        for model, usage in part.items():
            add_usage(totals, model, usage)
    return totals


def _known_sum(values: list[int | None]) -> int | None:
    known = [value for value in values if value is not None]
    return sum(known) if known else None


class TokenUsage(EvalBaseModel):
    """Tokens an agent reported for a case run (all optional: not every agent reports them); `by_model`: per
    model its calls and tokens (empty when the agent named no model)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    by_model: dict[str, ModelUsage] = Field(default_factory=dict)
    user_simulator: dict[str, ModelUsage] = Field(
        default_factory=dict,
        description="Per model, the calls and tokens of the LLM user simulator that played the user of a "
        "`conversation_scenario` case: spent by the case run, not by the agent (not in the totals above).",
    )

    def stored(self) -> dict[str, Any]:
        """As the store keeps it (`case_results.token_usage`): JSON without unknown counts or an empty `by_model`
        or `user_simulator`, so a run whose agent reports no model reads as every release stored it."""
        empty = {name for name in ("by_model", "user_simulator") if not getattr(self, name)}
        return self.model_dump(mode="json", exclude_none=True, exclude=empty or None)

    @property
    def spent(self) -> dict[str, ModelUsage]:
        """Per model, everything the case run's model calls used: the agent's and the user simulator's."""
        return merged_usage(self.by_model, self.user_simulator)


ErrorKind = Literal["agent", "transport", "timeout", "budget", "rate_limit"]
"""Why a case run failed: the agent's own error (a bug, a refusal, a 400), the agent could not be reached
(connection refused, DNS, TLS, 5xx after the retries, 401/403), or a turn ran out of time; `rate_limit`: the
agent or its own model call was answered 429 / `RESOURCE_EXHAUSTED` until the retry deadline
(`agent_eval.flows.case_limit`); `budget`: it never started, the run's budget was reached
(`agent_eval.results.budget`). Neither of the last two is the agent's failure."""


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
    _retry_after: float | None = PrivateAttr(default=None)

    @property
    def retry_after(self) -> float | None:
        """For a rate-limited case run (`error_kind == "rate_limit"`), the seconds its provider asked to wait
        before the next try, when it said; never stored (it only steers the retry)."""
        return self._retry_after

    @retry_after.setter
    def retry_after(self, seconds: float | None) -> None:
        self._retry_after = seconds

    @property
    def failed(self) -> bool:
        """Whether the agent itself failed on this case run (a case run the budget never started did not)."""
        return self.error is not None and self.error_kind != "budget"

    @property
    def not_started(self) -> bool:
        """Whether the case run never started: the run's budget was reached first (`error` says so)."""
        return self.error_kind == "budget"
