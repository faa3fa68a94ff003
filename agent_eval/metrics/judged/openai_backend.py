"""An OpenAI-compatible judge backend: `POST {OPENAI_BASE_URL}/chat/completions` with structured output.

The request asks for `response_format: {"type": "json_schema", "json_schema": {"name", "schema", "strict":
true}}`, the schema made strict as OpenAI requires (every object closed, every property listed in
`required`, no `default`). Many local servers (and older OpenAI-compatible ones) reject `json_schema` with a
400: the backend then asks again with `{"type": "json_object"}` and the JSON schema written into the system
prompt, and keeps using `json_object` for that server if the second form is accepted. When both forms are
rejected the first error is reported.

A request without a response schema (free text, ADK-exact judging) is sent as it is: no `response_format`, no
system message unless it has one, and an empty answer is returned as "" for the metric to find unparseable.

Generation settings from `JudgeRequest.config` are translated where the names differ (`max_output_tokens` →
`max_tokens`, `stop_sequences` → `stop`; camelCase keys accepted); other keys are sent as they are.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import httpx
from pydantic import alias_generators

from agent_eval.metrics.judged.backends import JudgeCallError, error_for_status, transport_error
from agent_eval.metrics.judged.base import JudgeRequest
from agent_eval.metrics.judged.credentials import openai_api_key, openai_base_url, openai_model_name
from agent_eval.metrics.judged.policy import LoopLocal
from agent_eval.metrics.judged.usage import record_judge_usage
from agent_eval.runtime.ratelimit import provider_signal
from agent_eval.schema import ModelUsage

__all__ = ["OpenAIBackend", "close_shared_http_client", "strict_json_schema"]

_RENAMED = {"max_output_tokens": "max_tokens", "stop_sequences": "stop"}
_NAMED_SCHEMAS = ("properties", "$defs", "definitions")
_SCHEMA_NOTE = "Answer with one JSON object, and nothing else, that fits this JSON schema:\n"


def _new_http_client() -> httpx.AsyncClient:
    # No httpx timeout: the judge client bounds each attempt itself.
    return httpx.AsyncClient(timeout=httpx.Timeout(None))


_SHARED_CLIENTS: LoopLocal[httpx.AsyncClient] = LoopLocal(_new_http_client)
"""One connection pool per event loop for every `OpenAIBackend` without its own `http_client`."""


async def close_shared_http_client() -> None:
    """Close the running loop's shared connection pool; later calls make a new one."""
    client = _SHARED_CLIENTS.pop()
    if client is not None:
        await client.aclose()


class OpenAIBackend:
    """Chat completions on an OpenAI-compatible server (see the module docstring).

    Args:
        base_url: the API root ending in `/v1`; default `OPENAI_BASE_URL` or `http://127.0.0.1:8000/v1`.
        api_key: sent as a bearer token; default `OPENAI_API_KEY` (none when unset).
        http_client: a factory of `httpx.AsyncClient`, called once per event loop (default: one client per
            loop shared by all backends).
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        http_client: Callable[[], httpx.AsyncClient] | None = None,
    ) -> None:
        self.base_url = (base_url or openai_base_url()).rstrip("/")
        self.api_key = api_key if api_key is not None else openai_api_key()
        self.identity = f"openai@{self.base_url}"
        self.json_schema_supported = True
        self._clients = LoopLocal(http_client) if http_client is not None else _SHARED_CLIENTS

    async def generate(self, request: JudgeRequest) -> str:
        """One chat completion (see `JudgeBackend.generate`), falling back to `json_object` on a 400."""
        if request.response_schema is None:
            return await self._post(_free_text_body(request), empty_ok=True)
        if not self.json_schema_supported:
            return await self._post(_body(request, json_schema=False))
        try:
            return await self._post(_body(request, json_schema=True))
        except JudgeCallError as error:
            if error.status != 400:
                raise
            try:
                text = await self._post(_body(request, json_schema=False))
            except JudgeCallError as fallback_error:
                raise error from fallback_error
        self.json_schema_supported = False
        return text

    async def _post(self, body: dict[str, Any], *, empty_ok: bool = False) -> str:
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        try:
            response = await self._clients.get().post(f"{self.base_url}/chat/completions", json=body, headers=headers)
        except httpx.TransportError as error:
            raise transport_error(error) from error
        if response.status_code >= 400:
            signal = provider_signal(response.status_code, _json_or_none(response), response.headers)
            raise error_for_status(response.status_code, f"{response.status_code}: {_error_message(response)}", signal)
        _record_usage(response, str(body.get("model") or ""))
        return _message_text(response, empty_ok=empty_ok)


def _record_usage(response: httpx.Response, model: str) -> None:
    """The call's tokens from the answer's `usage` (OpenAI's `prompt_tokens`, `completion_tokens`,
    `prompt_tokens_details.cached_tokens`, `completion_tokens_details.reasoning_tokens`), under the model that
    answered (`model`, else the one asked for); a call that reports none still counts as a call."""
    try:
        data = response.json()
    except ValueError:
        data = {}
    usage = data.get("usage") if isinstance(data, dict) else None
    usage = usage if isinstance(usage, dict) else {}
    prompt, completion = usage.get("prompt_tokens_details") or {}, usage.get("completion_tokens_details") or {}
    reasoning = completion.get("reasoning_tokens") if isinstance(completion, dict) else None
    output = usage.get("completion_tokens")
    counted = ModelUsage(
        calls=1,
        input_tokens=usage.get("prompt_tokens"),
        output_tokens=output - reasoning if isinstance(output, int) and isinstance(reasoning, int) else output,
        cached_input_tokens=prompt.get("cached_tokens") if isinstance(prompt, dict) else None,
        thinking_tokens=reasoning,
    )
    answered = data.get("model") if isinstance(data, dict) else None
    record_judge_usage(str(answered) if answered else model, counted)


def _free_text_body(request: JudgeRequest) -> dict[str, Any]:
    """A chat completion without `response_format`: the user message, after the system one if there is one."""
    system = [{"role": "system", "content": request.system}] if request.system else []
    messages = [*system, {"role": "user", "content": request.prompt}]
    return {**_settings(request.config), "model": openai_model_name(request.model), "messages": messages}


def _body(request: JudgeRequest, *, json_schema: bool) -> dict[str, Any]:
    assert request.response_schema is not None  # free-text requests use `_free_text_body`
    schema = request.response_schema.model_json_schema()
    system = request.system
    if json_schema:
        name = re.sub(r"[^A-Za-z0-9_-]", "_", request.response_schema.__name__)[:64]
        response_format: dict[str, Any] = {
            "type": "json_schema",
            "json_schema": {"name": name, "schema": strict_json_schema(schema), "strict": True},
        }
    else:
        response_format = {"type": "json_object"}
        system = f"{system}\n\n{_SCHEMA_NOTE}{json.dumps(schema)}"
    messages = [{"role": "system", "content": system}, {"role": "user", "content": request.prompt}]
    return {
        **_settings(request.config),
        "model": openai_model_name(request.model),
        "messages": messages,
        "response_format": response_format,
    }


def _settings(config: dict[str, Any]) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    for key, value in config.items():
        name = alias_generators.to_snake(key)
        settings[_RENAMED.get(name, name)] = value
    return settings


def strict_json_schema(schema: Any) -> Any:
    """`schema` as OpenAI's strict mode wants it: objects closed, all properties required, no `default`."""
    if isinstance(schema, list):
        return [strict_json_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    strict: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "default":
            continue
        if key in _NAMED_SCHEMAS and isinstance(value, dict):  # names map to schemas: keep every name
            strict[key] = {name: strict_json_schema(sub) for name, sub in value.items()}
        else:
            strict[key] = strict_json_schema(value)
    if strict.get("type") == "object" and isinstance(strict.get("properties"), dict):
        strict["additionalProperties"] = False
        strict["required"] = list(strict["properties"])
    return strict


def _json_or_none(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _error_message(response: httpx.Response) -> str:
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        return response.text[:300] or response.reason_phrase
    if isinstance(error, dict):
        return str(error.get("message") or error)
    return str(error or response.reason_phrase)


def _message_text(response: httpx.Response, *, empty_ok: bool = False) -> str:
    try:
        message = response.json()["choices"][0]["message"]
    except (ValueError, KeyError, IndexError, TypeError) as error:
        raise JudgeCallError(f"malformed chat completion: {response.text[:200]!r}") from error
    content = message.get("content")
    if isinstance(content, list):  # some servers answer with content parts
        content = "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    if content or (empty_ok and not message.get("refusal")):
        return str(content or "")
    if message.get("refusal"):
        raise JudgeCallError(f"judge refused: {message['refusal']}")
    raise JudgeCallError("empty judge answer")
