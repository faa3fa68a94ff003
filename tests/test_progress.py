"""Live progress of a run (`runtime.progress`): the start line, the plain status lines, the TTY bar, the no-op."""

from __future__ import annotations

import io
import logging
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agent_eval.runtime.progress import (
    INTERVAL_ENV,
    CaseRunOutcome,
    Progress,
    current_progress,
    install_progress,
    uninstall_progress,
)
from agent_eval.settings import DEFAULT_PROGRESS_INTERVAL_SECONDS
from tests.fakes.clock import FakeClock
from tests.flows.helpers import write_echo_set

UI = "http://127.0.0.1:4200/runs/flow-run/0b1c"


class FakeTTY(io.StringIO):
    """A terminal as far as `isatty` tells."""

    def isatty(self) -> bool:
        return True


class BrokenStream(io.StringIO):
    """A stream whose every operation fails, like a closed stderr."""

    def write(self, s: str) -> int:
        raise OSError("stream closed")

    def flush(self) -> None:
        raise OSError("stream closed")

    def isatty(self) -> bool:
        raise ValueError("I/O operation on closed file")


@pytest.fixture(autouse=True)
def _uninstall() -> Iterator[None]:
    yield
    uninstall_progress()


def wait_for(condition: Callable[[], bool], seconds: float = 3.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return condition()


def progress_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "agent-eval-progress"]


def test_start_line_is_printed_at_once_with_and_without_ui_url() -> None:
    stream = io.StringIO()
    progress = install_progress(stream, interval=60)
    progress.start(run_id="r-42", ui_url=UI, case_runs=33, criteria=2)
    assert stream.getvalue() == f"agent-eval: run r-42 · 33 case runs × 2 criteria · {UI}\n"
    progress.finish()

    other = io.StringIO()
    install_progress(other, interval=60).start(run_id="r-43", ui_url=None, case_runs=1, criteria=0)
    assert other.getvalue() == "agent-eval: run r-43 · 1 case runs × 0 criteria\n"


def test_plain_status_lines_show_counts_judge_and_eta_and_stop_at_finish() -> None:
    stream = io.StringIO()
    judge = {"calls": 7, "cache_hits": 3}
    progress = install_progress(stream, interval=0.05, judge_stats=lambda: judge)
    progress.start(run_id="r1", ui_url=None, case_runs=5, criteria=2)
    assert wait_for(lambda: "case runs (" in stream.getvalue())
    first = stream.getvalue().splitlines()[1]
    assert first.startswith("agent-eval: 0/5 case runs (0 invoked, 0 cached, 0 failed) · criteria 0/2 · ")
    assert first.endswith("ETA ?")

    for outcome in ("invoked", "failed", "invoked"):
        progress.case_run_done(outcome)
    wanted = "3/5 case runs (2 invoked, 0 cached, 1 failed)"
    assert wait_for(lambda: wanted in stream.getvalue())
    line = next(x for x in stream.getvalue().splitlines() if wanted in x)
    assert " · criteria 0/2 · judge 7 calls, 3 cache hits · " in line
    assert re.search(r"\d+s elapsed, ETA \d+s$", line), line

    progress.finish()
    written = stream.getvalue()
    time.sleep(0.25)
    assert stream.getvalue() == written
    assert progress_threads() == []


def test_eta_from_case_runs_then_from_criteria() -> None:
    clock = FakeClock()
    progress = Progress(io.StringIO(), interval=60, clock=clock)
    progress.start(run_id="r", ui_url=None, case_runs=5, criteria=2)
    clock.now += 10
    assert progress.snapshot().eta is None
    progress.case_run_done("invoked")
    progress.case_run_done("cached")
    assert progress.snapshot().eta == pytest.approx(15.0)  # 5 s per case run, 3 to go
    clock.now += 5
    for _ in range(3):
        progress.case_run_done("invoked")
    assert progress.snapshot().eta is None  # every case run done, no criterion scored yet
    clock.now += 6
    progress.criterion_done("tool_trajectory_avg_score")
    progress.criterion_done("tool_trajectory_avg_score")  # the same criterion counts once
    snap = progress.snapshot()
    assert snap.scored == 1
    assert snap.eta == pytest.approx(6.0)
    assert snap.elapsed == pytest.approx(21.0)
    clock.now += 44
    progress.criterion_done("response_match_score")
    assert progress.status_line() == (
        "agent-eval: 5/5 case runs (4 invoked, 1 cached, 0 failed) · criteria 2/2 · 1m05s elapsed, ETA 0s"
    )
    progress.finish()


def test_judge_part_tolerates_missing_keys_and_a_raising_callable() -> None:
    clock = FakeClock()
    progress = Progress(io.StringIO(), interval=60, judge_stats=lambda: {}, clock=clock)
    progress.start(run_id="r", ui_url=None, case_runs=2, criteria=1)
    assert " · criteria 0/1 · 0s elapsed, ETA ?" in progress.status_line()  # no judge call yet: no judge part

    def broken() -> dict[str, int]:
        raise RuntimeError("judge client gone")

    failing = Progress(io.StringIO(), interval=60, judge_stats=broken, clock=clock)
    failing.start(run_id="r", ui_url=None, case_runs=2, criteria=1)
    expected = "agent-eval: 0/2 case runs (0 invoked, 0 cached, 0 failed) · criteria 0/1 · 0s elapsed, ETA ?"
    assert failing.status_line() == expected
    progress.finish()
    failing.finish()


def test_tty_draws_a_transient_bar_and_finish_leaves_no_thread() -> None:
    before = set(threading.enumerate())
    stream = FakeTTY()
    progress = install_progress(stream, interval=0.05, judge_stats=lambda: {"calls": 2})
    progress.start(run_id="r-tty", ui_url=None, case_runs=4, criteria=1)
    progress.case_run_done("invoked")
    progress.case_run_done("cached")
    assert wait_for(lambda: "1 invoked, 1 cached, 0 failed" in stream.getvalue())
    drawn = stream.getvalue()
    assert drawn.startswith("agent-eval: run r-tty · 4 case runs × 1 criteria\n")
    assert "━" in drawn and "2/4" in drawn and "judge 2 calls" in drawn
    assert "\x1b[?25l" in drawn  # the cursor is hidden while the bar is drawn

    progress.finish()
    progress.finish()  # idempotent
    assert stream.getvalue().endswith("\x1b[2K")  # the bar's lines are erased: transient
    assert "\x1b[?25h" in stream.getvalue()[len(drawn) :]  # the cursor is shown again
    assert set(threading.enumerate()) <= before


def test_lines_printed_to_stderr_during_the_bar_go_above_it(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = FakeTTY()
    monkeypatch.setattr(sys, "stderr", terminal)
    progress = install_progress(interval=60)  # the default stream: sys.stderr
    progress.start(run_id="r", ui_url=None, case_runs=2, criteria=1)
    assert sys.stderr is not terminal  # rich routes stderr through the bar's console while it is drawn
    print("agent-eval: case c1 run 0 failed: TimeoutError: turn 1", file=sys.stderr)
    progress.finish()
    assert sys.stderr is terminal
    assert "agent-eval: case c1 run 0 failed: TimeoutError: turn 1\n" in terminal.getvalue()


def test_nothing_installed_or_disabled_is_a_silent_no_op() -> None:
    noop = current_progress()
    noop.start(run_id="r", ui_url=UI, case_runs=3, criteria=1)
    noop.case_run_done("invoked")
    noop.finish()
    assert progress_threads() == []

    stream = io.StringIO()
    quiet = install_progress(stream, enabled=False, interval=0.05)
    assert current_progress() is quiet
    quiet.start(run_id="r", ui_url=UI, case_runs=3, criteria=1)
    quiet.case_run_done("failed")
    time.sleep(0.15)
    assert stream.getvalue() == ""
    assert progress_threads() == []

    uninstall_progress()
    assert current_progress() is noop


def test_a_broken_stream_never_raises_into_the_run() -> None:
    progress = install_progress(BrokenStream(), interval=0.05)
    progress.start(run_id="r", ui_url=None, case_runs=2, criteria=1)
    progress.case_run_done("invoked")
    progress.criterion_done("response_match_score")
    time.sleep(0.12)
    progress.finish()
    assert progress.snapshot().done == 1
    assert progress_threads() == []


def test_counts_are_exact_under_concurrent_updates() -> None:
    progress = Progress(io.StringIO(), interval=60)
    progress.start(run_id="r", ui_url=None, case_runs=800, criteria=0)
    outcomes: tuple[CaseRunOutcome, ...] = ("invoked", "cached", "failed", "invoked")

    def report(i: int) -> None:
        for _ in range(100):
            progress.case_run_done(outcomes[i % 4])

    workers = [threading.Thread(target=report, args=(i,)) for i in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    snap = progress.snapshot()
    assert (snap.invoked, snap.cached, snap.failed, snap.done) == (400, 200, 200, 800)
    progress.finish()


def test_a_second_start_resets_the_counts() -> None:
    stream = io.StringIO()
    progress = install_progress(stream, interval=60)
    progress.start(run_id="first", ui_url=None, case_runs=2, criteria=1)
    progress.case_run_done("invoked")
    progress.criterion_done("c")
    progress.finish()
    progress.start(run_id="second", ui_url=None, case_runs=3, criteria=1)
    snap = progress.snapshot()
    assert (snap.done, snap.scored, snap.case_runs) == (0, 0, 3)
    assert stream.getvalue().splitlines()[-1] == "agent-eval: run second · 3 case runs × 1 criteria"


@pytest.mark.parametrize(
    ("value", "expected"), [("0.25", 0.25), ("soon", DEFAULT_PROGRESS_INTERVAL_SECONDS), ("-1", 10.0)]
)
def test_interval_comes_from_the_environment_unless_given(
    monkeypatch: pytest.MonkeyPatch, value: str, expected: float
) -> None:
    """A bad value installs the default (the CLI installs its sink before its checks, which then report the
    variable in one line: tests/test_settings.py)."""
    monkeypatch.setenv(INTERVAL_ENV, value)
    assert install_progress(io.StringIO()).interval == expected
    assert install_progress(io.StringIO(), interval=2.5).interval == 2.5


def test_installing_again_finishes_the_previous_progress() -> None:
    first_stream = io.StringIO()
    first = install_progress(first_stream, interval=0.05)
    first.start(run_id="a", ui_url=None, case_runs=1, criteria=0)
    second = install_progress(io.StringIO(), interval=60)
    assert current_progress() is second
    written = first_stream.getvalue()
    time.sleep(0.15)
    assert first_stream.getvalue() == written


def test_import_loads_neither_prefect_nor_rich() -> None:
    code = (
        "import sys, agent_eval.runtime.progress; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'prefect', 'rich', 'pydantic'}))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True)
    assert result.stdout.strip() == "[]"


def test_counts_taken_from_the_store_never_go_down_and_end_the_invocation_phase() -> None:
    clock = FakeClock()
    progress = Progress(io.StringIO(), interval=60, clock=clock)
    progress.start(run_id="r", ui_url=None, case_runs=4, criteria=1)
    clock.now += 8
    progress.case_runs_counted({"invoked": 1, "failed": 1})
    assert progress.snapshot().eta == pytest.approx(8.0)  # 4 s per case run, 2 to go
    progress.case_runs_counted({"invoked": 0})  # an older count read late
    progress.case_runs_counted({"invoked": 2, "cached": 1, "failed": 1})
    assert progress.status_line() == (
        "agent-eval: 4/4 case runs (2 invoked, 1 cached, 1 failed) · criteria 0/1 · 8s elapsed, ETA ?"
    )
    progress.finish()


def test_rate_limited_case_runs_are_counted_with_the_limit_at_the_last_refusal_and_reset_by_a_new_run() -> None:
    clock = FakeClock()
    progress = Progress(io.StringIO(), interval=60, clock=clock)
    progress.start(run_id="r", ui_url=None, case_runs=3, criteria=1)
    progress.case_runs_rate_limited(4, 16)
    progress.case_runs_rate_limited(2, 11)
    progress.case_run_done("invoked")
    assert progress.status_line() == (
        "agent-eval: 1/3 case runs (1 invoked, 0 cached, 0 failed, 6 rate-limited, 11 at once) · criteria 0/1 · "
        "0s elapsed, ETA 0s"
    )
    progress.start(run_id="r2", ui_url=None, case_runs=1, criteria=1)
    assert "rate-limited" not in progress.status_line()
    progress.finish()


FAILURE = "case set/c1 run 1 failed after 1 attempt(s): turn 1: ValueError: [bold]not markup[/bold]"


def test_a_failed_case_runs_line_goes_above_the_live_bar_and_is_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = FakeTTY()
    monkeypatch.setattr(sys, "stderr", terminal)
    progress = install_progress(interval=60)
    progress.start(run_id="r", ui_url=None, case_runs=2, criteria=1)
    assert wait_for(lambda: "━" in terminal.getvalue())  # the bar is drawn
    progress.case_run_done("failed", FAILURE)
    assert wait_for(lambda: "0 invoked, 0 cached, 1 failed" in terminal.getvalue())
    progress.finish()

    shown = terminal.getvalue()
    assert shown.count(FAILURE) == 1
    line_at = shown.index(f"agent-eval: {FAILURE}\n")  # the same text as without a bar: no markup, no wrapping
    assert shown[:line_at].endswith("\x1b[1A\x1b[2K")  # the bar's rows were erased first, not torn
    assert shown.index("━") < line_at < shown.rindex("━")  # drawn above the bar, which is drawn again below it
    assert shown.endswith("\x1b[2K")  # and the bar is gone at the end


def test_failure_lines_are_shown_without_a_tty_and_with_q() -> None:
    plain, quiet = io.StringIO(), io.StringIO()
    install_progress(plain, interval=60).case_run_done("failed", FAILURE)
    silenced = install_progress(quiet, enabled=False, interval=60)
    silenced.start(run_id="r", ui_url=UI, case_runs=1, criteria=0)
    silenced.case_run_done("failed", FAILURE)
    silenced.case_run_done("invoked", None)
    assert plain.getvalue() == quiet.getvalue() == f"agent-eval: {FAILURE}\n"


class Recorder(logging.Handler):
    """Keeps every record it is given."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_server")
def test_a_runs_failure_line_reaches_stderr_through_the_sink_not_through_logging(
    tmp_path: Path, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_eval.cli import main

    listener = Recorder()
    events = logging.getLogger("agent_eval.events")
    events.addHandler(listener)
    terminal = FakeTTY()
    monkeypatch.setattr(sys, "stderr", terminal)
    eval_file, _ = write_echo_set(tmp_path, ["fine", "boom"])
    try:
        code = main(
            ["run", str(eval_file), "--agent", "tests.flows.agents_for_tests:raising_agent", "--db-url", sqlite_url]
        )
    finally:
        events.removeHandler(listener)

    assert code == 1
    shown = terminal.getvalue()
    lines = re.findall(r"agent-eval: case echo_[0-9a-f]{8}/boom failed after 1 attempt\(s\): [^\n]*\n", shown)
    assert len(lines) == 1, shown
    assert "ValueError: cannot handle 'boom " in lines[0]
    before = shown[: shown.index(lines[0])]
    assert "\x1b[?25l" in before and before.endswith("\x1b[1A\x1b[2K")  # above the bar, drawn at the time
    assert listener.records == []  # the `agent_eval.events` logger is no channel any more
