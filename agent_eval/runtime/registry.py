"""The machine-wide registry of agent-eval's background processes (local Prefect servers, warm processes), whatever
their home: one JSON file per process in a folder private to the user, so that `agent-eval server status --all`
and `server stop --all` find every one.

Internal: the interface is the `agent-eval` command; this module's names may change between releases.

Rules:

- **Where.** `$XDG_RUNTIME_DIR/agent-eval/processes` when that variable names a folder, else
  `<tempdir>/agent-eval-<uid>/processes` (mode 0700); `AGENT_EVAL_REGISTRY_DIR` overrides both.
- **Written by the process itself** when it starts serving (`register`), removed when it stops (`unregister`);
  each file is written to a temporary name and renamed into place (`os.replace`), so a reader never sees half a
  file and concurrent writers never mix their bytes.
- **A killed process cannot corrupt it.** Every reader (`entries`) drops the entries whose pid is dead, or is
  no longer the process that registered (its start time or its command line differ: the pid was reused), and
  the files it cannot read.
- **What an entry holds** (`Entry`): kind, pid, home, URL (the server's UI) or socket (the warm process's), the
  store's URL without its password, when it started, and when it last served a request (if it says).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Literal

from agent_eval.runtime.background import runs_command
from agent_eval.runtime.processes import process_alive
from agent_eval.settings import settings

__all__ = ["REGISTRY_ENV", "Entry", "Kind", "entries", "register", "registry_dir", "touch", "unregister"]

REGISTRY_ENV = "AGENT_EVAL_REGISTRY_DIR"
Kind = Literal["server", "warm"]
COMMAND_WORDS: dict[str, bytes] = {"server": b"prefect", "warm": b"serve_warm"}
"""A word the command line of each kind of process holds (`agent_eval.runtime.prefect_server`, `serve_warm`)."""
_START_TIME_SLACK_SECONDS = 1.0


@dataclass(frozen=True)
class Entry:
    """One background process of agent-eval."""

    kind: Kind
    pid: int
    home: str
    address: str
    """The server's UI (`http://127.0.0.1:4200`) or the warm process's Unix socket."""
    store_url: str
    """The store the home's runs use by default, its password hidden."""
    started_at: float
    """When the process started (`time.time()`): with the pid, what tells it from a later process of that pid."""
    last_active_at: float | None = None
    """When it last served a request, if it says (updated at most every few seconds)."""

    @property
    def path(self) -> Path:
        """Its file in the registry."""
        return registry_dir() / f"{self.kind}-{self.pid}.json"


def registry_dir() -> Path:
    """The registry's folder (rules in the module docstring), created private to the user if missing."""
    chosen = settings().registry_dir
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if chosen:
        folder = chosen
    elif runtime and Path(runtime).is_dir():
        folder = Path(runtime) / "agent-eval" / "processes"
    else:
        folder = Path(tempfile.gettempdir()) / f"agent-eval-{os.getuid()}" / "processes"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder


def register(kind: Kind, home: Path, address: str, store_url: str) -> Entry:
    """Record this process (its pid, and its start time as the system knows it) as a `kind` process of `home`."""
    entry = Entry(
        kind=kind,
        pid=os.getpid(),
        home=str(home),
        address=address,
        store_url=hide_password(store_url),
        started_at=_process_started(os.getpid()) or time.time(),
    )
    _write(entry)
    return entry


def touch(entry: Entry, at: float | None = None) -> Entry:
    """`entry` rewritten with `last_active_at` set (now by default); returns the new entry."""
    updated = replace(entry, last_active_at=time.time() if at is None else at)
    _write(updated)
    return updated


def unregister(kind: Kind, pid: int) -> None:
    """Remove the entry of `pid` (a missing one is no error)."""
    (registry_dir() / f"{kind}-{pid}.json").unlink(missing_ok=True)


def entries() -> list[Entry]:
    """Every live entry, oldest first; the stale ones (dead pid, pid reused, unreadable file) are removed."""
    found = []
    for path in sorted(registry_dir().glob("*.json")):
        entry = _read(path)
        if entry is None or not _still_registered(entry):
            path.unlink(missing_ok=True)
            continue
        found.append(entry)
    return sorted(found, key=lambda entry: entry.started_at)


def hide_password(url: str) -> str:
    """`url` with what stands between `://` and its last `@` (user and password) shown as `***`."""
    scheme, separator, rest = url.partition("://")
    if not separator or "@" not in rest:
        return url
    return f"{scheme}://***@{rest.rpartition('@')[2]}"


def _write(entry: Entry) -> None:
    """Write `entry` under a temporary name in the folder, then rename it into place (atomic on POSIX)."""
    folder = registry_dir()
    handle, provisional = tempfile.mkstemp(prefix=f".{entry.kind}-{entry.pid}-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            json.dump(asdict(entry), stream)
        os.replace(provisional, entry.path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(provisional)
        raise


def _read(path: Path) -> Entry | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        entry = Entry(**data)
    except (OSError, ValueError, TypeError):
        return None
    return entry if entry.kind in COMMAND_WORDS and isinstance(entry.pid, int) else None


def _still_registered(entry: Entry) -> bool:
    """Whether `entry.pid` still runs the process that registered: alive, started when it said (within a second),
    and running the command of its kind."""
    if not process_alive(entry.pid):
        return False
    started = _process_started(entry.pid)
    if started is not None and abs(started - entry.started_at) > _START_TIME_SLACK_SECONDS:
        return False
    return runs_command(entry.pid, COMMAND_WORDS[entry.kind])


def _process_started(pid: int) -> float | None:
    """When `pid` started (psutil's `create_time`), or None when the system will not say."""
    import psutil

    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None
