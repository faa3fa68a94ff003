"""The HTTP server every fake provider and agent of the tests listens with.

`http.server.ThreadingHTTPServer` keeps socketserver's listen backlog of 5 connections. A test that opens tens of
connections at once (an adaptive limit growing to 40 calls in flight) overflows it when the machine is loaded,
and Linux then resets some of them: the client sees `ReadError` for a call the fake never received. A real
provider's backlog is large, so the fakes' is too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeHTTPServer", "send_reply"]


class FakeHTTPServer(ThreadingHTTPServer):
    """`ThreadingHTTPServer` with a listen backlog of 1024 and daemon threads for its requests."""

    request_queue_size = 1024
    daemon_threads = True


def send_reply(
    handler: BaseHTTPRequestHandler,
    status: int,
    body: Any,
    headers: Iterable[tuple[str, str]] = (),
    *,
    content_type: str = "application/json",
) -> None:
    """Answer `status` with `body` (bytes as they are, a str encoded, anything else as JSON) and `headers`; a client
    that gave up (a timeout test) gets nothing, quietly."""
    payload = body if isinstance(body, bytes) else (body if isinstance(body, str) else json.dumps(body)).encode()
    try:
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(payload)))
        for name, value in headers:
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(payload)
    except (BrokenPipeError, ConnectionResetError):
        pass
