"""The google-genai adapter: a Gemini model with Python functions as tools, its function-calling loop run here.

```python
from agent_eval.agents.genai_agent import GenaiAgent

def get_weather(city: str) -> dict:  # its signature and docstring are what the model sees
    return {"city": city, "sky": "sunny"}

my_agent = GenaiAgent(model="gemini-2.5-flash", instruction="You answer weather questions.", tools=[get_weather])
```
Then `agent-eval run FILES --agent pkg.module:my_agent`. Per user turn the agent sends the session's
conversation plus the message; while the model asks for function calls (several in one answer are parallel
calls, run in their order) it runs the tools (`tool_runner`: the case's `tool_mocks` answer first) and sends
the responses back, until the model answers with text or `max_steps` model calls were made (a failure).

Credentials: the client is `google.genai.Client()` from the environment (GOOGLE_API_KEY or GEMINI_API_KEY,
or GOOGLE_GENAI_USE_VERTEXAI=true with GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION; GOOGLE_GEMINI_BASE_URL
moves the endpoint), one per event loop because the SDK's async HTTP client is bound to its loop. Pass
`client=` a `genai.Client` (used as is, on every loop) or a zero-argument factory of them.

Errors: API answers 408, 429 and 5xx, timeouts and lost connections raise `TransientAgentError` (the flow
retries the case run); other API errors (e.g. 400) and a malformed answer are the agent's failure.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import json
import weakref
from collections.abc import Callable, Sequence

from google import genai
from google.genai import errors as genai_errors
from google.genai import types
from pydantic import PrivateAttr

from agent_eval.agents.base import AgentSession, AgentTurn, ToolCallRecord, TransientAgentError
from agent_eval.agents.conversation import TurnAgent, fresh_session
from agent_eval.agents.google_env import GOOGLE_CREDENTIALS_HELP, has_google_credentials
from agent_eval.agents.tool_runner import ToolFunction, check_tools, run_tool, tool_source
from agent_eval.errors import EvalInputError
from agent_eval.schema import EvalCase, ModelUsage, ToolMock, add_usage

__all__ = [
    "CREDENTIALS_HELP",
    "ClientOption",
    "GenaiAgent",
    "GenaiClients",
    "MaxStepsReached",
    "generate",
    "missing_credentials",
]

CREDENTIALS_HELP = GOOGLE_CREDENTIALS_HELP
DEFAULT_MAX_STEPS = 10

ClientOption = genai.Client | Callable[[], genai.Client] | None
"""A client used as is, a factory called once per event loop, or `None` for `genai.Client()`."""


class MaxStepsReached(RuntimeError):
    """The model kept calling tools for `max_steps` model calls without a final answer."""


def missing_credentials() -> bool:
    """Whether the environment lacks what `genai.Client()` needs (see `agent_eval.agents.google_env`)."""
    return not has_google_credentials()


class GenaiClients:
    """Where an adapter's google-genai clients come from (see `ClientOption`), one per event loop."""

    def __init__(self, client: ClientOption) -> None:
        self._given = client if isinstance(client, genai.Client) else None
        self._factory: Callable[[], genai.Client] = genai.Client
        if client is not None and not isinstance(client, genai.Client):
            self._factory = client
        self._from_environment = client is None
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, genai.Client] = weakref.WeakKeyDictionary()

    def check_credentials(self, user: str, *, field: str) -> None:
        """Fail before the run when clients would come from an environment without credentials.

        Raises:
            EvalInputError: naming `user` (what needs the model) and the variables to set.
        """
        if self._from_environment and missing_credentials():
            raise EvalInputError(f"{user} needs Gemini credentials: {CREDENTIALS_HELP}", field=field)

    def get(self) -> genai.Client:
        """The given client, or this event loop's own client (made on first use)."""
        if self._given is not None:
            return self._given
        loop = asyncio.get_running_loop()
        client = self._by_loop.get(loop)
        if client is None:
            client = self._by_loop[loop] = self._factory()
        return client


async def generate(
    client: genai.Client, model: str, contents: list[types.Content], config: types.GenerateContentConfig
) -> types.GenerateContentResponse:
    """One `generateContent` call, its retryable failures raised as `TransientAgentError`.

    Raises:
        TransientAgentError: an API answer 408, 429 or 5xx, a timeout or a lost connection.
        google.genai.errors.APIError: any other API error (not worth retrying).
    """
    try:
        return await client.aio.models.generate_content(model=model, contents=contents, config=config)
    except genai_errors.APIError as error:
        if error.code in (408, 429) or error.code >= 500:
            raise TransientAgentError(f"{model}: {error}", status_code=error.code) from error
        raise
    except _TRANSPORT_ERRORS as error:
        raise TransientAgentError(f"{model}: {type(error).__name__}: {error}") from error


def _transport_errors() -> tuple[type[BaseException], ...]:
    """httpx's (and, when installed, httpx2's and aiohttp's) connection and timeout errors."""
    found: list[type[BaseException]] = []
    for module_name, name in (("httpx", "TransportError"), ("httpx2", "TransportError"), ("aiohttp", "ClientError")):
        try:
            found.append(getattr(importlib.import_module(module_name), name))
        except (ImportError, AttributeError):
            continue
    return tuple(found)


_TRANSPORT_ERRORS = _transport_errors()


class _GenaiSession(AgentSession):
    """A session that also holds the model-side conversation and the case's tool mocks (not user-visible)."""

    _contents: list[types.Content] = PrivateAttr(default_factory=list)
    _mocks: list[ToolMock] = PrivateAttr(default_factory=list)


class GenaiAgent(TurnAgent):
    """A Gemini model with Python tools, evaluated turn by turn (see the module docstring).

    Args:
        model: the model name, e.g. `"gemini-2.5-flash"`.
        instruction: the system instruction.
        tools: Python functions (sync or async) the model may call; their docstrings and type hints are the
            declarations the model sees.
        max_steps: model calls allowed per user turn (each tool round is one).
        client: see `ClientOption`.
        config: extra generation settings (temperature, thinking, ...); tools and instruction are set here.
        name: how the agent is shown in reports (default `genai:<model>`).
        turn_timeout: seconds one turn may take before it is interrupted (a transient error, retried).
    """

    def __init__(
        self,
        model: str,
        instruction: str = "",
        tools: Sequence[ToolFunction] = (),
        *,
        max_steps: int = DEFAULT_MAX_STEPS,
        client: ClientOption = None,
        config: types.GenerateContentConfig | None = None,
        name: str | None = None,
        turn_timeout: float | None = None,
    ) -> None:
        if max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, got {max_steps!r}")
        self.model = model
        self.instruction = instruction
        self.tools = check_tools(tools)
        self.max_steps = max_steps
        self.turn_timeout = turn_timeout
        self._name = name or f"genai:{model}"
        self._clients = GenaiClients(client)
        self._config = self._generate_config(config or types.GenerateContentConfig())

    @property
    def reference(self) -> str:
        """The agent's name (`genai:<model>` unless given)."""
        return self._name

    @property
    def code_fingerprint(self) -> str:
        """Hash of the model, instruction, tools (names and source), max_steps and generation settings."""
        digest = hashlib.sha256(json.dumps([self.model, self.instruction, self.max_steps]).encode())
        for name, function in sorted(self.tools.items()):
            digest.update(f"\0{name}\0{tool_source(function)}".encode())
        digest.update(self._config.model_dump_json(exclude_none=True).encode())
        return digest.hexdigest()[:16]

    def check_credentials(self) -> None:
        """Raise `EvalInputError` when the client comes from an environment without credentials."""
        self._clients.check_credentials(f"agent {self._name!r}", field="agent")

    async def preflight(self) -> None:
        """The agent's check before the run: its credentials (no call is made).

        Raises:
            EvalInputError: the client would come from an environment without credentials.
        """
        self.check_credentials()

    async def open_session(self, case: EvalCase) -> AgentSession:
        """A fresh session that carries the case's tool mocks and the conversation sent to the model."""
        session = _GenaiSession.model_validate(fresh_session(case).model_dump())
        session._mocks = list(case.tool_mocks)
        return session

    async def answer(self, message: str, session: AgentSession) -> AgentTurn:
        """Run the function-calling loop for one user message (module docstring).

        Raises:
            MaxStepsReached: no text answer within `max_steps` model calls.
            TransientAgentError: a retryable API or connection failure.
        """
        state = session if isinstance(session, _GenaiSession) else _GenaiSession()
        contents = [*state._contents, types.Content(role="user", parts=[types.Part(text=message)])]
        turn = AgentTurn()
        client = self._clients.get()
        for _ in range(self.max_steps):
            response = await generate(client, self.model, contents, self._config)
            _add_usage(turn, response, self.model)
            content = _answer_content(response)
            contents.append(content)
            calls = [part.function_call for part in content.parts or [] if part.function_call is not None]
            texts = _texts(content)
            if not calls:
                turn.response = "".join(texts)
                state._contents = contents
                return turn
            turn.intermediate_responses.extend(texts)
            contents.append(await self._run_calls(calls, state._mocks, turn))
        raise MaxStepsReached(f"max_steps reached: {self.max_steps} model calls without a final answer")

    async def _run_calls(
        self, calls: list[types.FunctionCall], mocks: list[ToolMock], turn: AgentTurn
    ) -> types.Content:
        """Run the calls in order, record them on the turn; the function responses for the model."""
        parts: list[types.Part] = []
        for call in calls:
            name, args = call.name or "", dict(call.args or {})
            result = await run_tool(self.tools, mocks, name, args)
            turn.tool_calls.append(ToolCallRecord(name=name, args=args, id=call.id, response=result))
            wrapped = result if isinstance(result, dict) else {"result": result}
            parts.append(types.Part(function_response=types.FunctionResponse(id=call.id, name=name, response=wrapped)))
        return types.Content(role="user", parts=parts)

    def _generate_config(self, base: types.GenerateContentConfig) -> types.GenerateContentConfig:
        declarations = [
            types.FunctionDeclaration.from_callable_with_api_option(callable=function, use_json_schema=True)
            for function in self.tools.values()
        ]
        return base.model_copy(
            update={
                "system_instruction": self.instruction or None,
                "tools": [types.Tool(function_declarations=declarations)] if declarations else None,
                "automatic_function_calling": types.AutomaticFunctionCallingConfig(disable=True),
            }
        )


def _answer_content(response: types.GenerateContentResponse) -> types.Content:
    """The first candidate's content.

    Raises:
        ValueError: no candidate, or one without content (e.g. blocked by a safety filter).
    """
    if not response.candidates:
        feedback = response.prompt_feedback
        raise ValueError(f"the model returned no candidate (prompt feedback: {feedback})")
    candidate = response.candidates[0]
    if candidate.content is None:
        raise ValueError(f"the model returned no content (finish reason: {candidate.finish_reason})")
    return candidate.content


def _texts(content: types.Content) -> list[str]:
    """The content's text parts, thoughts left out."""
    return [part.text for part in content.parts or [] if part.text and not part.thought]


def _add_usage(turn: AgentTurn, response: types.GenerateContentResponse, model: str) -> None:
    """The call's tokens on the turn, in all and under the model that answered (the response's
    `model_version`, else the model asked for)."""
    add_usage(turn.model_usage, response.model_version or model, ModelUsage.of_genai(response.usage_metadata))
    usage = response.usage_metadata
    if usage is None:
        return
    turn.input_tokens = (turn.input_tokens or 0) + (usage.prompt_token_count or 0)
    turn.output_tokens = (turn.output_tokens or 0) + (usage.candidates_token_count or 0)
