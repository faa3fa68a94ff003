"""A fake OpenAI-compatible server: real HTTP on 127.0.0.1, `POST /v1/chat/completions` answered from a script.

Scripting is the fake Gemini server's (`tests.fakes.gemini_server`): `server.script(*replies)` queues
replies served first in, first out; a reply is a response dict (`chat_reply`), a `FakeReply` (another
status, a raw body, a delay: `error_reply`, `slow`), or a callable `(request_json) -> reply`. An unscripted
request gets a 400 and is recorded in `server.unscripted`. `server.requests` records every request.

Example:
    ```python
    def test_judge(fake_openai: FakeOpenAIServer) -> None:
        fake_openai.script(chat_reply('{"verdict": "yes"}'))
        judge = OpenAIJudge(base_url=fake_openai.base_url)
        ...
        assert fake_openai.requests[0].body["response_format"]["type"] == "json_schema"
    ```
"""

from __future__ import annotations

import functools
import json
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from tests.fakes.gemini_server import FakeReply, RecordedRequest, Reply, slow
from tests.fakes.listening import FakeHTTPServer, send_reply

__all__ = ["FakeOpenAIServer", "FakeReply", "chat_reply", "error_reply", "fake_openai", "slow"]

_COMPLETIONS_PATH = "/v1/chat/completions"


def chat_reply(content: str | None, *, refusal: str | None = None) -> dict[str, Any]:
    """A 200 chat completion whose one choice's message has `content` (and an optional `refusal`)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if refusal is not None:
        message["refusal"] = refusal
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "model": "fake-model",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def error_reply(status: int, message: str = "fake error") -> FakeReply:
    """An error answer in OpenAI's shape: `{"error": {"message", "type", "code"}}`."""
    kind = "rate_limit_exceeded" if status == 429 else "invalid_request_error" if status < 500 else "server_error"
    return FakeReply(status=status, body={"error": {"message": message, "type": kind, "code": None}})


@dataclass
class FakeOpenAIServer:
    """The fake server (see the module docstring). Start with `start()` or use it as a context manager."""

    requests: list[RecordedRequest] = field(default_factory=list)
    unscripted: list[RecordedRequest] = field(default_factory=list)
    _queue: deque[Reply] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stopping: threading.Event = field(default_factory=threading.Event)
    _http: FakeHTTPServer | None = None

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT/v1`, for `OPENAI_BASE_URL`."""
        if self._http is None:
            raise RuntimeError("the fake OpenAI server is not started")
        return f"http://127.0.0.1:{self._http.server_address[1]}/v1"

    def script(self, *replies: Reply) -> None:
        """Queue replies, served one per request in order."""
        with self._lock:
            self._queue.extend(replies)

    def start(self) -> FakeOpenAIServer:
        """Listen on a free port of 127.0.0.1 in a daemon thread."""
        http = FakeHTTPServer(("127.0.0.1", 0), _handler_class(self))
        self._http = http
        serve = functools.partial(http.serve_forever, poll_interval=0.02)
        threading.Thread(target=serve, name="fake-openai", daemon=True).start()
        return self

    def stop(self) -> None:
        """Stop serving; replies still waiting out a delay are released."""
        self._stopping.set()
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def answer(self, request: RecordedRequest) -> FakeReply:
        """The reply for one request: the next queued one, else a 400 (recorded as unscripted)."""
        with self._lock:
            self.requests.append(request)
            reply = self._queue.popleft() if self._queue else None
        if reply is None:
            self.unscripted.append(request)
            return error_reply(400, f"fake OpenAI server: no reply scripted for request {len(self.requests)}")
        if callable(reply):
            reply = reply(request.body)
        if isinstance(reply, tuple):
            return FakeReply(status=reply[0], body=reply[1])
        return reply if isinstance(reply, FakeReply) else FakeReply(body=reply)

    def wait(self, seconds: float) -> None:
        """Sleep up to `seconds`, less when the server stops."""
        self._stopping.wait(seconds)


def _handler_class(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class _Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            headers = {name.lower(): value for name, value in self.headers.items()}
            request = RecordedRequest("POST", self.path, headers, json.loads(raw) if raw else None)
            if self.path != _COMPLETIONS_PATH:
                server.requests.append(request)
                _send(self, error_reply(404, f"fake OpenAI server: unknown path {self.path!r}"))
                return
            reply = server.answer(request)
            if reply.delay:
                server.wait(reply.delay)
            _send(self, reply)

        def log_message(self, format: str, *args: Any) -> None:
            del format, args

    return _Handler


def _send(handler: BaseHTTPRequestHandler, reply: FakeReply) -> None:
    send_reply(handler, reply.status, reply.body, reply.headers)


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIServer]:
    """A started fake OpenAI-compatible server for one test (stopped afterwards)."""
    with FakeOpenAIServer() as server:
        yield server
