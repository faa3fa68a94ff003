"""The HTTP server every fake provider and agent of the tests listens with.

`http.server.ThreadingHTTPServer` keeps socketserver's listen backlog of 5 connections. A test that opens tens of
connections at once (an adaptive limit growing to 40 calls in flight) overflows it when the machine is loaded,
and Linux then resets some of them: the client sees `ReadError` for a call the fake never received. A real
provider's backlog is large, so the fakes' is too.
"""

from __future__ import annotations

from http.server import ThreadingHTTPServer

__all__ = ["FakeHTTPServer"]


class FakeHTTPServer(ThreadingHTTPServer):
    """`ThreadingHTTPServer` with a listen backlog of 1024 and daemon threads for its requests."""

    request_queue_size = 1024
    daemon_threads = True
