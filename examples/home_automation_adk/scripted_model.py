"""`ScriptedLlm`: an ADK model that answers from a script of rules, for tests and offline demos (no network).

A rule pairs a regular expression, searched (case-insensitively) in the user's message of the current turn,
with the model's steps for that turn: step 1 answers the first model call of the turn, step 2 the call made
after the tools of step 1 have answered, and so on. A step is a reply or a function of a `ScriptContext`
returning one; a reply is a text (the model's answer) or a list of function calls made together, in one
model turn (i.e. in parallel), possibly with texts among them (said along with the calls). The first matching
rule wins; no match, or more model calls than steps, gives the `fallback` text.

What the model sees of a turn: the last user message in the request (ADK's "For context:" transcripts of other
agents, shown to an agent after a transfer, are not user messages), then its own calls and their responses.

Token usage is reported on every response so that token accounting can be tested: input tokens = words in
the request's text parts + 5 per function call or response part; output tokens = words of the reply's text +
5 per function call.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types
from pydantic import Field

__all__ = ["Reply", "Rule", "ScriptContext", "ScriptedLlm", "Step", "call"]

_TRANSCRIPT_PREFIX = "For context:"
"""How ADK starts the transcript of another agent's turn that it shows an agent after a transfer."""
_FUNCTION_PART_TOKENS = 5


@dataclass(frozen=True)
class ScriptContext:
    """What a step function sees: the user's message, the rule's match and the tool responses so far.

    Attributes:
        user_text: the user's message of this turn.
        match: the rule's regular-expression match in `user_text`.
        responses: `(tool name, response dict)` for every function response since the user's message, in order.
    """

    user_text: str
    match: re.Match[str]
    responses: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    @property
    def last(self) -> dict[str, Any]:
        """The latest tool response (`{}` when there is none)."""
        return self.responses[-1][1] if self.responses else {}

    def response_of(self, tool_name: str) -> dict[str, Any]:
        """The latest response of the named tool (`{}` when it has not answered)."""
        return next((response for name, response in reversed(self.responses) if name == tool_name), {})


Reply = str | list[types.FunctionCall | str]
Step = Reply | Callable[[ScriptContext], Reply]


@dataclass(frozen=True)
class Rule:
    """A regular expression on the user's message and the model's steps for a turn that matches it."""

    pattern: str
    steps: Sequence[Step]

    def search(self, text: str) -> re.Match[str] | None:
        """The pattern's match in `text`, ignoring case."""
        return re.search(self.pattern, text, re.IGNORECASE)


def call(name: str, **args: Any) -> types.FunctionCall:
    """A function call for a step, e.g. `call("get_temperature", location="Kitchen")`."""
    return types.FunctionCall(name=name, args=args)


class ScriptedLlm(BaseLlm):
    """An ADK model that plays a script of `Rule`s: deterministic, offline, and safe to share between agents."""

    model: str = "scripted"
    rules: list[Rule] = Field(default_factory=list)
    fallback: str = "Sorry, I can't help with that."

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """One response: the next step of the first rule matching the turn's user message."""
        user_index, user_text = _user_message(llm_request.contents)
        turn = llm_request.contents[user_index + 1 :]
        step_index = sum(1 for content in turn if content.role == "model")
        reply = self._reply(user_text, step_index, _responses(turn))
        parts = [_part(item) for item in ([reply] if isinstance(reply, str) else reply)]
        yield LlmResponse(
            content=types.Content(role="model", parts=parts),
            usage_metadata=types.GenerateContentResponseUsageMetadata(
                prompt_token_count=_token_count(llm_request.contents),
                candidates_token_count=_token_count([types.Content(role="model", parts=parts)]),
            ),
        )

    def _reply(self, user_text: str, step_index: int, responses: list[tuple[str, dict[str, Any]]]) -> Reply:
        for rule in self.rules:
            match = rule.search(user_text)
            if match is None:
                continue
            if step_index >= len(rule.steps):
                return self.fallback
            step = rule.steps[step_index]
            return step(ScriptContext(user_text, match, responses)) if callable(step) else step
        return self.fallback


def _part(item: types.FunctionCall | str) -> types.Part:
    return types.Part(text=item) if isinstance(item, str) else types.Part(function_call=item)


def _user_message(contents: list[types.Content]) -> tuple[int, str]:
    """(index, text) of the last user message; `(-1, "")` when the request has none."""
    for index in range(len(contents) - 1, -1, -1):
        parts = contents[index].parts or []
        texts = [part.text for part in parts if part.text]
        if contents[index].role != "user" or not texts or any(p.function_response for p in parts):
            continue
        if not texts[0].startswith(_TRANSCRIPT_PREFIX):
            return index, "\n".join(texts)
    return -1, ""


def _responses(turn: list[types.Content]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (part.function_response.name or "", dict(part.function_response.response or {}))
        for content in turn
        for part in content.parts or []
        if part.function_response is not None
    ]


def _token_count(contents: list[types.Content]) -> int:
    parts = [part for content in contents for part in content.parts or []]
    words = sum(len(part.text.split()) for part in parts if part.text)
    return words + _FUNCTION_PART_TOKENS * sum(1 for p in parts if p.function_call or p.function_response)
