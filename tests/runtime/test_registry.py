"""The machine-wide registry of background processes (`runtime.registry`): a live process's entry is read back with
its store password hidden; entries of a dead pid, of a pid that now runs another process, and unreadable files are
dropped by the reader; concurrent writers never leave a file a reader cannot parse."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from agent_eval.runtime import registry
from agent_eval.runtime.processes import process_alive
from tests.conftest import REPO_ROOT

REGISTERED_CHILD = """
import sys  # serve_warm: the word a warm process's command line holds
from pathlib import Path
from agent_eval.runtime import registry
registry.register("warm", Path(sys.argv[1]), "/run/warm.sock", "postgresql://app:hunter2@db:5432/evals")
print("registered", flush=True)
sys.stdin.read()
"""
TOUCHING_WRITER = """
import json, sys
from agent_eval.runtime import registry
entry = registry.Entry(**json.loads(sys.argv[1]))
for index in range(int(sys.argv[2])):
    registry.touch(entry, at=float(sys.argv[3]) + index)
"""


@pytest.fixture(autouse=True)
def private_registry(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    folder = tmp_path / "registry"
    monkeypatch.setenv(registry.REGISTRY_ENV, str(folder))
    return folder


def _child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO_ROOT)}


@pytest.fixture
def registered_child(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """A real process that registered itself as a warm process of `tmp_path / "home"`, alive until its stdin closes."""
    child = subprocess.Popen(
        [sys.executable, "-c", REGISTERED_CHILD, str(tmp_path / "home")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=_child_env(),
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "registered"
    yield child
    child.kill()
    child.wait(timeout=10)


def test_a_live_process_is_listed_with_its_store_password_hidden(
    registered_child: subprocess.Popen[str], tmp_path: Path
) -> None:
    [entry] = registry.entries()
    assert (entry.kind, entry.pid, entry.home) == ("warm", registered_child.pid, str(tmp_path / "home"))
    assert entry.address == "/run/warm.sock"
    assert entry.store_url == "postgresql://***@db:5432/evals"
    assert entry.started_at == pytest.approx(psutil.Process(registered_child.pid).create_time(), abs=0.01)
    assert entry.last_active_at is None
    assert "hunter2" not in entry.path.read_text(encoding="utf-8")


def test_the_entry_of_a_killed_process_is_dropped_by_the_next_reader(
    registered_child: subprocess.Popen[str], private_registry: Path
) -> None:
    [entry] = registry.entries()
    registered_child.send_signal(signal.SIGKILL)  # no chance to unregister
    registered_child.wait(timeout=10)
    assert not process_alive(entry.pid)
    assert entry.path.exists()
    assert registry.entries() == []
    assert list(private_registry.iterdir()) == []


def test_an_entry_whose_pid_now_runs_another_process_is_dropped(private_registry: Path, tmp_path: Path) -> None:
    """This pytest process stands for a reused pid: alive, but not the process the entry names."""
    started = psutil.Process(os.getpid()).create_time()
    born_earlier = registry.Entry("server", os.getpid(), str(tmp_path), "http://127.0.0.1:4200", "", started - 3600)
    registry.touch(born_earlier)
    assert registry.entries() == []  # started an hour before this process did: another process had the pid
    assert not born_earlier.path.exists()
    other_command = registry.Entry("warm", os.getpid(), str(tmp_path), "/run/warm.sock", "", started)
    registry.touch(other_command)
    assert registry.entries() == []  # started when it says, but pytest's command line is no warm process's
    assert list(private_registry.iterdir()) == []


def test_an_unreadable_file_is_dropped(registered_child: subprocess.Popen[str], private_registry: Path) -> None:
    (private_registry / "server-123.json").write_text('{"kind": "server", "pid": 1', encoding="utf-8")
    (private_registry / "warm-456.json").write_text(json.dumps({"kind": "daemon", "pid": 456}), encoding="utf-8")
    assert [entry.pid for entry in registry.entries()] == [registered_child.pid]
    assert sorted(path.name for path in private_registry.iterdir()) == [f"warm-{registered_child.pid}.json"]


def test_concurrent_writers_never_leave_a_half_written_file(
    registered_child: subprocess.Popen[str], private_registry: Path
) -> None:
    """Three processes rewrite the same entry 300 times each while this one reads: every read finds the entry
    whole (a torn or empty file would be dropped as unreadable, and the entry lost), and no temporary file stays."""
    [entry] = registry.entries()
    data = json.dumps(entry.__dict__)
    writers = [
        subprocess.Popen([sys.executable, "-c", TOUCHING_WRITER, data, "300", str(1000.0 * (n + 1))], env=_child_env())
        for n in range(3)
    ]
    reads: list[list[registry.Entry]] = []
    stop = threading.Event()

    def read_until_stopped() -> None:
        while not stop.is_set():
            reads.append(registry.entries())

    reader = threading.Thread(target=read_until_stopped)
    reader.start()
    try:
        assert [writer.wait(timeout=120) for writer in writers] == [0, 0, 0]
    finally:
        stop.set()
        reader.join(timeout=30)
    assert len(reads) > 1
    assert all([found.pid for found in read] == [registered_child.pid] for read in reads)
    [final] = registry.entries()
    assert final.last_active_at in {1000.0 * (n + 1) + 299 for n in range(3)}  # some writer's last value
    assert sorted(path.name for path in private_registry.iterdir()) == [f"warm-{registered_child.pid}.json"]


def test_a_unregistered_process_is_gone_and_a_url_without_password_is_kept(
    registered_child: subprocess.Popen[str],
) -> None:
    registry.unregister("warm", registered_child.pid)
    assert registry.entries() == []
    registry.unregister("warm", registered_child.pid)  # twice is no error
    assert registry.hide_password("sqlite:////home/me/.agent_eval/agent_eval.db") == (
        "sqlite:////home/me/.agent_eval/agent_eval.db"
    )
    assert registry.hide_password("postgresql+asyncpg://u:p@ss@db/x") == "postgresql+asyncpg://***@db/x"
