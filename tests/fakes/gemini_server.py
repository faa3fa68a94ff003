"""A fake Gemini API server: real HTTP on 127.0.0.1, answers from a script, records every request.

It speaks enough of `POST .../models/{model}:generateContent` (Gemini API and Vertex AI paths) for
google-genai's `Client(http_options=HttpOptions(base_url=server.base_url))`, so agents, user simulators and
LLM judges are tested through the real client, its serialisation and its error mapping.

Scripting: `server.script(*replies)` queues replies, served first in, first out, one per request. A reply is
- a response dict (the JSON body of a 200 answer), e.g. from `text_reply` or `call_reply`;
- a `FakeReply` for another status, a raw (malformed) body, or a delay (`error_reply`, `slow`);
- a callable `(request_json) -> reply`: called with the request body, it returns one of the above or a
  `(status, body)` tuple.
`server.respond_with(handler)` sets a callable used whenever the queue is empty (e.g. to route by system
instruction when several clients share the server). With neither, the server answers 400 and records the
request in `server.unscripted`, so a test that sends more requests than it scripted fails clearly.

Example:
    ```python
    def test_answer(fake_gemini: FakeGeminiServer) -> None:
        fake_gemini.script(call_reply(("get_time", {"city": "Paris"})), text_reply("It is noon."))
        client = fake_gemini.client()
        ...
        assert fake_gemini.requests[1].contents[-1]["parts"][0]["functionResponse"]["name"] == "get_time"
    ```
"""

from __future__ import annotations

import functools
import json
import re
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, TypeAlias

import pytest
from google import genai
from google.genai import types

from tests.fakes.listening import FakeHTTPServer, send_reply

__all__ = [
    "CREDENTIAL_VARIABLES",
    "FakeGeminiServer",
    "FakeReply",
    "RecordedRequest",
    "call_reply",
    "error_reply",
    "fake_gemini",
    "slow",
    "text_reply",
]

FAKE_API_KEY = "fake-gemini-key"
CREDENTIAL_VARIABLES = (  # every variable that points a judge at a real Google endpoint
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_ENTERPRISE",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_GEMINI_BASE_URL",
    "AGENT_EVAL_JUDGE_BACKEND",
    "AGENT_EVAL_GEMINI_BASE_URL",
)
_MODEL_IN_PATH = re.compile(r"models/([^/:]+):(\w+)")


@dataclass(frozen=True)
class FakeReply:
    """One scripted HTTP answer.

    Attributes:
        status: the HTTP status.
        body: a JSON-able value, or `str` / `bytes` sent as they are (for malformed bodies).
        delay: seconds to wait before answering (interrupted when the server stops).
        headers: extra response headers, `(name, value)` pairs (e.g. `Retry-After`); none by default.
    """

    status: int = 200
    body: Any = None
    delay: float = 0.0
    headers: tuple[tuple[str, str], ...] = ()


Handler: TypeAlias = Callable[[Any], Any]
Reply: TypeAlias = dict[str, Any] | FakeReply | Handler


@dataclass(frozen=True)
class RecordedRequest:
    """A request the server received: method, path, headers (lower-case names) and parsed JSON body."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any

    @property
    def model(self) -> str | None:
        """The model named in the path (`gemini-2.5-flash` in `.../models/gemini-2.5-flash:generateContent`)."""
        found = _MODEL_IN_PATH.search(self.path)
        return found.group(1) if found else None

    @property
    def contents(self) -> list[dict[str, Any]]:
        """The request's `contents` (the conversation sent), as JSON."""
        return list((self.body or {}).get("contents") or [])

    @property
    def system_instruction(self) -> str:
        """The text of the request's system instruction ("" when there is none)."""
        instruction = (self.body or {}).get("systemInstruction") or {}
        return "".join(part.get("text", "") for part in instruction.get("parts") or [])


@dataclass
class FakeGeminiServer:
    """The fake server (see the module docstring). Start with `start()` or use it as a context manager."""

    requests: list[RecordedRequest] = field(default_factory=list)
    unscripted: list[RecordedRequest] = field(default_factory=list)
    _queue: deque[Reply] = field(default_factory=deque)
    _fallback: Handler | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stopping: threading.Event = field(default_factory=threading.Event)
    _http: FakeHTTPServer | None = None

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT/`, for `HttpOptions(base_url=...)` or `GOOGLE_GEMINI_BASE_URL`."""
        if self._http is None:
            raise RuntimeError("the fake Gemini server is not started")
        return f"http://127.0.0.1:{self._http.server_address[1]}/"

    def script(self, *replies: Reply) -> None:
        """Queue replies, served one per request in order (see the module docstring for their kinds)."""
        with self._lock:
            self._queue.extend(replies)

    def respond_with(self, handler: Handler | None) -> None:
        """Answer with `handler(request_json)` whenever the queue is empty (`None` removes it)."""
        self._fallback = handler

    def client(self, **options: Any) -> genai.Client:
        """A google-genai client talking to this server (a fake API key; extra `HttpOptions` fields allowed)."""
        http_options = types.HttpOptions(base_url=self.base_url, **options)
        return genai.Client(api_key=FAKE_API_KEY, http_options=http_options)

    def generate_requests(self) -> list[RecordedRequest]:
        """The recorded `generateContent` requests only."""
        return [r for r in self.requests if r.path.endswith(":generateContent")]

    def start(self) -> FakeGeminiServer:
        """Listen on a free port of 127.0.0.1 in a daemon thread."""
        http = FakeHTTPServer(("127.0.0.1", 0), _handler_class(self))
        self._http = http
        serve = functools.partial(http.serve_forever, poll_interval=0.02)  # a quick stop
        threading.Thread(target=serve, name="fake-gemini", daemon=True).start()
        return self

    def stop(self) -> None:
        """Stop serving; replies still waiting out a delay are released."""
        self._stopping.set()
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()

    def __enter__(self) -> FakeGeminiServer:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def _answer(self, request: RecordedRequest) -> FakeReply:
        """The reply for one request: the next queued one, else the fallback, else a 400."""
        with self._lock:
            self.requests.append(request)
            reply: Reply | None = self._queue.popleft() if self._queue else self._fallback
        if reply is None:
            self.unscripted.append(request)
            return error_reply(400, f"fake Gemini server: no reply scripted for request {len(self.requests)}")
        return _as_fake_reply(reply(request.body) if callable(reply) else reply)

    def _wait(self, seconds: float) -> None:
        self._stopping.wait(seconds)


def _as_fake_reply(reply: Any) -> FakeReply:
    if isinstance(reply, FakeReply):
        return reply
    if isinstance(reply, tuple):
        status, body = reply
        return FakeReply(status=status, body=body)
    return FakeReply(body=reply)


def _handler_class(server: FakeGeminiServer) -> type[BaseHTTPRequestHandler]:
    class _Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            headers = {name.lower(): value for name, value in self.headers.items()}
            request = RecordedRequest("POST", self.path, headers, _parse_json(raw))
            if _MODEL_IN_PATH.search(self.path) is None:
                server.requests.append(request)
                _send(self, error_reply(404, f"fake Gemini server: unknown path {self.path!r}"))
                return
            reply = server._answer(request)
            if reply.delay:
                server._wait(reply.delay)
            _send(self, reply)

        def log_message(self, format: str, *args: Any) -> None:
            del format, args  # keep test output quiet

    return _Handler


def _send(handler: BaseHTTPRequestHandler, reply: FakeReply) -> None:
    send_reply(handler, reply.status, reply.body, reply.headers, content_type="application/json; charset=UTF-8")


def _parse_json(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return raw.decode(errors="replace")


def _usage(prompt_tokens: int, output_tokens: int) -> dict[str, int]:
    return {
        "promptTokenCount": prompt_tokens,
        "candidatesTokenCount": output_tokens,
        "totalTokenCount": prompt_tokens + output_tokens,
    }


def _response(parts: list[dict[str, Any]], prompt_tokens: int, output_tokens: int) -> dict[str, Any]:
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": _usage(prompt_tokens, output_tokens),
        "modelVersion": "fake-gemini",
    }


def text_reply(text: str, *, prompt_tokens: int = 10, output_tokens: int = 5) -> dict[str, Any]:
    """A 200 answer whose candidate is one text part, with its token usage."""
    return _response([{"text": text}], prompt_tokens, output_tokens)


def call_reply(
    *calls: tuple[str, dict[str, Any]], text: str | None = None, prompt_tokens: int = 10, output_tokens: int = 5
) -> dict[str, Any]:
    """A 200 answer calling functions: one `functionCall` part per `(name, args)` (several = parallel calls),
    after an optional text part; each call gets the id `call-<name>-<index>`."""
    parts: list[dict[str, Any]] = [{"text": text}] if text is not None else []
    parts += [
        {"functionCall": {"name": name, "args": args, "id": f"call-{name}-{index}"}}
        for index, (name, args) in enumerate(calls)
    ]
    return _response(parts, prompt_tokens, output_tokens)


def error_reply(status: int, message: str = "fake error") -> FakeReply:
    """An API error answer in Google's shape: `{"error": {"code", "message", "status"}}`."""
    names = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}
    error = {"code": status, "message": message, "status": names.get(status, "UNKNOWN")}
    return FakeReply(status=status, body={"error": error})


def slow(reply: dict[str, Any] | FakeReply, seconds: float) -> FakeReply:
    """The same reply, sent after `seconds`."""
    base = reply if isinstance(reply, FakeReply) else FakeReply(body=reply)
    return FakeReply(status=base.status, body=base.body, delay=seconds, headers=base.headers)


@pytest.fixture
def fake_gemini() -> Iterator[FakeGeminiServer]:
    """A started fake Gemini server for one test (stopped afterwards)."""
    with FakeGeminiServer() as server:
        yield server
