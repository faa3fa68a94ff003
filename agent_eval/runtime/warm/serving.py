"""The warm process itself: import once, then fork a child per command that becomes that command's run.

Internal: the interface is the `agent-eval` command; this module's names may change between releases."""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import select
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from agent_eval.errors import EXIT_INFRASTRUCTURE, EvalInputError
from agent_eval.runtime import registry
from agent_eval.runtime.warm.protocol import (
    STDIO,
    code_fingerprint,
    in_warm_child,
    mark_warm_child,
    messages,
    receive_request,
    send,
    settled_env,
    socket_path,
)
from agent_eval.settings import default_store_url, home_dir, settings

__all__ = ["IDLE_ENV", "PRELOADED", "idle_limit_seconds", "serve"]

PRELOADED = (
    "agent_eval.cli",
    "agent_eval.settings.model",  # pydantic-settings: every command reads its settings
    "agent_eval.api",
    "agent_eval.flows.evaluate",
    "agent_eval.store.repository",
    "agent_eval.render.html",
    "agent_eval.render.junit",
    "agent_eval.render.export",
    "anyio._backends._asyncio",
    "agent_eval.metrics.response",
    "agent_eval.agents.adk_agent",
    "prefect.flow_engine",
    "prefect.task_engine",
    "prefect.utilities.visualization",
    "nltk.stem.porter",
    "google.adk.agents.llm_agent",
    "google.adk.agents.remote_a2a_agent",
    "google.adk.runners",
    "google.adk.flows.llm_flows",
    "google.adk.flows.llm_flows.auto_flow",
    "google.adk.flows.llm_flows.single_flow",
    "google.adk.workflow",
    "google.adk.workflow._workflow",
    "google.adk.workflow._dynamic_node_scheduler",
    "google.adk.workflow.utils._workflow_graph_utils",
    "google.adk.tools.function_tool",
    "google.adk.models.google_llm",
    "google.adk.telemetry.tracing",
    "google.adk.sessions.in_memory_session_service",
    "google.adk.memory.in_memory_memory_service",
    "google.adk.artifacts.in_memory_artifact_service",
    "google.adk.evaluation.eval_case",
)
"""What the warm process imports before it serves (what is not installed is skipped): the modules a run of an
ADK or Python agent imports, measured on the race agent (`benchmarks/bench_vs_adk.py`); never the user's own."""

IDLE_ENV = "AGENT_EVAL_WARM_IDLE_MINUTES"
_ACCEPT_POLL_SECONDS = 1.0
_DRAIN_SECONDS = 20.0
_COLD_EXIT = 75  # a child that found Prefect's settings changed; no command of ours exits with it


@dataclass
class _Child:
    """A run in progress: its client's connection, when it started, its arguments."""

    connection: socket.socket
    started: float
    argv: list[str]


def serve(run: Callable[[list[str]], int], preload: Sequence[str] = PRELOADED) -> None:
    """Import `preload`, then serve commands on the socket until SIGTERM, a request from newer code, or
    `idle_limit_seconds()` with no request and no run. `run` is the CLI's `main`, called in each forked child
    with the client's arguments."""
    for name in preload:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    gc.freeze()  # the children's collections skip what was imported: no scan, no copy-on-write of those pages
    expected = {"code": code_fingerprint(), "env": settled_env(dict(os.environ))}
    listener = _listen(socket_path())
    entry = _register()
    children: dict[int, _Child] = {}
    woken, waker = _wake_on_child_exit()
    signal.signal(signal.SIGTERM, _exit_on_signal)
    idle_limit, last_busy = idle_limit_seconds(), time.monotonic()
    try:
        while True:
            readable, _, _ = select.select([listener, woken], [], [], _ACCEPT_POLL_SECONDS)
            if woken in readable:
                with contextlib.suppress(BlockingIOError):
                    woken.recv(4096)
            running = len(children)
            _report_finished(children)
            if listener in readable and not _serve_one(listener, run, expected, children):
                break
            if listener in readable or len(children) < running:
                entry = _touched(entry)
            if children or listener in readable:
                last_busy = time.monotonic()
            elif idle_limit is not None and time.monotonic() - last_busy >= idle_limit:
                print(f"stopped: idle for {idle_limit / 60:g} min ({IDLE_ENV})", flush=True)
                break
    finally:
        if not in_warm_child():  # a forked child's exit unwinds through here too: the socket is not its own
            signal.set_wakeup_fd(-1)
            waker.close()
            listener.close()
            with contextlib.suppress(OSError):
                os.unlink(socket_path())
            if entry is not None:
                registry.unregister("warm", entry.pid)
            _drain(children)
            sys.stdout.flush()
            os._exit(0)  # nothing ran here to finish: the preloaded libraries' exit hooks would only cost time


def idle_limit_seconds() -> float | None:
    """How long the warm process waits for a request before it exits, freeing its memory (~250 MB):
    `AGENT_EVAL_WARM_IDLE_MINUTES` (default 60; 0 or less: never). While an `AGENT_EVAL_*` variable is not
    valid (`agent_eval.settings.settings`), the default is used, and the warm log says so: the warm process runs
    in the background, with nobody to read an error (a run it serves reports the variable itself)."""
    from agent_eval.settings import DEFAULT_WARM_IDLE_MINUTES

    try:
        minutes = settings().warm_idle_minutes
    except EvalInputError as error:
        print(f"{error.one_line()}; idle limit: the default {DEFAULT_WARM_IDLE_MINUTES:g} min", flush=True)
        minutes = DEFAULT_WARM_IDLE_MINUTES
    return minutes * 60 if minutes > 0 else None


def _register() -> registry.Entry | None:
    """This warm process's entry in the machine-wide registry (`agent_eval.runtime.registry`), or None when it
    cannot be written (the warm process serves all the same)."""
    try:
        store_url = default_store_url()
    except EvalInputError:
        store_url = ""
    try:
        return registry.register("warm", home_dir(), str(socket_path()), store_url)
    except OSError as error:
        print(f"not in the registry of background processes: {error}", flush=True)
        return None


def _touched(entry: registry.Entry | None) -> registry.Entry | None:
    """`entry` with its last activity now (None stays None; a registry that cannot be written is no error)."""
    if entry is None:
        return None
    try:
        return registry.touch(entry)
    except OSError:
        return entry


def _wake_on_child_exit() -> tuple[socket.socket, socket.socket]:
    """(woken, waker): `woken` becomes readable when a child ends, through SIGCHLD written to `waker` by
    `signal.set_wakeup_fd`. Both must stay referenced: a collected `waker` frees its descriptor number, and the
    signal byte would then land in whatever the next connection reuses it for."""
    woken, waker = socket.socketpair()
    for end in (woken, waker):
        end.setblocking(False)
    signal.set_wakeup_fd(waker.fileno())
    signal.signal(signal.SIGCHLD, lambda *_: None)
    return woken, waker


def _exit_on_signal(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def _serve_one(
    listener: socket.socket, run: Callable[[list[str]], int], expected: dict[str, Any], children: dict[int, _Child]
) -> bool:
    """Accept one request and fork its child; False when the request came from newer code (stop serving)."""
    connection, _ = listener.accept()
    try:
        request, fds = receive_request(connection)
    except (OSError, ValueError):
        connection.close()
        return True
    if request.get("code") != expected["code"]:
        _answer_cold(connection, fds, "agent-eval or its packages changed since the warm process started")
        return False
    if differing := _differing_names(settled_env(request.get("env", {})), expected["env"]):
        _answer_cold(connection, fds, f"the environment differs from the warm process's in {differing}")
        return True
    if running := _other_threads():
        _answer_cold(connection, fds, f"other threads run in the warm process ({running}): forking it is unsafe")
        return True
    pid = os.fork()
    if pid == 0:
        listener.close()
        for other in children.values():
            other.connection.close()
        _become_run(connection, fds, request, run)
    for fd in fds:
        os.close(fd)
    children[pid] = _Child(connection, time.monotonic(), list(request.get("argv", [])))
    return True


def _other_threads() -> str:
    """The names of the threads that run beside this one (a preloaded module may have started one), or "".

    A fork copies only the forking thread: a lock another thread held (the import lock, a logging handler's,
    an allocator's) stays held in the child, which then hangs on it. So the warm process forks only while its
    main thread is the only one (`threading.enumerate`, which sees Python threads; a thread a library starts
    in C is not seen), and otherwise answers that the run starts cold."""
    current = threading.current_thread()
    return ", ".join(sorted(thread.name for thread in threading.enumerate() if thread is not current))


def _differing_names(first: dict[str, str], second: dict[str, str]) -> str:
    """The names (never the values) of the variables set differently in the two environments."""
    return ", ".join(sorted(name for name in first.keys() | second.keys() if first.get(name) != second.get(name)))


def _answer_cold(connection: socket.socket, fds: list[int], reason: str) -> None:
    """Tell the client to run the command itself, and log why."""
    print(f"cold: {reason}", flush=True)
    for fd in fds:
        os.close(fd)
    with contextlib.suppress(OSError):
        send(connection, {"cold": reason})
    connection.close()


def _report_finished(children: dict[int, _Child]) -> None:
    """Reap the children that ended; tell each one's client its exit code, and log it."""
    while children:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        child = children.pop(pid)
        code = os.waitstatus_to_exitcode(status)
        code = 128 - code if code < 0 else code
        with contextlib.suppress(OSError):
            send(child.connection, {"exit": code})
        child.connection.close()
        if code == _COLD_EXIT:
            print("cold: Prefect's settings differ in the client's folder", flush=True)
            continue
        print(
            f"run pid={pid} exit={code} wall_s={time.monotonic() - child.started:.2f} "
            f"max_rss_mib={usage.ru_maxrss / 1024:.1f} cpu_s={usage.ru_utime + usage.ru_stime:.2f} "
            f"argv={json.dumps(child.argv)}",
            flush=True,
        )


def _drain(children: dict[int, _Child]) -> None:
    """On the way out, report the runs still going once they end (they run on; their clients wait)."""
    deadline = time.monotonic() + _DRAIN_SECONDS
    while children and time.monotonic() < deadline:
        _report_finished(children)
        time.sleep(0.1)


def _become_run(connection: socket.socket, fds: list[int], request: dict[str, Any], run: Callable[..., int]) -> None:
    """In the forked child: take over the client's stdio, folder, environment and `sys.path`, run the command,
    exit (through the interpreter's normal exit, so atexit handlers run as in a cold run)."""
    mark_warm_child()
    code = EXIT_INFRASTRUCTURE
    try:
        _take_over(fds, request)
        if not _prefect_settings_unchanged():
            send(connection, {"cold": "Prefect's settings differ in this folder"})
            os._exit(_COLD_EXIT)
        threading.Thread(target=_follow_client, args=(connection,), daemon=True, name="warm-client").start()
        code = run(list(request["argv"]))
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else EXIT_INFRASTRUCTURE
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    sys.exit(code)


def _take_over(fds: list[int], request: dict[str, Any]) -> None:
    """Become the client's command: its own session (stopping the warm process never stops a run), default
    signal handling, the client's stdin/stdout/stderr, folder, environment, arguments and import path."""
    os.setsid()
    signal.set_wakeup_fd(-1)
    for signum in (signal.SIGTERM, signal.SIGCHLD):
        signal.signal(signum, signal.SIG_DFL)
    for target, fd in zip(STDIO, fds, strict=True):
        os.dup2(fd, target)
        os.close(fd)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, OSError, ValueError):
            stream.reconfigure(line_buffering=stream.isatty())  # type: ignore[union-attr]
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = [sys.argv[0], *request["argv"]]
    sys.path[:] = request["path"]  # the client's: a console script's first entry is its bin folder


def _prefect_settings_unchanged() -> bool:
    """Whether Prefect's settings, read again in the client's folder and environment, equal those the warm
    process imported Prefect with (its logging was configured from them)."""
    if "prefect" not in sys.modules:
        return True
    import prefect.context

    before = prefect.context.get_settings_context().settings
    prefect.context.refresh_global_settings_context()
    return bool(prefect.context.get_settings_context().settings == before)


def _follow_client(connection: socket.socket) -> None:
    """Signals the client passes on are raised here; the client gone (closed, killed) counts as SIGTERM."""
    for message in messages(connection):
        if "signal" in message:
            os.kill(os.getpid(), int(message["signal"]))
    os.kill(os.getpid(), signal.SIGTERM)


def _listen(path: Path) -> socket.socket:
    """A Unix socket only this user can reach, bound under a temporary name and renamed into place, so a client
    never connects to a socket that is not yet listening."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    provisional = path.with_suffix(f".{os.getpid()}")
    with contextlib.suppress(OSError):
        os.unlink(provisional)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(provisional))
    os.chmod(provisional, 0o600)
    listener.listen(16)
    os.replace(provisional, path)
    return listener
