"""Processes agent-eval leaves running in the background (the local Prefect server, the warm process): started
detached, found again through a state file, guarded by a file lock, stopped; never left behind in CI.

Internal: the public API is `agent_eval`'s; this module's names may change between releases."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from agent_eval.runtime.processes import command_line, process_alive

__all__ = [
    "in_ci",
    "runs_command",
    "spawn_detached",
    "state_lock",
    "state_lock_if_free",
    "stop_process",
    "stop_with_this_process",
]

_WATCHDOG_POLL_SECONDS = 0.25
_watchdogs: dict[int, subprocess.Popen[bytes]] = {}
"""The watchdog of each guarded pid, kept referenced so that it is never collected while it runs."""


def in_ci() -> bool:
    """Whether `CI` is set (to anything but `0`, `false` or `no`): a CI job must leave no background process."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def spawn_detached(command: Sequence[str], log: Path, env: Mapping[str, str] | None = None) -> int:
    """Start `command` in the background, in `log`'s folder, with its output appended to `log`; returns its pid.
    A shell starts it in a new session and exits at once, so it is not our child: a signal that stops us does
    not stop it. (Not in the caller's folder: a `python -c` there would import that folder's modules.)"""
    log.parent.mkdir(parents=True, exist_ok=True)
    launcher = subprocess.run(
        ["sh", "-c", '"$@" >>"$0" 2>&1 </dev/null & echo $!', str(log), *command],
        cwd=log.parent,
        env=None if env is None else dict(env),
        capture_output=True,
        text=True,
        start_new_session=True,
        check=True,
    )
    return int(launcher.stdout.strip())


def stop_process(pid: int, grace_seconds: float, group: int | None = None) -> None:
    """SIGTERM to `pid` (to its whole process `group` when given), up to `grace_seconds` for `pid` to end, then
    SIGKILL; a process already gone is no error."""

    def send(signum: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if group is None:
                os.kill(pid, signum)
            else:
                os.killpg(group, signum)

    send(signal.SIGTERM)
    deadline = time.monotonic() + grace_seconds
    while process_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    send(signal.SIGKILL)


def runs_command(pid: int, *words: bytes) -> bool:
    """Whether `pid`'s command line (its arguments joined by NUL bytes) holds every one of `words` (after a
    reboot a recorded pid may belong to anything); True where it cannot be read (`command_line` is None: the
    process is gone or not ours to look into), as the caller checked first that `pid` lives."""
    arguments = command_line(pid)
    if arguments is None:
        return True
    command = b"\0".join(os.fsencode(argument) for argument in arguments)
    return all(word in command for word in words)


@contextlib.contextmanager
def state_lock(state: Path) -> Iterator[None]:
    """An exclusive lock on `state`'s `.lock` file beside it, held while the block runs."""
    with _locked(state, blocking=True):
        yield


@contextlib.contextmanager
def state_lock_if_free(state: Path) -> Iterator[bool]:
    """`state_lock` if no one holds it now (the block gets True), else no lock (False) without waiting: for a
    background process leaving on its own, whose stopper may hold the lock while it waits for it to end."""
    with _locked(state, blocking=False) as held:
        yield held


@contextlib.contextmanager
def _locked(state: Path, blocking: bool) -> Iterator[bool]:
    path = state.with_suffix(".lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def stop_with_this_process(pid: int, *words: bytes) -> None:
    """Have `pid` (a child of ours that must not outlive us, such as Prefect's temporary server) stopped if this
    process dies without stopping it: SIGKILL, the OOM killer. A small watchdog in its own session waits for this
    process to end, then stops `pid` (SIGTERM, 5 s, SIGKILL) if it still runs a command holding every one of
    `words`. After a normal exit, which stops the child itself, the watchdog finds it gone and just leaves.
    One watchdog per pid, however often this is called."""
    if pid in _watchdogs:
        return
    command = [sys.executable, "-P", "-c", "from agent_eval.runtime.background import watch; watch()", str(os.getpid())]
    command += [str(pid), *(word.decode() for word in words)]
    _watchdogs[pid] = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # a signal to our process group (Ctrl-C) leaves it to do its job
    )


def watch() -> None:
    """The watchdog's body (`stop_with_this_process`): `sys.argv` is [-c, watched pid, guarded pid, words...]."""
    watched, guarded, words = int(sys.argv[1]), int(sys.argv[2]), [word.encode() for word in sys.argv[3:]]
    while process_alive(watched):
        if not process_alive(guarded):
            return
        time.sleep(_WATCHDOG_POLL_SECONDS)
    if process_alive(guarded) and runs_command(guarded, *words):
        stop_process(guarded, grace_seconds=5.0)
