"""Real HTTP servers on 127.0.0.1 for the HTTP adapter tests (stdlib `ThreadingHTTPServer` in a thread).

- `JsonAgentServer`: the generic JSON protocol; answers with a function of the request body, can fail its
  first requests with 503 or answer slowly, and records every request.
- `FakeAdkApiServer`: a quick in-process stand-in for `adk api_server` (the real server, started as its own
  process with the `adk` command, is tested in `tests/agents/test_real_adk_api_server.py`).
  It implements the endpoints the adapter uses with ADK's payloads (`GET /list-apps`, `POST
  /apps/{app}/users/{user}/sessions` with `{session_id, state}`, the older `POST .../sessions/{id}` with the
  state as body, `GET` / `DELETE .../sessions/{id}`, `POST /run`), and it answers `/run` the way ADK's server
  does: it runs the agent with a real ADK `Runner` and returns
  `[event.model_dump(exclude_none=True, by_alias=True, mode="json")]`.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fakes.listening import FakeHTTPServer

Reply = tuple[int, Any]
"""(HTTP status, JSON body)."""


@dataclass
class Recorded:
    """One request the server received."""

    method: str
    path: str
    body: Any


@dataclass
class _Routes:
    handle: Callable[[str, str, Any], Reply]
    requests: list[Recorded] = field(default_factory=list)


def _handler_class(routes: _Routes) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else None
            routes.requests.append(Recorded(self.command, self.path, body))
            status, payload = routes.handle(self.command, self.path, body)
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test)

        do_GET = do_POST = do_DELETE = _serve  # noqa: N815 (the names http.server dispatches to)

        def log_message(self, format: str, *args: Any) -> None:
            del format, args

    return Handler


@contextmanager
def serve(handle: Callable[[str, str, Any], Reply]) -> Iterator[tuple[str, list[Recorded]]]:
    """Serve `handle(method, path, json_body) -> (status, json)` on a free port; yields (base URL, requests)."""
    routes = _Routes(handle)
    server = FakeHTTPServer(("127.0.0.1", 0), _handler_class(routes))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", routes.requests
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


# ------------------------------------------------------------------------------------------ generic JSON
@dataclass
class JsonAgentServer:
    """Answers each POST with `answer(body)`; the first `failures` requests get a 503; each waits `delay` s."""

    answer: Callable[[dict[str, Any]], Any]
    failures: int = 0
    delay: float = 0.0
    served: int = 0

    def handle(self, method: str, path: str, body: Any) -> Reply:
        """The server's routing function."""
        del method, path
        self.served += 1
        time.sleep(self.delay)
        if self.served <= self.failures:
            return 503, {"error": "overloaded, try again"}
        return 200, self.answer(body)


# -------------------------------------------------------------------------------------------- ADK api_server
class FakeAdkApiServer:
    """ADK api_server's session and `/run` endpoints over one app, run by a real ADK `Runner`."""

    def __init__(self, app_name: str, root_agent: Any) -> None:
        from google.adk.sessions import InMemorySessionService

        self.app_name = app_name
        self.root_agent = root_agent
        self.sessions = InMemorySessionService()

    def handle(self, method: str, path: str, body: Any) -> Reply:
        """The server's routing function."""
        match = re.fullmatch(r"/apps/([^/]+)/users/([^/]+)/sessions(?:/([^/]+))?", path)
        if path == "/list-apps" and method == "GET":
            return 200, [self.app_name]
        if path == "/run" and method == "POST":
            return asyncio.run(self._run(body))
        if match is None or match.group(1) != self.app_name:
            return 404, {"detail": "Not Found"}
        _, user_id, session_id = match.groups()
        if method == "POST":
            state, session_id = (body, session_id) if session_id else (body.get("state"), body.get("session_id"))
            return 200, asyncio.run(self._create(user_id, session_id, state))
        return asyncio.run(self._get_or_delete(method, user_id, session_id or ""))

    async def _create(self, user_id: str, session_id: str | None, state: dict[str, Any] | None) -> Any:
        session = await self.sessions.create_session(
            app_name=self.app_name, user_id=user_id, session_id=session_id, state=state
        )
        return session.model_dump(exclude_none=True, by_alias=True, mode="json")

    async def _get_or_delete(self, method: str, user_id: str, session_id: str) -> Reply:
        if method == "DELETE":
            await self.sessions.delete_session(app_name=self.app_name, user_id=user_id, session_id=session_id)
            return 200, None
        session = await self.sessions.get_session(app_name=self.app_name, user_id=user_id, session_id=session_id)
        if session is None:
            return 404, {"detail": "Session not found"}
        return 200, session.model_dump(exclude_none=True, by_alias=True, mode="json")

    async def _run(self, body: dict[str, Any]) -> Reply:
        from google.adk.runners import Runner
        from google.genai import types

        runner = Runner(app_name=body["app_name"], agent=self.root_agent, session_service=self.sessions)
        events = [
            event.model_dump(exclude_none=True, by_alias=True, mode="json")
            async for event in runner.run_async(
                user_id=body["user_id"],
                session_id=body["session_id"],
                new_message=types.Content.model_validate(body["new_message"]),
            )
        ]
        await runner.close()
        return 200, events
