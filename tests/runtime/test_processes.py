"""Process questions (`runtime.processes`, and the callers that were reading Linux's /proc): asked of a real child
that listens on a port, after it exits, as a zombie, with no /proc to read, and when psutil refuses to answer."""

from __future__ import annotations

import ast
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from agent_eval.runtime import processes, server
from agent_eval.runtime.background import runs_command
from agent_eval.runtime.processes import command_line, descendants, group_members, listens_on, process_alive
from tests.conftest import REPO_ROOT

LISTENER = """
import socket, sys
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen()
print(listener.getsockname()[1], flush=True)
sys.stdin.read()
"""
STATUS_DEADLINE = 20.0


@pytest.fixture
def listening_child() -> Iterator[tuple[subprocess.Popen[str], int]]:
    """A `python -c` in its own session that listens on a free port until its stdin closes: (it, the port)."""
    child = subprocess.Popen(
        [sys.executable, "-c", LISTENER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        assert child.stdout is not None
        yield child, int(child.stdout.readline())
    finally:
        child.kill()
        child.wait()


@pytest.fixture
def other_listener() -> Iterator[int]:
    """A port this test process listens on: another process's port, for the child."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield listener.getsockname()[1]


def _local_server(pid: int, port: int) -> server.LocalServer:
    return server.LocalServer(pid=pid, pgid=os.getpgid(pid), port=port, started_at=0.0)


def _assert_live_answers(child: subprocess.Popen[str], port: int, other_port: int) -> None:
    assert process_alive(child.pid)
    assert command_line(child.pid) == [sys.executable, "-c", LISTENER]
    assert runs_command(child.pid, b"-c", b"listener.listen()")
    assert not runs_command(child.pid, b"-c", b"prefect")
    assert listens_on(child.pid, port)
    assert not listens_on(child.pid, other_port)
    assert not listens_on(os.getpid(), port)
    assert group_members(child.pid) == [child.pid]  # its own session: a group of one
    assert server._listens(_local_server(child.pid, port))
    assert not server._listens(_local_server(child.pid, other_port))  # a port another process holds
    assert child.pid in descendants()
    assert descendants(child.pid) == []


def test_a_listening_child_is_alive_runs_its_command_and_listens_on_its_port_only(
    listening_child: tuple[subprocess.Popen[str], int], other_listener: int
) -> None:
    child, port = listening_child
    _assert_live_answers(child, port, other_listener)


def test_an_exited_child_is_dead_and_listens_nowhere(listening_child: tuple[subprocess.Popen[str], int]) -> None:
    child, port = listening_child
    assert child.stdin is not None
    child.stdin.close()
    assert child.wait(timeout=STATUS_DEADLINE) == 0
    assert not process_alive(child.pid)
    assert command_line(child.pid) is None
    assert runs_command(child.pid, b"listener.listen()")  # unreadable: the caller asked process_alive first
    assert not listens_on(child.pid, port)
    assert child.pid not in descendants()
    assert descendants(child.pid) == []
    assert group_members(child.pid) == []
    assert not server._listens(_local_server(os.getpid(), port))


def test_a_zombie_counts_as_dead() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])  # not reaped until `wait`
    try:
        deadline = time.monotonic() + STATUS_DEADLINE
        while psutil.Process(child.pid).status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
            time.sleep(0.02)
        assert psutil.Process(child.pid).status() == psutil.STATUS_ZOMBIE
        assert not process_alive(child.pid)
        assert not runs_command(child.pid, b"pass")  # a zombie's command line is empty
    finally:
        assert child.wait(timeout=STATUS_DEADLINE) == 0
    assert not process_alive(child.pid)


@pytest.mark.parametrize("pid", [0, -1])
def test_no_pid_below_one_is_a_process(pid: int) -> None:
    assert not process_alive(pid)


def test_no_module_of_the_package_reads_proc() -> None:
    """What the tests below rely on: every process question goes through psutil, none reads /proc itself."""
    readers = []
    for path in sorted((REPO_ROOT / "agent_eval").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("/proc"):
                readers.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}")
    assert readers == []


def test_the_answers_hold_where_there_is_no_proc(
    listening_child: tuple[subprocess.Popen[str], int], other_listener: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As on macOS: no /proc for our code to read (psutil asks the system its own way). The live answers are
    the same; before psutil, `runs_command` matched any command there and `_listens` assumed yes, so a port
    another process held passed for the server's."""
    real_exists = os.path.exists
    monkeypatch.setattr(os.path, "exists", lambda path: not str(path).startswith("/proc") and real_exists(path))
    for method in ("read_text", "read_bytes", "iterdir", "glob"):
        monkeypatch.setattr(Path, method, _refusing_proc(getattr(Path, method)))
    assert not os.path.exists("/proc")
    with pytest.raises(FileNotFoundError):
        Path("/proc/self/cmdline").read_bytes()
    child, port = listening_child
    _assert_live_answers(child, port, other_listener)


def _refusing_proc(method: Callable[..., Any]) -> Callable[..., Any]:
    """`method` of `Path`, raising FileNotFoundError for a path under /proc."""

    def refusing(path: Path, *args: Any, **kwargs: Any) -> Any:
        if str(path).startswith("/proc"):
            raise FileNotFoundError(str(path))
        return method(path, *args, **kwargs)

    return refusing


class _Refusing:
    """A stand-in for `psutil.Process` whose every question raises `error`."""

    error: type[psutil.Error] = psutil.Error

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def __getattr__(self, name: str) -> object:
        def refuse(*_args: object, **_kwargs: object) -> object:
            raise self.error(self.pid)

        return refuse


@pytest.mark.parametrize(
    ("error", "alive", "command"),
    [(psutil.NoSuchProcess, False, None), (psutil.ZombieProcess, False, []), (psutil.AccessDenied, True, None)],
)
def test_psutil_refusals_give_the_documented_answers(
    error: type[psutil.Error], alive: bool, command: list[str] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Gone: dead, its command line unknown (`runs_command` then matches: the caller checked that the pid
    lives). A zombie (as macOS reports one): dead, with no command line. Not ours to look into: alive, its
    command line unknown. In every case no port is listened on and there are no descendants to stop."""
    refusing = type("Refusing", (_Refusing,), {"error": error})
    monkeypatch.setattr(psutil, "Process", refusing)
    assert process_alive(4242) is alive
    assert command_line(4242) == command
    assert runs_command(4242, b"prefect", b"server") is (command is None)
    assert not listens_on(4242, 4200)
    assert descendants(4242) == []


def test_group_members_skips_processes_that_end_meanwhile(monkeypatch: pytest.MonkeyPatch) -> None:
    def getpgid(pid: int) -> int:
        if pid == 11:
            raise ProcessLookupError(pid)
        return 7 if pid in (12, 13) else 1

    monkeypatch.setattr(psutil, "pids", lambda: [11, 12, 13, 14])
    monkeypatch.setattr(processes.os, "getpgid", getpgid)
    assert group_members(7) == [12, 13]
