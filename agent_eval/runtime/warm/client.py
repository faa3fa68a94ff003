"""The `agent-eval` command's side of the warm process: hand a command over, pass signals on, return its exit.

Internal: the interface is the `agent-eval` command; this module's names may change between releases."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
from collections.abc import Iterator, Sequence
from types import FrameType

from agent_eval.errors import EXIT_INFRASTRUCTURE
from agent_eval.runtime.warm.lifecycle import warm_process_status
from agent_eval.runtime.warm.protocol import (
    code_fingerprint,
    in_warm_child,
    messages,
    send,
    send_request,
    socket_path,
    warm_wanted,
)

__all__ = ["run_in_warm_process"]

_FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def run_in_warm_process(argv: Sequence[str], *, verbose: bool = False) -> int | None:
    """Run the command `argv` in a child of the warm process; its exit code, or None when there is no usable
    warm process or it answered that the command must start cold (the caller then runs it itself; with
    `verbose`, one line on stderr says that it starts cold and why)."""
    if in_warm_child() or not warm_wanted() or warm_process_status() is None:
        return None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        try:
            connection.settimeout(2.0)
            connection.connect(str(socket_path()))
            connection.settimeout(None)
            send_request(connection, _request(argv))
        except OSError:
            return None  # nothing reached a child: the caller runs the command itself
        with _forwarding_signals(connection):
            return _await_exit(connection, verbose)


def _request(argv: Sequence[str]) -> dict[str, object]:
    """What the child needs to become this command: arguments, folder, environment, import path, code version."""
    return {
        "argv": list(argv),
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "path": list(sys.path),
        "code": code_fingerprint(),
    }


def _await_exit(connection: socket.socket, verbose: bool) -> int | None:
    """The child's exit code from the warm process; None when this run must start cold."""
    for message in messages(connection):
        if "cold" in message:
            if verbose:
                print(f"agent-eval: the run starts cold: {message['cold']}", file=sys.stderr, flush=True)
            return None
        if "exit" in message:
            return int(message["exit"])
    print("agent-eval: the warm process ended before the run reported its exit code", file=sys.stderr)
    return EXIT_INFRASTRUCTURE


@contextlib.contextmanager
def _forwarding_signals(connection: socket.socket) -> Iterator[None]:
    """While the child runs, SIGINT, SIGTERM and SIGHUP that reach the client are sent on to it."""

    def forward(signum: int, _frame: FrameType | None) -> None:
        with contextlib.suppress(OSError):
            send(connection, {"signal": signum})

    previous = {signum: signal.signal(signum, forward) for signum in _FORWARDED_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
