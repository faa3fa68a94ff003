"""The process's own SIGINT / SIGTERM handler, when its program has one (the CLI: `agent_eval.cli.shutdown`), kept
in force while a run is evaluated.

Internal: the public API is `agent_eval`'s; this module's names may change between releases.

Prefect's flow engine puts its own SIGTERM handler in place while a flow runs. That handler raises
`TerminationSignal` in whatever code the main thread runs at that moment; inside the event loop that is one task's
step, so the exception fails that one case (or is logged as a callback's error) and the run goes on. The CLI's
handler raises nothing: it ends the process. So the run puts it back (`reclaim_sigterm`) once its flow runs.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

__all__ = ["own_signals", "reclaim_sigterm"]

SignalHandler = Callable[[int, FrameType | None], Any]
_OWN_HANDLER: list[SignalHandler] = []


def own_signals(handler: SignalHandler) -> None:
    """Install `handler` on SIGINT and SIGTERM, and keep it there while runs are evaluated (`reclaim_sigterm`).
    Only a program may call this (a library must not take over its host's signals)."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, handler)
    _OWN_HANDLER[:] = [handler]


def reclaim_sigterm() -> None:
    """Put the handler of `own_signals` back on SIGTERM, if the program set one. Only the main thread may set
    a handler; elsewhere (a flow run on a worker thread) this does nothing."""
    if _OWN_HANDLER and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _OWN_HANDLER[0])
