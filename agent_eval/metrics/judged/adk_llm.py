"""`ClientLlm`: the model google-adk's judged evaluators call, answered by our judge client.

ADK's evaluators call `generate_content_async(llm_request)` on their model. `ClientLlm` sends the request's
text (ADK's formatted prompt, its one user message) through our judge client as a free-text `JudgeRequest`:
no system instruction, no response schema, the criterion's `judge_model_config`; the client keeps making the
HTTP call (Gemini API, Vertex AI or an OpenAI-compatible server), with its cache, retries and shared
concurrency cap. The answer goes back as ADK's `LlmResponse` (no content for an empty answer, as ADK's Gemini
model gives for a blocked one); a call that failed after the retries raises `JudgeSampleFailed`, which ADK's
evaluators treat as their model raising. Every call is recorded as a `JudgeCall`, with what ADK parsed from it.
The n-th request of the same text in one evaluation is sample n (the judge cache keeps samples apart).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass, field
from typing import Any

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types as genai_types
from pydantic import PrivateAttr

from agent_eval.metrics.judged.base import Judge, JudgeModelOptions, JudgeRequest, JudgeSample
from agent_eval.metrics.judged.usage import ask_within_budget
from agent_eval.metrics.judged.voting import judge_for

__all__ = ["ClientLlm", "JudgeCall", "JudgeSampleFailed", "request_text"]

_CALL_KEY = "agent_eval_judge_call"


class JudgeSampleFailed(Exception):
    """A judge call that failed after the client's retries: to ADK's evaluators, their model raised."""


@dataclass
class JudgeCall:
    """One judge call made for an ADK evaluator, and what ADK made of its answer.

    Attributes:
        prompt: the request text (ADK's prompt, formatted by ADK).
        sample_index: how many requests of the same text came before it in this evaluation (cache key).
        answer: the judge's answer text (None when the call failed).
        error: why the call failed (after the client's retries).
        cached: whether the answer came from the judge cache.
        parsed: whether ADK turned this answer into a score (the metrics that score each sample).
        score: ADK's score of the answer (None: unparseable).
        rubric_scores: ADK's verdict per rubric id, for the rubric metrics.
    """

    prompt: str
    sample_index: int
    answer: str | None = None
    error: str | None = None
    cached: bool = False
    parsed: bool = False
    score: float | None = None
    rubric_scores: dict[str, float | None] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The call as JSON-ready data (for `details`)."""
        if self.error is not None:
            return {"sample_index": self.sample_index, "error": self.error}
        shown: dict[str, Any] = {"sample_index": self.sample_index, "answer": self.answer, "cached": self.cached}
        if self.parsed:
            shown["score"] = self.score
        if self.rubric_scores:
            shown["rubric_scores"] = dict(self.rubric_scores)
        return shown


class ClientLlm(BaseLlm):
    """ADK's model seam, answered by our judge client (see the module docstring)."""

    _judge: Judge | None = PrivateAttr(default=None)
    _options: JudgeModelOptions = PrivateAttr(default_factory=JudgeModelOptions)
    _calls: list[JudgeCall] = PrivateAttr(default_factory=list)
    _asked: Counter[str] = PrivateAttr(default_factory=Counter)

    @classmethod
    def for_options(cls, options: JudgeModelOptions) -> ClientLlm:
        """The model for a criterion's `judge_model_options`, over the judge `judge_for(model)` gives."""
        llm = cls(model=options.judge_model)
        llm._judge, llm._options = judge_for(options.judge_model), options
        return llm

    @property
    def calls(self) -> list[JudgeCall]:
        """Every call made so far, in the order they were made."""
        return list(self._calls)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """One judge call for ADK's request.

        Raises:
            JudgeSampleFailed: the call failed after the client's retries.
        """
        del stream  # a judge answer is never streamed
        prompt = request_text(llm_request)
        call = JudgeCall(prompt=prompt, sample_index=self._asked[prompt])
        self._asked[prompt] += 1
        self._calls.append(call)
        sample = await self._ask(call)
        if sample.error is not None:
            call.error = sample.error
            raise JudgeSampleFailed(sample.error)
        call.answer, call.cached = sample.raw_text, sample.cached
        yield _response(sample.raw_text, len(self._calls) - 1)

    def record_score(
        self, response: LlmResponse, score: float | None, rubric_scores: Mapping[str, float | None] | None = None
    ) -> None:
        """Note ADK's score of the answer it got in `response` (and its verdict per rubric id)."""
        index = (response.custom_metadata or {}).get(_CALL_KEY)
        if isinstance(index, int) and 0 <= index < len(self._calls):
            call = self._calls[index]
            call.parsed, call.score, call.rubric_scores = True, score, dict(rubric_scores or {})

    async def _ask(self, call: JudgeCall) -> JudgeSample:
        assert self._judge is not None, "make a ClientLlm with ClientLlm.for_options"
        request = JudgeRequest(
            model=self._options.judge_model,
            prompt=call.prompt,
            config=dict(self._options.judge_model_config or {}),
            sample_index=call.sample_index,
        )
        try:
            return await ask_within_budget(self._judge, request)
        except Exception as error:  # a judge must not raise; if one does, the call failed
            return JudgeSample(error=f"the judge raised {type(error).__name__}: {error}")


def request_text(llm_request: LlmRequest) -> str:
    """The text of ADK's judge request (its one user message)."""
    parts = [part for content in llm_request.contents for part in content.parts or []]
    return "\n".join(part.text for part in parts if part.text)


def _response(text: str, index: int) -> LlmResponse:
    """ADK's response for an answer: its text, or no content for an empty answer (ADK then finds no score)."""
    content = genai_types.Content(role="model", parts=[genai_types.Part(text=text)]) if text else None
    return LlmResponse(content=content, custom_metadata={_CALL_KEY: index})
