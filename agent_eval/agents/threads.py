"""Running the user's sync code (a sync agent, a sync tool) off the event loop without ever blocking exit.

Each call gets a daemon thread of its own, never joined: when a turn times out, its coroutine stops waiting
and the thread is abandoned; a thread that hangs forever (`time.sleep(3600)`) does not keep the process alive
once the evaluation is done. asyncio's default executor and anyio's worker threads would: interpreter exit
waits for them. The thread runs in a copy of the caller's context (Prefect's run context, loggers), and
whatever it raises, `SystemExit` and `KeyboardInterrupt` included, is raised in the awaiting coroutine.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["run_in_daemon_thread"]

T = TypeVar("T")


async def run_in_daemon_thread(function: Callable[[], T], *, name: str = "agent-eval-sync-call") -> T:
    """`function()` on a new daemon thread; its result, or what it raised, once it returns.

    Cancelling the awaiting task (a timeout) stops the wait at once; the thread runs on, unobserved.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()

    def work() -> None:
        try:
            result = context.run(function)
        except BaseException as error:  # handed over to the awaiting coroutine, whatever it is
            _hand_over(loop, future, functools.partial(future.set_exception, error))
        else:
            _hand_over(loop, future, functools.partial(future.set_result, result))

    threading.Thread(target=work, name=name, daemon=True).start()
    return await future


def _hand_over(loop: asyncio.AbstractEventLoop, future: asyncio.Future[T], settle: Callable[[], None]) -> None:
    """Settle the future on its loop, unless nobody waits for it any more (cancelled, or the loop closed)."""

    def settle_if_waited() -> None:
        if not future.done():
            settle()

    with contextlib.suppress(RuntimeError):  # the loop is closed: the evaluation is over, nobody waits
        loop.call_soon_threadsafe(settle_if_waited)
