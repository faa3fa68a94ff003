"""What a run shows on stderr as it goes: the one channel from the flows to the CLI.

Internal: the public API is `agent_eval`'s; this module's names may change between releases.

A flow reports what the CLI shows (the start, each case run's outcome and a failed one's line, each criterion
scored, the finish) to `current_progress()`: the `ProgressSink` the CLI installed, else a silent one (deployments,
the Python API, a shard's worker). Every call is cheap, thread-safe (case runs finish in worker threads) and never
raises: a broken stream must not fail a run.

The CLI's sink (`Progress`) prints a start line, then on a TTY a transient bar that rich redraws by itself, else
(or with `plain`) a status line every `interval` seconds, e.g.
`agent-eval: 12/33 case runs (10 invoked, 1 cached, 1 failed) · criteria 0/2 · judge 0 calls · 8s elapsed, ETA 14s`;
failure lines go above the bar; `quiet` (`-q`) shows only them. The ETA comes from the rate of case runs done so
far, then (every case run done) from the rate of criteria scored since; it is `?` until the first is done. This
module imports neither Prefect nor rich (imported only to draw a bar): the CLI imports it at no cost.
"""

from __future__ import annotations

import atexit
import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal, NamedTuple, Protocol, TextIO, cast

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.progress import Progress as RichProgress

__all__ = [
    "INTERVAL_ENV",
    "CaseRunOutcome",
    "Progress",
    "ProgressSink",
    "current_progress",
    "install_progress",
    "uninstall_progress",
]

CaseRunOutcome = Literal["invoked", "cached", "failed", "not started"]
INTERVAL_ENV = "AGENT_EVAL_PROGRESS_INTERVAL"
_JOIN_SECONDS = 1.0
_PREFIX = "agent-eval: "


class ProgressSink(Protocol):
    """Where a run reports what the CLI shows (see the module docstring); no method raises."""

    def start(
        self, *, run_id: str, ui_url: str | None, case_runs: int, criteria: int, notes: Sequence[str] = ()
    ) -> None:
        """A run starts; `notes`: one line each on what was read (e.g. recorded traces skipped)."""

    def case_run_done(self, outcome: CaseRunOutcome, failure: str | None = None) -> None:
        """A case run finished; `failure`: a failed one's line (where, what kind, the error's first line)."""

    def case_runs_counted(self, outcomes: Mapping[str, int]) -> None:
        """Finished case runs by outcome, counted elsewhere (the store, for a sharded run)."""

    def case_runs_rate_limited(self, count: int, limit: int) -> None:
        """`count` case runs were just rate limited (they wait to be tried again); `limit`: the case runs the
        adaptive limit lets be in flight now."""

    def criterion_done(self, name: str) -> None:
        """A criterion was scored over all case runs."""

    def finish(self) -> None:
        """The run is done."""


class _SilentSink:
    """The sink when none is installed: it shows nothing."""

    def start(self, **_: object) -> None: ...
    def case_run_done(self, outcome: CaseRunOutcome, failure: str | None = None) -> None: ...
    def case_runs_counted(self, outcomes: Mapping[str, int]) -> None: ...
    def case_runs_rate_limited(self, count: int, limit: int) -> None: ...
    def criterion_done(self, name: str) -> None: ...
    def finish(self) -> None: ...


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
    not_started: int = 0
    """Case runs the run's budget never started."""
    rate_limited: int = 0
    """Case run tries the agent's provider refused (429), tried again."""
    at_once: int = 0
    """The case runs the adaptive limit let be in flight at the last refusal."""

    @property
    def done(self) -> int:
        return self.invoked + self.cached + self.failed + self.not_started


class Progress:
    """The CLI's `ProgressSink`: counts a run's progress and shows it on `stream`.

    Args:
        stream: where the lines and the bar go (usually `sys.stderr`); None shows nothing.
        interval: seconds between two status lines when `stream` is not a TTY.
        judge_stats: returns the judge's counters so far (`calls`, `cache_hits`; either may be absent).
        clock: the monotonic clock the elapsed time and the ETA are measured with (tests pass a fake one).
        plain: status lines even on a TTY (the CLI's `-v`, whose Prefect log lines would tear a bar).
        quiet: only failed case runs' lines (the CLI's `-q`).
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        interval: float,
        judge_stats: Callable[[], Mapping[str, int]] | None = None,
        clock: Callable[[], float] = time.monotonic,
        plain: bool = False,
        quiet: bool = False,
    ) -> None:
        self.interval = interval
        self._stream, self._plain, self._quiet = stream, plain, quiet
        self._clock, self._judge_stats = clock, judge_stats
        self._lock = threading.Lock()  # guards the counts; never held while writing
        self._case_runs = self._criteria = 0
        self._outcomes: dict[str, int] = {"invoked": 0, "cached": 0, "failed": 0, "not started": 0}
        self._scored: set[str] = set()
        self._rate_limited = self._at_once = 0
        self._started_at = 0.0
        self._case_runs_done_at: float | None = None
        self._stop = threading.Event()
        self._timer: threading.Thread | None = None
        self._bar: RichProgress | None = None

    def start(
        self, *, run_id: str, ui_url: str | None, case_runs: int, criteria: int, notes: Sequence[str] = ()
    ) -> None:
        """Reset the counts for a new run, print its start line and `notes`, and start the bar or the status
        lines."""
        with contextlib.suppress(Exception):
            self.finish()
            with self._lock:
                self._case_runs, self._criteria = max(case_runs, 0), max(criteria, 0)
                self._outcomes = dict.fromkeys(self._outcomes, 0)
                self._scored = set()
                self._rate_limited = self._at_once = 0
                self._started_at = self._clock()
                self._case_runs_done_at = self._started_at if self._case_runs == 0 else None
            if self._stream is None or self._quiet:
                return
            line = f"run {run_id} · {case_runs} case runs × {criteria} criteria" + (f" · {ui_url}" if ui_url else "")
            for text in (line, *notes):
                self._write(_PREFIX + text)
            self._show(self._stream)

    def case_run_done(self, outcome: CaseRunOutcome, failure: str | None = None) -> None:
        """Count one finished case run; print `failure` (a failed one's line) above the bar or as a line."""
        with contextlib.suppress(Exception):
            with self._lock:
                if outcome in self._outcomes:
                    self._outcomes[outcome] += 1
                    self._note_if_all_done()
            if failure:
                self._write(_PREFIX + failure)

    def case_runs_counted(self, outcomes: Mapping[str, int]) -> None:
        """Take the counts of finished case runs from elsewhere (`invoked`, `cached`, `failed`: a sharded run's
        parent reads them from the store); a count never goes down."""
        with contextlib.suppress(Exception), self._lock:
            for outcome in self._outcomes:
                self._outcomes[outcome] = max(self._outcomes[outcome], int(outcomes.get(outcome, 0)))
            self._note_if_all_done()

    def case_runs_rate_limited(self, count: int, limit: int) -> None:
        """Count `count` rate-limited case run tries; keep `limit` for the status line."""
        with contextlib.suppress(Exception), self._lock:
            self._rate_limited += max(count, 0)
            self._at_once = limit

    def _note_if_all_done(self) -> None:
        """Stamp when the last case run finished (the ETA then covers scoring only); call with the lock held."""
        if self._case_runs_done_at is None and sum(self._outcomes.values()) >= self._case_runs:
            self._case_runs_done_at = self._clock()

    def criterion_done(self, name: str) -> None:
        """Count one criterion scored over all case runs (a name counts once per run)."""
        with contextlib.suppress(Exception), self._lock:
            self._scored.add(name)

    def finish(self) -> None:
        """Stop the status lines or remove the bar, leaving no thread behind. Idempotent."""
        with contextlib.suppress(Exception):
            self._stop.set()
            timer, self._timer = self._timer, None
            if timer is not None and timer is not threading.current_thread():
                timer.join(_JOIN_SECONDS)
            bar, self._bar = self._bar, None
            if bar is not None:
                refresher = getattr(bar.live, "_refresh_thread", None)  # rich stops it without waiting for it
                bar.stop()
                if isinstance(refresher, threading.Thread):
                    refresher.join(_JOIN_SECONDS)

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
            scored = min(scored, self._criteria) if self._criteria else scored
            invoked, cached, failed = (self._outcomes[outcome] for outcome in ("invoked", "cached", "failed"))
            return _Snapshot(
                self._case_runs,
                self._criteria,
                invoked,
                cached,
                failed,
                scored,
                now - self._started_at,
                eta,
                self._outcomes["not started"],
                self._rate_limited,
                self._at_once,
            )

    def status_line(self) -> str:
        """The plain status line for the counts now (without a trailing newline)."""
        snap = self.snapshot()
        case_runs = f"{snap.done}/{snap.case_runs} case runs ({_outcomes_text(snap)})"
        parts = (case_runs, f"criteria {snap.scored}/{snap.criteria}", self._judge_text(), _times_text(snap))
        return _PREFIX + " · ".join(part for part in parts if part)  # no judge part before a judge call

    def _bar_rows(self) -> list[tuple[int, str]]:
        """What the bar's two rows show now: (completed, detail) of the case runs, then of the criteria."""
        snap = self.snapshot()
        return [(snap.done, f"{_outcomes_text(snap)} · {_times_text(snap)}"), (snap.scored, self._judge_text())]

    def _judge_text(self) -> str:
        """`judge N calls[, M cache hits][, K at once][, R rate-limited]` (K: where the adaptive limit on judge calls
        settled); "" without judge counters, when they raise, or before any judge call (a run without judged
        criteria says nothing about a judge)."""
        try:
            stats = self._judge_stats() if self._judge_stats is not None else {}
            calls, hits = int(stats.get("calls", 0)), int(stats.get("cache_hits", 0))
            settled, limited = int(stats.get("concurrency", 0)), int(stats.get("rate_limited", 0))
        except Exception:
            return ""
        if not calls and not hits:
            return ""
        parts = [f"judge {calls} calls", f"{hits} cache hits" if hits else "", f"{settled} at once" if settled else ""]
        return ", ".join(part for part in [*parts, f"{limited} rate-limited" if limited else ""] if part)

    def _show(self, stream: TextIO) -> None:
        """The bar on a TTY (rich redraws it), else (or if rich cannot draw it) a status line every `interval`."""
        with contextlib.suppress(Exception):  # a closed stream's `isatty` raises
            if stream.isatty() and not self._plain:
                self._bar = _rich_bar(stream, (self._case_runs, self._criteria), self._bar_rows)
                return
        self._stop = threading.Event()
        self._timer = threading.Thread(
            target=self._print_status_lines, args=(self._stop,), name="agent-eval-progress", daemon=True
        )
        self._timer.start()

    def _print_status_lines(self, stop: threading.Event) -> None:
        while not stop.wait(self.interval):
            with contextlib.suppress(Exception):  # never a traceback from this thread
                self._write(self.status_line())

    def _write(self, line: str) -> None:
        """One line: above the bar while rich draws it (the bar stays below), else on the stream; never raises."""
        with contextlib.suppress(Exception):
            if (bar := self._bar) is not None:
                bar.console.out(line, highlight=False)
            elif self._stream is not None:
                _Guarded(self._stream).write(line + "\n")


class _Guarded:
    """`stream`, written and flushed at once, never raising (rich would end the process on a broken pipe)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream, self.encoding = stream, getattr(stream, "encoding", None) or "utf-8"

    def write(self, text: str) -> int:
        with contextlib.suppress(Exception):
            self._stream.write(text)
            self._stream.flush()
        return len(text)

    def flush(self) -> None:
        """Done by `write`."""


def _rich_bar(stream: TextIO, totals: tuple[int, int], rows: Callable[[], list[tuple[int, str]]]) -> RichProgress:
    """A started transient two-row rich bar, case runs then criteria, that rich redraws from `rows` itself."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn
    from rich.progress import Progress as RichProgress

    class Bar(RichProgress):
        def get_renderables(self) -> Iterable[RenderableType]:
            with contextlib.suppress(Exception):  # an error here would end rich's refresh thread
                for task, (completed, detail) in zip(self.task_ids, rows(), strict=True):
                    self.update(task, completed=completed, detail=detail)
            return super().get_renderables()

    bar = Bar(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[detail]}"),
        console=Console(file=cast(TextIO, _Guarded(stream)), force_terminal=True),
        auto_refresh=True,
        refresh_per_second=4,
        transient=True,
        redirect_stdout=False,  # stdout may be a pipe (`--json > out.json`): never divert it to stderr
        redirect_stderr=stream is sys.stderr,  # lines printed to stderr go above the bar, not through it
    )
    for description, total in zip(("case runs", "criteria "), totals, strict=True):
        bar.add_task(description, total=total or None, detail="")
    bar.start()
    return bar


def _outcomes_text(snap: _Snapshot) -> str:
    text = f"{snap.invoked} invoked, {snap.cached} cached, {snap.failed} failed"
    text += f", {snap.not_started} not started (budget)" if snap.not_started else ""
    return text + (f", {snap.rate_limited} rate-limited, {snap.at_once} at once" if snap.rate_limited else "")


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


def _interval_from_env() -> float:
    """`AGENT_EVAL_PROGRESS_INTERVAL` in seconds (`agent_eval.settings`). While an `AGENT_EVAL_*` variable is not
    valid, the default: the CLI installs its sink before the checks that report the variable in one line."""
    from agent_eval.errors import EvalInputError  # imported here: this module imports nothing (not pydantic)
    from agent_eval.settings import DEFAULT_PROGRESS_INTERVAL_SECONDS, settings

    try:
        return settings().progress_interval
    except EvalInputError:
        return DEFAULT_PROGRESS_INTERVAL_SECONDS


class _Installed:
    """The sink the CLI installed (one per process)."""

    lock = threading.Lock()
    sink: Progress | None = None


_SILENT = _SilentSink()


def install_progress(
    stream: TextIO | None = None,
    *,
    enabled: bool = True,
    interval: float | None = None,
    judge_stats: Callable[[], Mapping[str, int]] | None = None,
    plain: bool = False,
) -> Progress:
    """Create the sink that `current_progress()` returns from now on (replacing and finishing any other).

    Args:
        stream: where to show it; default `sys.stderr`.
        enabled: False (the CLI's `-q`) shows only failed case runs' lines.
        interval: seconds between status lines when `stream` is not a TTY; default `AGENT_EVAL_PROGRESS_INTERVAL`
            (10 when unset).
        judge_stats: returns the judge's counters (`calls`, `cache_hits`), shown beside the criteria.
        plain: status lines even on a TTY (the CLI's `-v`, whose Prefect log lines would tear a bar).

    Returns:
        The installed sink.
    """
    seconds = interval if interval is not None and interval > 0 else _interval_from_env()
    shown_on = stream if stream is not None else sys.stderr
    sink = Progress(shown_on, interval=seconds, judge_stats=judge_stats, plain=plain, quiet=not enabled)
    with _Installed.lock:
        previous, _Installed.sink = _Installed.sink, sink
    if previous is not None:
        previous.finish()
    return sink


def current_progress() -> ProgressSink:
    """The installed sink, else a silent one (deployments and the Python API show nothing)."""
    installed = _Installed.sink
    return installed if installed is not None else _SILENT


def uninstall_progress() -> None:
    """Finish the installed sink and forget it; `current_progress()` is the silent one again."""
    with _Installed.lock:
        previous, _Installed.sink = _Installed.sink, None
    if previous is not None:
        previous.finish()


atexit.register(uninstall_progress)  # a bar left drawn would leave the cursor hidden
