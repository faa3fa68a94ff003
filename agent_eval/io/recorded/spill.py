"""Recorded turns kept on disk while they are read, so that a recorded input of any size is read in bounded memory.

Internal: the public API is `agent_eval`'s; this module's names may change between releases.

A session's turns may be anywhere in the input (several files, interleaved with other sessions), so its case can
only be built once everything is read. `TurnSpill` writes each turn, as it is read, to a private temporary SQLite
file keyed by session; the cases are then built a few sessions at a time (`TurnSpill.cases`). What stays in
memory is one string per session (its id), and what the summary counts.

The loader's rules, as they were when it held every turn in memory: a turn read twice (same session, same
invocation id) counts once (the first read wins); a session's turns are ordered by start time, then by reading
order; sessions come out sorted by id; `sample` keeps that many sessions, chosen with `seed`.

A process that ends without running its clean-up (SIGKILL, or `os._exit` after a signal) leaves its file behind:
its folder is named with its pid, the signal path removes its own (`remove_own_spills`), and every new spill
removes those of processes no longer alive (`TurnSpill`).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import random
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path
from typing import Any

from agent_eval.io.recorded.turns import RecordedTurn, case_of_session
from agent_eval.runtime.processes import process_alive
from agent_eval.schema import EvalCase

__all__ = ["SPILL_PREFIX", "SpillSummary", "TurnSpill", "remove_own_spills"]

SPILL_PREFIX = "agent-eval-turns-"
"""A spill folder's name in the temporary folder: this prefix, the pid of its process, `-`, a random part."""

_WRITE_BATCH = 500
"""Turns written per `executemany`: large enough to be fast, small enough to hold little."""
_SCHEMA = """
CREATE TABLE turns (
    seq INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    invocation_id TEXT NOT NULL,
    started_ns INTEGER NOT NULL,
    continues INTEGER NOT NULL,
    service TEXT,
    captured INTEGER NOT NULL,
    turn BLOB NOT NULL,
    UNIQUE (session_id, invocation_id)
)
"""


@dataclass(frozen=True)
class SpillSummary:
    """Counts over some sessions of a spill (`TurnSpill.summary`)."""

    turns: int
    services: list[str]
    blind_sessions: int
    """Sessions with a turn whose spans hold no message content."""


class TurnSpill:
    """The kept turns of one recorded input, in a temporary SQLite file that is deleted with this object.

    The file is private to this process and holds only turns this process pickled: it is never read from
    anywhere else. `close` deletes it; so does the garbage collector, or the end of the process. Creating one
    first removes the spills of processes that died without deleting theirs.
    """

    def __init__(self) -> None:
        _remove_abandoned_spills()
        self._folder = tempfile.TemporaryDirectory(prefix=f"{SPILL_PREFIX}{os.getpid()}-")
        self._db = sqlite3.connect(Path(self._folder.name) / "turns.sqlite3", check_same_thread=False)
        self._db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;" + _SCHEMA)
        self._pending: list[tuple[Any, ...]] = []
        self._session_ids: list[str] | None = None

    def add(self, turn: RecordedTurn) -> None:
        """Keep `turn` (a second turn of the same session and invocation id is ignored when written)."""
        key = (turn.session_id, turn.invocation.invocation_id, turn.started_ns)
        counted = (int(turn.continues), turn.service, int(turn.content_captured))
        self._pending.append((*key, *counted, pickle.dumps(turn, protocol=pickle.HIGHEST_PROTOCOL)))
        if len(self._pending) >= _WRITE_BATCH:
            self._write()

    def session_ids(self, *, sample: int | None = None, seed: int = 0) -> list[str]:
        """The sessions, sorted by id; `sample`: that many of them chosen with `seed`, sorted too."""
        if self._session_ids is None:
            self._write()
            rows = self._db.execute("SELECT DISTINCT session_id FROM turns")
            self._session_ids = sorted(session_id for (session_id,) in rows)
        chosen = self._session_ids
        if sample is not None and sample < len(chosen):
            return sorted(random.Random(seed).sample(chosen, sample))
        return list(chosen)

    def summary(self, session_ids: list[str]) -> SpillSummary:
        """What the user is told of these sessions: their turns once each continuing turn is joined into the one
        before it, the services their turns came from, and how many sessions miss some message content."""
        turns, blind, services = 0, 0, set[str]()
        for _, session in groupby(self._rows(session_ids, "session_id, continues, service, captured"), key=_first):
            rows = list(session)
            turns += sum(1 for index, row in enumerate(rows) if index == 0 or not row[1])
            services.update(row[2] for row in rows if row[2])
            blind += not all(row[3] for row in rows)
        return SpillSummary(turns=turns, services=sorted(services), blind_sessions=blind)

    def cases(self, session_ids: list[str], turns: int | None = None) -> Iterator[list[EvalCase]]:
        """The cases of `session_ids` (in that order), in parts of at most `turns` turns as read (a session of more
        turns is a part of its own); None: one part."""
        for part in self._parts(session_ids, turns):
            rows = self._rows(part, "session_id, turn")
            by_session = {sid: [pickle.loads(blob) for _, blob in held] for sid, held in groupby(rows, _first)}
            yield [case_of_session(session_id, by_session[session_id]) for session_id in part]

    def close(self) -> None:
        """Delete the file (idempotent)."""
        self._db.close()
        self._folder.cleanup()

    def _rows(self, session_ids: list[str], columns: str) -> Iterator[tuple[Any, ...]]:
        """`columns` of the turns of `session_ids`, grouped by session, each session's turns in turn order; the
        sessions are asked `_WRITE_BATCH` at a time (SQLite bounds the parameters of one statement)."""
        self._write()
        for part in _chunks(session_ids, _WRITE_BATCH):  # each session in one chunk: its rows stay together
            marks = ",".join("?" * len(part))
            yield from self._db.execute(
                f"SELECT {columns} FROM turns WHERE session_id IN ({marks}) "  # only question marks are formatted in
                "ORDER BY session_id, started_ns, seq",
                part,
            )

    def _parts(self, session_ids: list[str], turns: int | None) -> list[list[str]]:
        """`session_ids` cut, in order, into parts of at most `turns` turns as read (see `cases`)."""
        if turns is None:
            return [session_ids]
        self._write()
        held = dict(self._db.execute("SELECT session_id, COUNT(*) FROM turns GROUP BY session_id"))
        parts: list[list[str]] = [[]]
        in_part = 0
        for session_id in session_ids:
            if parts[-1] and in_part + held[session_id] > turns:
                parts.append([])
                in_part = 0
            parts[-1].append(session_id)
            in_part += held[session_id]
        return parts

    def _write(self) -> None:
        if self._pending:
            self._db.executemany(
                "INSERT OR IGNORE INTO turns (session_id, invocation_id, started_ns, continues, service, captured, "
                "turn) VALUES (?, ?, ?, ?, ?, ?, ?)",
                self._pending,
            )
            self._pending = []
            self._session_ids = None


def remove_own_spills() -> None:
    """Delete this process's spill folders, for a path that ends the process without its clean-up (the CLI's
    signal handler ends with `os._exit`)."""
    for folder, pid in _spill_folders():
        if pid == os.getpid():
            shutil.rmtree(folder, ignore_errors=True)


def _remove_abandoned_spills() -> None:
    """Delete the spill folders of processes that are no longer alive (a folder whose pid now names another
    process is kept: deleting a live run's file would break it; the next spill after that process removes it)."""
    for folder, pid in _spill_folders():
        if pid != os.getpid() and not process_alive(pid):
            shutil.rmtree(folder, ignore_errors=True)


def _spill_folders() -> Iterator[tuple[Path, int]]:
    """(folder, pid of the process that made it) of every spill folder in the temporary folder."""
    with contextlib.suppress(OSError):
        for folder in Path(tempfile.gettempdir()).glob(f"{SPILL_PREFIX}*-*"):
            pid = folder.name.removeprefix(SPILL_PREFIX).split("-", 1)[0]
            if pid.isdigit():
                yield folder, int(pid)


def _first(row: tuple[Any, ...]) -> Any:
    return row[0]


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
