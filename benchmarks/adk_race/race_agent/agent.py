"""The race agent: an ADK `LlmAgent` whose model is a scripted `BaseLlm` that sleeps a set latency per call.

A case's user message names a request number, `#N` (e.g. "Race request #17: ..."). The model answers a turn in
two calls: the first calls the tool `echo(i=N)`, the second (after the tool's response) answers the text
`final_answer(N)`. So every generated case passes `tool_trajectory_avg_score` and `response_match_score` when its
expected tool use is `echo {"i": N}` and its expected final response is `final_answer(N)`, whatever the number of
cases. A message without `#N` gets `i=-1`.

Each model call first sleeps `RACE_LATENCY_SECONDS` seconds (`asyncio.sleep`; default 0), read at each call so
one process can time several latencies. This file imports only google-adk and the standard library: it runs in
ADK's own virtual environment as well as in agent-eval's.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncGenerator

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types

__all__ = ["LATENCY_ENV", "RaceLlm", "echo", "final_answer", "request_message", "root_agent"]

LATENCY_ENV = "RACE_LATENCY_SECONDS"
MODEL_CALLS_PER_CASE = 2
_NUMBER = re.compile(r"#(-?\d+)")


def request_message(number: int) -> str:
    """The user message of case `number`."""
    return f"Race request #{number}: call echo with i={number}, then say you are done."


def final_answer(number: int) -> str:
    """The model's final text for case `number`."""
    return f"Done with request {number}."


def echo(i: int) -> dict[str, int]:
    """Echoes the request number back.

    Args:
        i: the request number.
    """
    return {"i": i}


class RaceLlm(BaseLlm):
    """A scripted model: `echo(i=N)` on the first call of a turn, `final_answer(N)` once the tool answered."""

    model: str = "race-scripted"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """One response, after `RACE_LATENCY_SECONDS` seconds."""
        latency = float(os.environ.get(LATENCY_ENV) or 0)
        if latency > 0:
            await asyncio.sleep(latency)
        number, answered = _turn(llm_request.contents)
        if answered:
            part = types.Part(text=final_answer(number))
        else:
            part = types.Part(function_call=types.FunctionCall(name="echo", args={"i": number}))
        usage = types.GenerateContentResponseUsageMetadata(prompt_token_count=20, candidates_token_count=5)
        yield LlmResponse(content=types.Content(role="model", parts=[part]), usage_metadata=usage)


def _turn(contents: list[types.Content]) -> tuple[int, bool]:
    """(request number of the last user message, whether a tool has answered since it)."""
    answered = False
    for content in reversed(contents):
        parts = content.parts or []
        if any(part.function_response for part in parts):
            answered = True
            continue
        text = "".join(part.text or "" for part in parts)
        if content.role == "user" and text:
            found = _NUMBER.search(text)
            return (int(found.group(1)) if found else -1), answered
    return -1, answered


root_agent = LlmAgent(
    name="race_agent",
    model=RaceLlm(),
    description="Echoes a request number with a tool, then says it is done.",
    instruction="Call echo with the request number, then say you are done.",
    tools=[echo],
)
