"""`root_agent`: an ADK `LlmAgent` whose model is scripted (no network), for the real `adk api_server` tests.

Every turn is two model calls: the first calls the tool `lookup(query=<the user's message>)`, the second answers
`answer: <the user's message>` (what `tests/flows/helpers.echo_case` expects). Two environment variables of the
server process steer it:

- `MODEL_CALLS_LOG_ENV`: a file to which each model call appends one line, `<step><TAB><the user's message>`
  (step 1: the tool call, step 2: the answer), so that a test counts the requests the agent really received.
- `SLOW_FILE_ENV`: a file; while it exists, each model call whose user message contains `slow` sleeps as many
  seconds as the file says (after its line is written), so that a test can kill the server while those turns
  are in progress (and run the same cases at full speed before, by leaving the file out).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator
from pathlib import Path

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types

MODEL_CALLS_LOG_ENV = "REAL_ADK_MODEL_CALLS_LOG"
SLOW_FILE_ENV = "REAL_ADK_SLOW_FILE"


def lookup(query: str) -> dict[str, str]:
    """Looks the query up.

    Args:
        query: what to look up.

    Returns:
        The result.
    """
    return {"result": f"found {query}"}


class EchoModel(BaseLlm):
    """Calls `lookup` with the user's message, then answers `answer: <the user's message>`."""

    model: str = "echo-model"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """One response: the tool call before the tool has answered, else the final answer."""
        contents = llm_request.contents
        index = _last_user_message(contents)
        text = "\n".join(part.text or "" for part in contents[index].parts or []) if index >= 0 else ""
        answered = any(part.function_response for content in contents[index + 1 :] for part in content.parts or [])
        _log_call(2 if answered else 1, text)
        if "slow" in text:
            await asyncio.sleep(_slow_seconds())
        part = (
            types.Part(text=f"answer: {text}")
            if answered
            else types.Part(function_call=types.FunctionCall(name="lookup", args={"query": text}))
        )
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


def _last_user_message(contents: list[types.Content]) -> int:
    """The index of the last user message with text (not a function response), else -1."""
    for index in range(len(contents) - 1, -1, -1):
        parts = contents[index].parts or []
        if (
            contents[index].role == "user"
            and any(p.text for p in parts)
            and not any(p.function_response for p in parts)
        ):
            return index
    return -1


def _slow_seconds() -> float:
    switch = Path(os.environ.get(SLOW_FILE_ENV) or "")
    return float(switch.read_text(encoding="utf-8")) if switch.name and switch.is_file() else 0.0


def _log_call(step: int, text: str) -> None:
    path = os.environ.get(MODEL_CALLS_LOG_ENV)
    if path:
        with Path(path).open("a", encoding="utf-8") as log:
            log.write(f"{step}\t{text}\n")


root_agent = LlmAgent(
    name="echo_agent",
    model=EchoModel(),
    instruction="Look the user's message up, then answer it.",
    tools=[lookup],
)
