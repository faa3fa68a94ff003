"""The LLM judge's interface: what a judged metric asks, and what one sample of the judge answers.

Judged metrics build `JudgeRequest`s and call `Judge.ask`; the judge client (backends, retries, the shared
concurrency cap, the persisted cache, structured output) lives behind this protocol, so metrics are tested
against any `Judge`, and the client against a fake Gemini server.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, alias_generators

__all__ = ["DEFAULT_JUDGE_MODEL", "Judge", "JudgeExample", "JudgeModelOptions", "JudgeRequest", "JudgeSample"]

DEFAULT_JUDGE_MODEL = "gemini-2.5-flash"


class JudgeModelOptions(BaseModel):
    """ADK's `judge_model_options` (snake or camel keys): which model judges, how, and how many times."""

    model_config = ConfigDict(
        extra="forbid", alias_generator=alias_generators.to_camel, populate_by_name=True, loc_by_alias=False
    )

    judge_model: str = DEFAULT_JUDGE_MODEL
    judge_model_config: dict[str, Any] | None = Field(
        default=None, description="generate_content config for the judge (temperature, ...)."
    )
    num_samples: int = Field(default=5, ge=1, le=100, description="Samples per invocation; majority vote.")
    parallelism_limit: int = Field(default=1, ge=1, description="ADK's per-metric cap (the client also caps).")


class JudgeExample(BaseModel):
    """A person's verdict on an earlier judged item, shown to the judge as an example to follow (agent-eval's
    prompts only; `agent_eval.metrics.judged.prompts.examples_section`). Every text is data, fenced. Keys in
    snake or camel case, as every option."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, alias_generator=alias_generators.to_camel, populate_by_name=True
    )

    user: str = ""
    response: str = ""
    reference: str | None = None
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    rubric: str | None = None
    verdict: bool
    note: str | None = None


class JudgeRequest(BaseModel):
    """One question to the judge.

    Attributes:
        model: the judge model (e.g. `gemini-2.5-flash`, or `openai:<model>` for an OpenAI-compatible server).
        system: the instructions; the judge must follow only these ("" sends no system instruction).
        prompt: the user message: the material to judge, each piece of agent or user text fenced as data.
        response_schema: the pydantic model the answer must fit (structured output); `None` asks for a
            free-text answer that the metric parses itself (ADK-exact judging sends ADK's prompt this way).
        config: extra generation settings (temperature, ...), part of the cache key.
        sample_index: which of the `num_samples` samples this is (part of the cache key, so samples differ).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    model: str
    system: str = ""
    prompt: str
    response_schema: type[BaseModel] | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    sample_index: int = 0


class JudgeSample(BaseModel):
    """One answer of the judge: the parsed verdict, or why there is none (never a silent 0 or 1)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    parsed: BaseModel | None = None
    raw_text: str = ""
    error: str | None = None
    cached: bool = False

    @property
    def usable(self) -> bool:
        """Whether the sample has an answer: a parsed verdict, or (for a free-text request) non-empty text."""
        return self.error is None and (self.parsed is not None or bool(self.raw_text))


@runtime_checkable
class Judge(Protocol):
    """Answers judge requests; never raises for a bad answer (that is a sample with `error` set)."""

    async def ask(self, request: JudgeRequest) -> JudgeSample:
        """One sample for `request` (from the cache when an identical request was answered before)."""
        ...
