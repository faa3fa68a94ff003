"""Recorded traffic as eval input: OpenTelemetry traces (OTLP JSON lines or protobuf) and ADK sessions (their
API's JSON, or a `DatabaseSessionService` database), read as turns and joined into one case per session.

Internal: the public API is `agent_eval`'s; this package's names may change between releases.

`load_recorded` is the load stage's entry point: it returns the eval set and what the user must be told (traces
skipped and why, content not captured).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_eval.errors import EvalInputError
from agent_eval.io.files import EVAL_FILE_SUFFIXES
from agent_eval.io.recorded.otlp import PROTO_SUFFIXES, SkippedInput, read_spans
from agent_eval.io.recorded.sessions import is_session_json, read_session_db, read_session_json, redacted_url
from agent_eval.io.recorded.spill import SpillSummary, TurnSpill
from agent_eval.io.recorded.traces import turns_from_spans
from agent_eval.io.recorded.turns import CONTENT_SETTING, RecordedTurn, TurnFilter
from agent_eval.schema import EvalCase, EvalSet
from agent_eval.secrets import UrlParameter

__all__ = [
    "CONTENT_SETTING",
    "RECORDED_FORMATS",
    "NoRecordedTurns",
    "RecordedFormat",
    "RecordedLoad",
    "RecordedSource",
    "detect_recorded_format",
    "load_recorded",
    "read_turns",
    "recorded_files",
]

RecordedFormat = Literal["otel", "adk-session"]
RECORDED_FORMATS: tuple[RecordedFormat, ...] = ("otel", "adk-session")
_MAX_SKIP_LINES = 10


class NoRecordedTurns(EvalInputError):
    """The input holds no turn in the time range and filters asked for (a scheduled run: nothing new)."""


class RecordedSource(BaseModel):
    """Where recorded traffic is read and which of it is scored (a run's parameters for recorded input)."""

    model_config = ConfigDict(extra="forbid")

    paths: list[str] = Field(default_factory=list, description="Span files or folders, or ADK session JSON files.")
    format: RecordedFormat | None = Field(default=None, description="otel or adk-session; None: from content.")
    sessions_db: UrlParameter = Field(
        default=None,
        description="An ADK DatabaseSessionService URL to read (its JSON, stored by Prefect, has no password).",
    )
    app_name: str | None = Field(default=None, description="Only this app's sessions (session databases).")
    since: datetime | None = Field(default=None, description="Only turns that started at or after this time.")
    until: datetime | None = Field(default=None, description="Only turns that started before this time.")
    sample: int | None = Field(default=None, ge=1, description="Score this many sessions, chosen with `seed`.")
    seed: int = Field(default=0, description="The seed of `sample`: the same input and seed, the same sessions.")
    services: list[str] = Field(default_factory=list, description="Only spans of these `service.name`s.")
    agent_names: list[str] = Field(default_factory=list, description="Only turns of these agents.")
    eval_set_id: str | None = Field(default=None, description="The eval set id; default: from the first path.")

    def turn_filter(self) -> TurnFilter:
        """The time, service and agent conditions."""
        return TurnFilter(
            since_ns=_ns(self.since),
            until_ns=_ns(self.until),
            services=frozenset(self.services),
            agent_names=frozenset(self.agent_names),
            app_names=frozenset([self.app_name] if self.app_name else []),
        )


@dataclass
class RecordedLoad:
    """What reading recorded traffic gave: the chosen sessions, kept on disk until their cases are asked for
    (`eval_set`, or `eval_sets` a part of the turns at a time), and counts for the summary. `close` (or the end
    of the process) deletes what was kept."""

    eval_set_id: str
    session_ids: list[str]
    spill: TurnSpill
    summary: SpillSummary
    skipped: list[SkippedInput] = field(default_factory=list)
    filtered_out: int = 0

    @property
    def turns(self) -> int:
        """The turns of the chosen sessions (each continuing turn joined into the one before it)."""
        return self.summary.turns

    @property
    def eval_set(self) -> EvalSet:
        """Every chosen session as one eval set (its size grows with the input: `eval_sets` does not)."""
        return EvalSet(eval_set_id=self.eval_set_id, eval_cases=[c for part in self._cases(None) for c in part])

    def eval_sets(self, turns: int) -> Iterator[EvalSet]:
        """The chosen sessions in parts of at most `turns` turns as read (a longer session is a part of its own),
        each part an eval set of the same id, in session order."""
        for cases in self._cases(turns):
            yield EvalSet(eval_set_id=self.eval_set_id, eval_cases=cases)

    def close(self) -> None:
        """Delete the sessions kept on disk."""
        self.spill.close()

    def notes(self) -> list[str]:
        """One line each for the user: what was read, what was skipped (the first few, then a count), and
        whether message content was missing."""
        lines = [
            f"recorded input: {self.turns} turn(s) in {len(self.session_ids)} session(s), {len(self.skipped)} skipped"
            + (f", {self.filtered_out} outside the filters" if self.filtered_out else "")
        ]
        lines += [f"skipped {skipped.one_line()}" for skipped in self.skipped[:_MAX_SKIP_LINES]]
        if len(self.skipped) > _MAX_SKIP_LINES:
            lines.append(f"skipped {len(self.skipped) - _MAX_SKIP_LINES} more")
        services = self.summary.services
        if len(services) > 1:
            lines.append(f"spans of {len(services)} services: {', '.join(services)} (--service NAME scores one)")
        if blind := self.summary.blind_sessions:
            lines.append(
                f"content not captured in {blind} session(s): the spans hold no message text or tool arguments; "
                f"set {CONTENT_SETTING} where the agent runs. Criteria that need them are not evaluated"
            )
        return lines

    def _cases(self, turns: int | None) -> Iterator[list[EvalCase]]:
        return self.spill.cases(self.session_ids, turns)


def detect_recorded_format(path: Path) -> RecordedFormat | None:
    """`otel` or `adk-session` when the file (or the first recorded file of a folder) holds recorded traffic,
    else None. A folder that holds eval files (`*.evalset.json`, `*.test.json`) is eval files, whatever else it
    holds (ADK's legacy format keeps an `initial.session.json` beside them)."""
    if path.is_dir():
        if any(p.name.endswith(EVAL_FILE_SUFFIXES) for p in path.rglob("*")):
            return None
        found = recorded_files(path)
    else:
        found = [(path, _file_format(path))]
    return next((kind for _, kind in found if kind is not None), None)


def recorded_files(path: Path, wanted: RecordedFormat | None = None) -> list[tuple[Path, RecordedFormat | None]]:
    """The files at `path` with their format: the file itself (format None when it is no recorded traffic), or a
    folder's recorded files (recursively, by name; each file's format from its content, only `wanted` when
    given; other and empty files left out)."""
    if not path.is_dir():
        return [(path, wanted or _file_format(path))]
    found = [(file, _file_format(file)) for file in sorted(p for p in path.rglob("*") if p.is_file())]
    return [(file, kind) for file, kind in found if kind is not None and kind == (wanted or kind)]


def _file_format(file: Path) -> RecordedFormat | None:
    name = file.name.lower().removesuffix(".gz")
    if name.endswith(PROTO_SUFFIXES):
        return "otel"
    head = _head(file)
    if b'"resourceSpans"' in head or b'"resource_spans"' in head:
        return "otel"
    if name.endswith(".json") and not name.endswith(EVAL_FILE_SUFFIXES) and b'"events"' in head:
        return "adk-session" if _holds_events(file) else None
    return None


def _holds_events(file: Path) -> bool:
    """Whether a JSON file is ADK sessions with at least one event (an initial session has none: not traffic)."""
    try:
        data = json.loads(file.read_bytes())
    except (OSError, ValueError):
        return False
    sessions = data if isinstance(data, list) else [data]
    return is_session_json(sessions) and any(isinstance(s, dict) and s.get("events") for s in sessions)


def load_recorded(source: RecordedSource) -> RecordedLoad:
    """Read and filter the recorded turns, and choose the sessions to score (`source.sample`); the turns are
    kept on disk (`TurnSpill`): what reading holds is one string per session, not the turns.

    Raises:
        EvalInputError: nothing to read, a file that holds no recorded traffic, or no turn left to score.
    """
    skipped: list[SkippedInput] = []
    wanted = source.turn_filter()
    spill = TurnSpill()
    try:
        seen = kept = 0
        for turn in read_turns(source, skipped.append):
            seen += 1
            if wanted.keeps(turn):
                kept += 1
                spill.add(turn)
        _check_read(source, seen, kept, skipped)
        session_ids = spill.session_ids(sample=source.sample, seed=source.seed)
        summary = spill.summary(session_ids)
    except BaseException:
        spill.close()
        raise
    return RecordedLoad(_eval_set_id(source), session_ids, spill, summary, skipped, filtered_out=seen - kept)


def _check_read(source: RecordedSource, seen: int, kept: int, skipped: list[SkippedInput]) -> None:
    """Raises EvalInputError when no turn could be read, `NoRecordedTurns` when the filters kept none."""
    where = ", ".join(source.paths) or redacted_url(source.sessions_db or "")
    if not seen:
        first = f" (first skipped: {skipped[0].one_line()})" if skipped else ""
        raise EvalInputError(f"no turn could be read{first}", file=where)
    if not kept:
        raise NoRecordedTurns("no turn in the given time range or filters", file=where)


def read_turns(source: RecordedSource, on_skip: Callable[[SkippedInput], None]) -> Iterator[RecordedTurn]:
    """Every recorded turn of the source, unfiltered, streaming."""
    if source.sessions_db:
        yield from read_session_db(source.sessions_db)
    for raw in source.paths:
        yield from _turns_of_path(Path(raw), source.format, on_skip)


def _turns_of_path(
    path: Path, wanted: RecordedFormat | None, on_skip: Callable[[SkippedInput], None]
) -> Iterator[RecordedTurn]:
    """The turns of one file or folder: its span files as one stream (a trace may span files), then its session
    files.

    Raises:
        EvalInputError: the path holds no recorded traffic.
    """
    if not path.exists():
        raise EvalInputError("no such file or folder", file=path)
    files = recorded_files(path, wanted)
    if not files or any(kind is None for _, kind in files):
        what = (
            "the folder holds no span files or ADK session JSON"
            if path.is_dir()
            else "neither OTLP spans nor an ADK session"
        )
        raise EvalInputError(f"not recorded traffic: {what}", file=path)
    span_paths = [file for file, kind in files if kind == "otel"]
    if span_paths:
        yield from turns_from_spans(read_spans(span_paths, on_skip), on_skip)
    for file, kind in files:
        if kind == "adk-session":
            yield from read_session_json(file)


def _head(file: Path, size: int = 4096) -> bytes:
    import gzip

    try:
        opener = gzip.open if file.name.lower().endswith(".gz") else open
        with opener(file, "rb") as stream:
            return bytes(stream.read(size))
    except OSError:
        return b""


def _eval_set_id(source: RecordedSource) -> str:
    if source.eval_set_id:
        return source.eval_set_id
    if source.paths:
        name = Path(source.paths[0]).name
        return name.split(".")[0] or "recorded"
    return "sessions"


def _ns(moment: datetime | None) -> int | None:
    """Nanoseconds since the epoch; a time without a zone is UTC (as the CLI and the docs say)."""
    if moment is None:
        return None
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return int(aware.timestamp() * 1_000_000_000)
