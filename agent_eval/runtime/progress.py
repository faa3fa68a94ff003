"""Live progress of an `agent-eval run` on stderr: a transient rich bar on a TTY, a plain status line elsewhere.

Internal: the public API is `agent_eval`'s; this module's names may change between releases.

The CLI installs one `Progress` (`install_progress`); the flow reports to whatever `current_progress()` returns,
which is a silent no-op when nothing is installed (deployments, the Python API). Every method is cheap, thread-safe
(Prefect runs case-run tasks in worker threads) and never raises: a broken stream must not fail an evaluation.

On a TTY the bar is redrawn by our own daemon thread a few times a second; elsewhere the same thread writes one
status line every `interval` seconds between `start` and `finish`, e.g.
`agent-eval: 12/33 case runs (10 invoked, 1 cached, 1 failed) · criteria 0/2 · judge 0 calls · 8s elapsed, ETA 14s`.
The ETA comes from the rate of case runs done so far and, once every case run is done, from the rate of criteria
scored since then; it is `?` until the first of them is done. This module imports neither Prefect nor rich
(rich is imported only when a bar is drawn), so the CLI can import it at no cost.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Literal, NamedTuple, TextIO

if TYPE_CHECKING:
    from rich.progress import Progress as RichProgress
    from rich.progress import TaskID

__all__ = [
    "DEFAULT_INTERVAL_SECONDS",
    "INTERVAL_ENV",
    "CaseRunOutcome",
    "Progress",
    "current_progress",
    "install_progress",
    "uninstall_progress",
]

CaseRunOutcome = Literal["invoked", "cached", "failed"]
DEFAULT_INTERVAL_SECONDS = 10.0
INTERVAL_ENV = "AGENT_EVAL_PROGRESS_INTERVAL"
_BAR_REFRESH_SECONDS = 0.25
_JOIN_SECONDS = 1.0
_PREFIX = "agent-eval: "


class _Snapshot(NamedTuple):
    """The counts of one moment of a run, and the times derived from them."""

    case_runs: int
    criteria: int
    invoked: int
    cached: int
    failed: int
    scored: int
    elapsed: float
    eta: float | None

    @property
    def done(self) -> int:
        return self.invoked + self.cached + self.failed


class Progress:
    """Counts and shows a run's progress; thread-safe; every method is cheap and never raises.

    `Progress()` without a stream counts but shows nothing: the no-op that `current_progress` returns when the
    CLI installed none.

    Args:
        stream: where the start line, the status lines or the bar go (usually `sys.stderr`); None shows nothing.
        interval: seconds between two status lines when `stream` is not a TTY.
        judge_stats: returns the judge's counters so far (`calls`, `cache_hits`; either may be absent).
        clock: the monotonic clock the elapsed time and the ETA are measured with (tests pass a fake one).
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        interval: float = DEFAULT_INTERVAL_SECONDS,
        judge_stats: Callable[[], Mapping[str, int]] | None = None,
        clock: Callable[[], float] = time.monotonic,
        plain: bool = False,
    ) -> None:
        self._stream = stream
        self._plain = plain
        self._clock = clock
        self._interval = interval
        self._judge_stats = judge_stats
        self._lock = threading.Lock()  # guards the counts; never held while writing
        self._output_lock = threading.Lock()  # serialises writes to the stream and the bar
        self._case_runs = 0
        self._criteria = 0
        self._outcomes: dict[str, int] = {"invoked": 0, "cached": 0, "failed": 0}
        self._scored: set[str] = set()
        self._started_at = 0.0
        self._case_runs_done_at: float | None = None
        self._stop = threading.Event()
        self._stop.set()
        self._thread: threading.Thread | None = None
        self._bar: _Bar | None = None

    @property
    def interval(self) -> float:
        """Seconds between two status lines when the stream is not a TTY."""
        return self._interval

    def start(
        self, *, run_id: str, ui_url: str | None, case_runs: int, criteria: int, notes: Sequence[str] = ()
    ) -> None:
        """Reset the counts for a new run, print its start line and `notes` (one line each: what was read, e.g.
        recorded traces skipped), and start the bar or the status lines."""
        with contextlib.suppress(Exception):
            self.finish()
            with self._lock:
                self._case_runs, self._criteria = max(case_runs, 0), max(criteria, 0)
                self._outcomes = dict.fromkeys(self._outcomes, 0)
                self._scored = set()
                self._started_at = self._clock()
                self._case_runs_done_at = self._started_at if self._case_runs == 0 else None
            if self._stream is None:
                return
            line = f"run {run_id} · {case_runs} case runs × {criteria} criteria"
            self._write(_PREFIX + line + (f" · {ui_url}" if ui_url else ""))
            for note in notes:
                self._write(_PREFIX + note)
            self._start_display(self._stream)

    def case_run_done(self, outcome: CaseRunOutcome) -> None:
        """Count one finished case run: the agent was `invoked`, its answer came from the cache, or it `failed`."""
        with contextlib.suppress(Exception), self._lock:
            if outcome not in self._outcomes:
                return
            self._outcomes[outcome] += 1
            self._note_if_all_done()

    def case_runs_counted(self, outcomes: Mapping[str, int]) -> None:
        """Take the counts of finished case runs from elsewhere (`invoked`, `cached`, `failed`: a sharded run's
        parent reads them from the store); a count never goes down."""
        with contextlib.suppress(Exception), self._lock:
            for outcome in self._outcomes:
                self._outcomes[outcome] = max(self._outcomes[outcome], int(outcomes.get(outcome, 0)))
            self._note_if_all_done()

    def _note_if_all_done(self) -> None:
        """Stamp when the last case run finished (the ETA then covers scoring only); call with the lock held."""
        if self._case_runs_done_at is None and sum(self._outcomes.values()) >= self._case_runs:
            self._case_runs_done_at = self._clock()

    def criterion_done(self, name: str) -> None:
        """Count one criterion scored over all case runs (a name counts once per run)."""
        with contextlib.suppress(Exception), self._lock:
            self._scored.add(name)

    def finish(self) -> None:
        """Stop the status lines or remove the bar; print nothing more. Idempotent."""
        with contextlib.suppress(Exception):
            self._stop.set()
            thread, self._thread = self._thread, None
            if thread is not None and thread is not threading.current_thread():
                thread.join(_JOIN_SECONDS)
            bar, self._bar = self._bar, None
            if bar is not None:
                with self._holding_output() as held:
                    if held:
                        bar.stop()

    def snapshot(self) -> _Snapshot:
        """The counts now, with the elapsed time and the ETA (None while it cannot be estimated)."""
        with self._lock:
            now = self._clock()
            done, scored = sum(self._outcomes.values()), len(self._scored)
            eta: float | None = None
            if done < self._case_runs:
                eta = (now - self._started_at) / done * (self._case_runs - done) if done else None
            elif scored < self._criteria:
                since = self._case_runs_done_at if self._case_runs_done_at is not None else self._started_at
                eta = (now - since) / scored * (self._criteria - scored) if scored else None
            else:
                eta = 0.0
            return _Snapshot(
                case_runs=self._case_runs,
                criteria=self._criteria,
                invoked=self._outcomes["invoked"],
                cached=self._outcomes["cached"],
                failed=self._outcomes["failed"],
                scored=min(scored, self._criteria) if self._criteria else scored,
                elapsed=now - self._started_at,
                eta=eta,
            )

    def status_line(self) -> str:
        """The plain status line for the counts now (without a trailing newline)."""
        snap = self.snapshot()
        parts = [
            f"{snap.done}/{snap.case_runs} case runs ({snap.invoked} invoked, {snap.cached} cached, "
            f"{snap.failed} failed)",
            f"criteria {snap.scored}/{snap.criteria}",
        ]
        judge = self._judge_text()
        if judge:
            parts.append(judge)
        parts.append(_times_text(snap))
        return _PREFIX + " · ".join(parts)

    def _judge_text(self) -> str:
        """`judge N calls[, M cache hits]`, or "" when there are no judge counters, they raised, or no judge
        was asked anything yet."""
        if self._judge_stats is None:
            return ""
        try:
            stats = self._judge_stats()
            calls, hits = int(stats.get("calls", 0)), int(stats.get("cache_hits", 0))
        except Exception:
            return ""
        if not calls and not hits:
            return ""  # a run without judged criteria says nothing about a judge
        return f"judge {calls} calls" + (f", {hits} cache hits" if hits else "")

    def _start_display(self, stream: TextIO) -> None:
        """The bar on a TTY (plain lines if rich cannot draw it), else the status-line timer."""
        self._stop = threading.Event()
        interval = self._interval
        if _is_tty(stream) and not self._plain:
            try:
                self._bar = _Bar(stream, self.snapshot())
                interval = _BAR_REFRESH_SECONDS
            except Exception:
                self._bar = None
        self._thread = threading.Thread(
            target=self._run_timer, args=(self._stop, interval), name="agent-eval-progress", daemon=True
        )
        self._thread.start()

    def _run_timer(self, stop: threading.Event, interval: float) -> None:
        while not stop.wait(interval):
            with contextlib.suppress(Exception), self._holding_output() as held:
                if not held or stop.is_set():
                    continue
                if self._bar is not None:
                    self._bar.update(self.snapshot(), self._judge_text())
                else:
                    self._write_unlocked(self.status_line())

    def _write(self, line: str) -> None:
        with self._holding_output() as held:
            if held:
                self._write_unlocked(line)

    def _write_unlocked(self, line: str) -> None:
        if self._stream is None:
            return
        with contextlib.suppress(Exception):
            self._stream.write(line + "\n")
            self._stream.flush()

    @contextlib.contextmanager
    def _holding_output(self) -> Iterator[bool]:
        """Hold the output lock for a while at most: a stream blocked on a full pipe must not hang the caller."""
        held = self._output_lock.acquire(timeout=_JOIN_SECONDS)
        try:
            yield held
        finally:
            if held:
                self._output_lock.release()


class _Bar:
    """A transient two-row rich bar: case runs (with outcomes, elapsed, ETA), then criteria (with the judge)."""

    def __init__(self, stream: TextIO, snap: _Snapshot) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn
        from rich.progress import Progress as RichProgress

        console = Console(file=stream, force_terminal=True)
        self._progress: RichProgress = RichProgress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[detail]}"),
            console=console,
            auto_refresh=False,
            transient=True,
            redirect_stdout=False,  # stdout may be a pipe (`--json > out.json`): never divert it to stderr
            redirect_stderr=stream is sys.stderr,  # lines printed to stderr go above the bar, not through it
        )
        self._case_task: TaskID = self._progress.add_task("case runs", total=snap.case_runs or None, detail="")
        self._criteria_task: TaskID = self._progress.add_task("criteria ", total=snap.criteria or None, detail="")
        self.update(snap, "")
        self._progress.start()

    def update(self, snap: _Snapshot, judge: str) -> None:
        """Redraw with the counts of `snap` and the judge's counters."""
        outcomes = f"{snap.invoked} invoked, {snap.cached} cached, {snap.failed} failed · {_times_text(snap)}"
        self._progress.update(self._case_task, completed=snap.done, detail=outcomes)
        self._progress.update(self._criteria_task, completed=snap.scored, detail=judge)
        self._progress.refresh()

    def stop(self) -> None:
        """Remove the bar from the terminal and restore the cursor and stderr."""
        self._progress.stop()


def _times_text(snap: _Snapshot) -> str:
    eta = "?" if snap.eta is None else _format_seconds(snap.eta)
    return f"{_format_seconds(snap.elapsed)} elapsed, ETA {eta}"


def _format_seconds(seconds: float) -> str:
    """`8s`, `2m05s`, `1h02m`: short enough for one status line."""
    whole = max(round(seconds), 0)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def _is_tty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except Exception:
        return False


def _interval_from_env() -> float:
    """`AGENT_EVAL_PROGRESS_INTERVAL` in seconds if it is a positive number, else the default."""
    try:
        value = float(os.environ.get(INTERVAL_ENV, ""))
    except ValueError:
        return DEFAULT_INTERVAL_SECONDS
    return value if value > 0 else DEFAULT_INTERVAL_SECONDS


class _Installed:
    """The progress the CLI installed (one per process), and whether its atexit clean-up is registered."""

    lock = threading.Lock()
    progress: Progress | None = None
    atexit_registered = False


_NOOP = Progress()


def install_progress(
    stream: TextIO | None = None,
    *,
    enabled: bool = True,
    interval: float | None = None,
    judge_stats: Callable[[], Mapping[str, int]] | None = None,
    plain: bool = False,
) -> Progress:
    """Create the progress that `current_progress()` returns from now on (replacing and finishing any other).

    Args:
        stream: where to show it; default `sys.stderr`.
        enabled: False (the CLI's `-q`) installs a no-op progress that shows nothing.
        interval: seconds between status lines when `stream` is not a TTY; default `AGENT_EVAL_PROGRESS_INTERVAL`
            or 10.
        judge_stats: returns the judge's counters (`calls`, `cache_hits`), shown beside the criteria.
        plain: status lines even on a TTY (the CLI's `-v`, whose Prefect log lines would tear a bar).

    Returns:
        The installed progress.
    """
    seconds = interval if interval is not None and interval > 0 else _interval_from_env()
    shown_on = (stream if stream is not None else sys.stderr) if enabled else None
    progress = Progress(shown_on, interval=seconds, judge_stats=judge_stats, plain=plain)
    with _Installed.lock:
        previous, _Installed.progress = _Installed.progress, progress
        if not _Installed.atexit_registered:
            atexit.register(uninstall_progress)  # a bar left drawn would leave the cursor hidden
            _Installed.atexit_registered = True
    if previous is not None:
        previous.finish()
    return progress


def current_progress() -> Progress:
    """The installed progress, else a no-op one (deployments and the Python API show nothing)."""
    installed = _Installed.progress
    return installed if installed is not None else _NOOP


def uninstall_progress() -> None:
    """Finish the installed progress and forget it; `current_progress()` is the no-op again."""
    with _Installed.lock:
        previous, _Installed.progress = _Installed.progress, None
    if previous is not None:
        previous.finish()
