"""Ending the `agent-eval` process on SIGINT / SIGTERM within seconds, leaving nothing behind.

Internal: the public API is `agent_eval`'s; this module's names may change between releases.

On the first signal: the runs this process is evaluating end `cancelled` in the store (and their Prefect flow
runs, on a Prefect server that outlives us), every child process (Prefect's temporary server, an agent's
subprocesses) is stopped, one line says what happened, and the process exits with `EXIT_INTERRUPTED`. Each step
has a deadline, so a store or server that does not answer cannot keep the process alive. A second signal while
this runs is ignored. Only the CLI installs this: a library must not take over its host's signals.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import NoReturn

from agent_eval.errors import EXIT_INTERRUPTED
from agent_eval.runtime.processes import descendants, process_alive
from agent_eval.runtime.signals import own_signals

__all__ = ["install_signal_handlers", "stop_descendants", "stop_for_signal"]

STEP_DEADLINE_SECONDS = 4.0


def install_signal_handlers() -> None:
    """Handle SIGINT and SIGTERM as described in the module docstring, also while a run's flow runs
    (`agent_eval.runtime.signals`)."""
    own_signals(_on_signal)


def _on_signal(signum: int, _frame: FrameType | None) -> None:
    stop_for_signal(signum)


def stop_for_signal(signum: int) -> NoReturn:
    """Everything the module docstring says, then exit. Also called by the CLI when a signal reached it as an
    exception (Prefect's flow engine swaps in its own SIGTERM handler, which raises `TerminationSignal`)."""
    for other in (signal.SIGINT, signal.SIGTERM):
        signal.signal(other, signal.SIG_IGN)
    name = signal.Signals(signum).name
    ended = _within_deadline(lambda: _cancel_runs(f"stopped by {name}"), default=[])
    _within_deadline(lambda: _cancel_flow_runs(f"stopped by {name}"), default=[])
    stop_descendants()
    _remove_spills()
    from agent_eval.runtime.progress import uninstall_progress

    uninstall_progress()  # `os._exit` skips atexit: a bar left drawn would leave the cursor hidden
    shown = ", ".join(ended) if ended else "none"
    print(f"agent-eval: stopped by {name}; run(s) marked cancelled: {shown}", file=sys.stderr, flush=True)
    sys.stdout.flush()
    os._exit(EXIT_INTERRUPTED)


def _remove_spills() -> None:
    """`os._exit` skips the clean-up of a recorded input's temporary file: remove it here (none if no recorded
    input was read, and then nothing is imported for it)."""
    spill = sys.modules.get("agent_eval.io.recorded.spill")
    if spill is not None:
        spill.remove_own_spills()


def _cancel_runs(reason: str) -> list[str]:
    from agent_eval.flows.lifecycle import cancel_active_runs

    return cancel_active_runs(reason)


def _cancel_flow_runs(reason: str) -> list[str]:
    from agent_eval.flows.lifecycle import cancel_active_flow_runs

    return cancel_active_flow_runs(reason)


def _within_deadline(step: Callable[[], list[str]], *, default: list[str]) -> list[str]:
    """Run `step` on a daemon thread; give up on it after `STEP_DEADLINE_SECONDS`."""
    box: list[list[str]] = []
    worker = threading.Thread(target=lambda: box.append(step()), daemon=True)
    worker.start()
    worker.join(STEP_DEADLINE_SECONDS)
    return box[0] if box else default


def stop_descendants(grace_seconds: float = 3.0) -> None:
    """SIGTERM every descendant, then SIGKILL those still alive after `grace_seconds`."""
    targets = descendants()
    _send(targets, signal.SIGTERM)
    deadline = time.monotonic() + grace_seconds
    while time.monotonic() < deadline and any(process_alive(pid) for pid in targets):
        time.sleep(0.05)
    _send([pid for pid in targets if process_alive(pid)], signal.SIGKILL)


def _send(pids: list[int], signum: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)
