"""Judge backends: one structured-output (or free-text) call to a model, its failures sorted into retryable or not.

A backend returns the answer's raw text; parsing, retries, the concurrency cap and the cache are the
client's (`agent_eval.metrics.judged.client`). `GeminiBackend` calls the Gemini API or Vertex AI through google-genai;
`OpenAIBackend` (`agent_eval.metrics.judged.openai_backend`) calls an OpenAI-compatible server.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Protocol

import httpx
from google import genai
from google.genai import errors as genai_errors
from google.genai import types
from pydantic import ValidationError

from agent_eval.agents.google_env import vertex_enabled
from agent_eval.metrics.judged.base import JudgeRequest
from agent_eval.metrics.judged.credentials import gemini_base_url
from agent_eval.metrics.judged.policy import LoopLocal
from agent_eval.metrics.judged.usage import record_judge_usage
from agent_eval.runtime.ratelimit import ProviderSignal, genai_signal
from agent_eval.schema import ModelUsage
from agent_eval.secrets import redact_text

__all__ = [
    "GeminiBackend",
    "GenaiClientOption",
    "JudgeBackend",
    "JudgeCallError",
    "TransientJudgeError",
    "close_shared_genai_clients",
    "error_for_status",
    "genai_client_from_environment",
    "shared_genai_client",
    "transport_error",
]

GenaiClientOption = genai.Client | Callable[[], genai.Client] | None
"""A client used as is, a factory called once per event loop, or `None` for the environment's client
(`shared_genai_client`)."""


class TransientJudgeError(Exception):
    """A failure worth retrying: 408, 429, 5xx, a timeout or a lost connection.

    Attributes:
        reason: what happened, e.g. `"rate limited"`, `"server error"`, `"timed out"`, `"connection failed"`.
        detail: the status and the server's message, or the transport error (redacted: an httpx error may hold
            a URL with `?key=`).
        signal: the provider's rate-limit or overload signal (429, `RESOURCE_EXHAUSTED`, 503) with the delay it
            asked for, or `None` (`agent_eval.runtime.ratelimit`).
    """

    def __init__(self, reason: str, detail: str, signal: ProviderSignal | None = None) -> None:
        self.reason = reason
        self.detail = redact_text(detail)
        self.signal = signal
        super().__init__(f"{reason}: {self.detail}")


class JudgeCallError(Exception):
    """A failure not worth retrying (a 4xx other than 408/429, a blocked or malformed answer); its message is
    redacted (`agent_eval.secrets.redact_text`).

    Attributes:
        status: the HTTP status when the server answered with an error, else `None`.
    """

    def __init__(self, message: str, *, status: int | None = None) -> None:
        self.status = status
        super().__init__(redact_text(message))


class JudgeBackend(Protocol):
    """Sends one judge request and returns the answer's raw text.

    Attributes:
        identity: names the backend and endpoint in cache keys (`gemini`, `vertex`, `openai@<url>`).
    """

    identity: str

    async def generate(self, request: JudgeRequest) -> str:
        """The raw answer text.

        Raises:
            TransientJudgeError: a retryable failure.
            JudgeCallError: any other failure.
        """
        ...


def error_for_status(
    status: int, detail: str, signal: ProviderSignal | None = None
) -> TransientJudgeError | JudgeCallError:
    """The error for an HTTP error answer: retryable for 408, 429, 5xx and a rate-limit or overload `signal` (the
    answer classified by `agent_eval.runtime.ratelimit`; `None`: not one, e.g. OpenAI's 429
    `insufficient_quota`, retried as an ordinary failure)."""
    if status == 429 or (signal is not None and signal.kind == "rate limited"):
        return TransientJudgeError("rate limited", detail, signal)
    if status == 408:
        return TransientJudgeError("timed out", detail)
    if status >= 500:
        return TransientJudgeError("server error", detail, signal)
    return JudgeCallError(f"judge call rejected: {detail}", status=status)


def transport_error(error: httpx.TransportError) -> TransientJudgeError:
    """A timeout or connection failure of httpx, as a retryable error."""
    reason = "timed out" if isinstance(error, httpx.TimeoutException) else "connection failed"
    return TransientJudgeError(reason, f"{type(error).__name__}: {error}".rstrip(": "))


def genai_client_from_environment() -> genai.Client:
    """`genai.Client()` from the environment, sent to `AGENT_EVAL_GEMINI_BASE_URL` when that is set."""
    base_url = gemini_base_url()
    if base_url is None:
        return genai.Client()
    return genai.Client(http_options=types.HttpOptions(base_url=base_url))


_ENVIRONMENT = (
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_ENTERPRISE",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_VERTEX_BASE_URL",
)
_SHARED_CLIENTS: LoopLocal[dict[tuple[str, ...], genai.Client]] = LoopLocal(dict)


def shared_genai_client() -> genai.Client:
    """The running loop's client for the current environment, shared by every judge made from it (so making
    a judge per metric or per sample opens no new connections)."""
    clients = _SHARED_CLIENTS.get()  # one loop runs in one thread: no lock needed for its dict
    key = (*(os.environ.get(name, "") for name in _ENVIRONMENT), gemini_base_url() or "")
    client = clients.get(key)
    if client is None:
        client = clients[key] = genai_client_from_environment()
    return client


async def close_shared_genai_clients() -> None:
    """Close the running loop's shared clients (`shared_genai_client`); later calls make new ones."""
    for client in (_SHARED_CLIENTS.pop() or {}).values():
        await client.aio.aclose()


class GeminiBackend:
    """The Gemini API or Vertex AI through google-genai, with structured output (JSON fitting the schema), or a
    free-text answer when the request has no schema (an empty one is then returned as "", not an error).

    Args:
        client: see `GenaiClientOption`; the SDK's async client is bound to a loop, so a factory is called
            once per event loop, and the environment's client is made once per loop and environment.
        vertex: whether the client talks to Vertex AI (cache identity); default from the environment.
    """

    def __init__(self, client: GenaiClientOption = None, *, vertex: bool | None = None) -> None:
        self._given = client if isinstance(client, genai.Client) else None
        self._clients: LoopLocal[genai.Client] | None = None
        if client is not None and not isinstance(client, genai.Client):
            self._clients = LoopLocal(client)
        if vertex is None:
            vertex = self._given.vertexai if self._given is not None else vertex_enabled()
        self.identity = "vertex" if vertex else "gemini"
        if self._given is None and gemini_base_url():
            # another endpoint may be another model behind the same name: its answers are cached apart
            self.identity += f"@{gemini_base_url()}"

    async def generate(self, request: JudgeRequest) -> str:
        """One `generateContent` call (see `JudgeBackend.generate`)."""
        config = _generate_config(request)
        client = self._client()
        try:
            response = await client.aio.models.generate_content(
                model=request.model, contents=request.prompt, config=config
            )
        except genai_errors.APIError as error:
            detail = f"{error.code} {error.status}: {error.message}"
            raise error_for_status(error.code, detail, genai_signal(error)) from error
        except httpx.TransportError as error:
            raise transport_error(error) from error
        record_judge_usage(response.model_version or request.model, ModelUsage.of_genai(response.usage_metadata))
        text = response.text
        if not text and request.response_schema is None:
            return ""  # a free-text request: no text is an answer the metric cannot parse, as in ADK
        return _answer_text(response)

    def _client(self) -> genai.Client:
        if self._given is not None:
            return self._given
        return self._clients.get() if self._clients is not None else shared_genai_client()


def _generate_config(request: JudgeRequest) -> types.GenerateContentConfig:
    """The request's config, with structured output (when a schema is given) and the system instruction (if any)."""
    fixed: dict[str, Any] = {}
    if request.response_schema is not None:
        fixed.update(response_mime_type="application/json", response_schema=request.response_schema)
    if request.system:
        fixed["system_instruction"] = request.system
    try:
        return types.GenerateContentConfig(**{**request.config, **fixed})
    except (ValidationError, TypeError) as error:
        first = str(error).splitlines()[0]
        raise JudgeCallError(f"invalid judge config {sorted(request.config)!r}: {first}") from error


def _answer_text(response: types.GenerateContentResponse) -> str:
    """The answer's text; an answer without text (blocked, cut off) is a `JudgeCallError`."""
    text = response.text
    if text:
        return text
    feedback = response.prompt_feedback
    if feedback is not None and feedback.block_reason is not None:
        raise JudgeCallError(f"judge prompt blocked: {feedback.block_reason.value}")
    candidates = response.candidates or []
    reason = candidates[0].finish_reason if candidates else None
    raise JudgeCallError(f"empty judge answer (finish reason {reason.value if reason else 'unknown'})")
