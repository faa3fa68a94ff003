"""The command line behaves like a Unix tool (issue 33): a closed pipe ends a command quietly (exit 141), a run is
named by a unique prefix of its id (git's rule, at least 6 characters), and `history` fits a terminal's width,
its headers over their columns, reruns and rescores marked with their source run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import event, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from agent_eval.cli import main
from agent_eval.compare.run_history import compare, show
from agent_eval.errors import EvalInputError
from agent_eval.runtime.warm.lifecycle import log_path, start_warm_process, stop_warm_process, wait_until_ready
from agent_eval.store import Run, RunStatus, get_engine
from agent_eval.store.queries import RunNotFoundError, resolve_run_id
from tests.flows.helpers import write_echo_set
from tests.store.builders import START, eval_set, make_report, save_report
from tests.store.conftest import postgres_url  # noqa: F401  (fixture)

AGENT_EVAL = Path(sys.executable).with_name("agent-eval")
CLOSED_PIPE = 141  # 128 + SIGPIPE, as a shell reports a Unix tool that a closed pipe ended
SCORES = {"response_match_score": {"a": 0.9, "b": 0.2, "c": 0.6}, "tool_trajectory_avg_score": {"a": 1.0}}

# Two run ids that share the prefix `abc123` (the 7th character tells them apart), and a third one.
FIRST, SECOND, THIRD = "abc1234f" + "0" * 24, "abc123a0" + "1" * 24, "fedcba98" + "2" * 24


# ------------------------------------------------------------------------------------------------- closed pipe
def _command_env(url: str) -> dict[str, str]:
    """The environment of a real `agent-eval` process: no warm process (CI), the test's store."""
    return {**os.environ, "CI": "1", "AGENT_EVAL_WARM": "0", "AGENT_EVAL_DB_URL": url}


@pytest.fixture
def many_runs(tmp_path: Path) -> str:
    """A store of 600 completed runs whose `history` is ~110 KB of text (more than a pipe holds); its URL."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    rows = [
        Run(
            id=uuid.uuid4().hex,
            agent_reference="examples/home_automation/agent.py:root_agent",
            agent_fingerprint="f",
            config_hash="h",
            status=RunStatus.COMPLETED,
            started_at=START + timedelta(seconds=index),
            total=3,
            passed=2,
            failed=1,
            pass_rate=2 / 3,
            eval_set_ids=["home_automation_demo", "other_set"],
        )
        for index in range(600)
    ]
    with Session(get_engine(url)) as session, session.begin():
        session.add_all(rows)
    return url


def test_history_into_a_pipe_closed_after_its_first_line_ends_quietly_with_141(many_runs: str) -> None:
    """`agent-eval history --limit 1000 | head -1`: the reader leaves while the command still writes."""
    command = [str(AGENT_EVAL), "history", "--limit", "1000"]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_command_env(many_runs)
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        first_line = process.stdout.readline()
        process.stdout.close()  # what `head -1` does after its line
        stderr = process.stderr.read()
        code = process.wait(timeout=60)

    assert first_line.split() == [
        *(b"RUN", b"STARTED", b"(UTC)", b"STATUS", b"PASS", b"RATE", b"PASS@K", b"REGRESSION"),
        *(b"AGENT", b"EVAL", b"SETS", b"MEANS"),
    ]
    assert (code, stderr) == (CLOSED_PIPE, b"")


def test_show_into_a_pipe_closed_before_it_writes_ends_quietly_with_141(tmp_path: Path) -> None:
    """`agent-eval show RUN | true`: the reader is gone before the command writes (its output is flushed at the
    end, and a reader gone then must not print a traceback either)."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    save_report(make_report(FIRST, [eval_set()], SCORES), get_engine(url), eval_sets=[eval_set()])
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        finished = subprocess.run(
            [str(AGENT_EVAL), "show", FIRST[:6]],
            stdout=write_end,
            stderr=subprocess.PIPE,
            env=_command_env(url),
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)

    assert (finished.returncode, finished.stderr) == (CLOSED_PIPE, b"")


CLI_PREFECT_DEFAULTS = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL",
    "PREFECT_LOGGING_ROOT_LEVEL": "CRITICAL",
}
"""What the CLI sets before it asks the warm process (`_quiet_prefect`): the warm process must have them too, or the
command starts cold."""


def test_a_closed_pipe_ends_a_command_that_a_warm_child_runs_quietly_too(
    many_runs: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The warm child has taken the client's stdout: it ends with 141, which the client exits with."""
    for name in [name for name in os.environ if name.startswith("CI")]:
        monkeypatch.delenv(name)
    for name, value in {**CLI_PREFECT_DEFAULTS, "AGENT_EVAL_HOME": str(tmp_path / "home")}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AGENT_EVAL_DB_URL", many_runs)
    monkeypatch.setenv("AGENT_EVAL_WARM", "1")
    assert wait_until_ready(start_warm_process())
    try:
        with subprocess.Popen(
            [str(AGENT_EVAL), "history", "--limit", "1000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        ) as process:
            assert process.stdout is not None and process.stderr is not None
            assert process.stdout.readline().startswith(b"RUN ")
            process.stdout.close()
            stderr = process.stderr.read()
            code = process.wait(timeout=60)
    finally:
        stop_warm_process()

    assert (code, stderr) == (CLOSED_PIPE, b"")
    served = [line for line in log_path().read_text(encoding="utf-8").splitlines() if line.startswith(("run ", "cold"))]
    assert [line.split()[2] for line in served] == ["exit=141"]  # run by a warm child, not cold


def test_a_closed_pipe_is_told_apart_from_other_broken_pipes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A `BrokenPipeError` from somewhere else (a socket to a server) while the output is read is an error: exit 4."""

    def broken(*_args: object) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setitem(sys.modules["agent_eval.cli.main"].COMMANDS, "history", broken)

    code = main(["history", "--db-url", f"sqlite:///{tmp_path / 'runs.db'}"])

    assert code == 4
    assert capsys.readouterr().err.startswith("agent-eval: error: BrokenPipeError: [Errno 32] Broken pipe")


# ----------------------------------------------------------------------------------------------- run id prefix
@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def prefixed(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Engine]:
    """A store (SQLite; PostgreSQL, whose LIKE minds case) with runs FIRST, SECOND (both start with `abc123`) and
    THIRD, an hour apart; its URL and engine."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    if request.param == "postgres":
        url = str(request.getfixturevalue("postgres_url"))
    engine = get_engine(url)
    for hours, run_id in enumerate((FIRST, SECOND, THIRD)):
        report = make_report(run_id, [eval_set()], SCORES, started_at=START + timedelta(hours=hours))
        save_report(report, engine, eval_sets=[eval_set()])
    return url, engine


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("prefix", ["fedcba", "FEDCBA98", "fedcba9822", THIRD])
def test_a_unique_prefix_names_the_run_in_show_and_compare(
    prefix: str, prefixed: tuple[str, Engine], capsys: pytest.CaptureFixture[str]
) -> None:
    url = prefixed[0]
    whole = _run(capsys, "show", THIRD, "--db-url", url)

    assert _run(capsys, "show", prefix, "--db-url", url) == whole
    assert whole[0] == 0 and f"agent-eval run {THIRD}" in whole[1]
    code, out, err = _run(capsys, "compare", "abc1234", prefix, "--db-url", url)
    assert (code, err) == (0, "")
    assert out.splitlines()[:2] == [
        f"A: {FIRST}  2026-12-02 12:00:00  pkg.mod:agent  completed",
        f"B: {THIRD}  2026-12-02 14:00:00  pkg.mod:agent  completed",
    ]
    assert (show(prefix, db_url=url).run_id, compare("abc123a", prefix, db_url=url).run_a.id) == (THIRD, SECOND)


AMBIGUOUS = "run id prefix 'abc123' is ambiguous: abc1234f..., abc123a0...; give more of the run id"
TOO_SHORT = "run id prefix 'abc12' is too short: give at least 6 characters of a run id from `agent-eval history`"


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["show", "abc123"], AMBIGUOUS),
        (["compare", "abc123", "fedcba"], AMBIGUOUS),
        (["rerun", "abc123", "--only-failed"], AMBIGUOUS),
        (["rescore", "abc123"], AMBIGUOUS),
        (["report", "abc123", "-o", "OUT"], AMBIGUOUS),
        (["run", "EVAL", "--baseline", "abc123"], AMBIGUOUS),
        (["show", "abc12"], TOO_SHORT),
        (["rerun", "abc12"], TOO_SHORT),
        (["run", "EVAL", "--baseline", "abc12"], TOO_SHORT),
        (["show", "0123456"], "no run '0123456' in URL; `agent-eval history` lists the runs"),
        (["compare", "fedcba", "abcdef"], "no run 'abcdef' in URL; `agent-eval history` lists the runs"),
        (["rescore", "0123456"], "no run '0123456' in URL; `agent-eval history` lists the runs"),
        (["run", "EVAL", "--baseline", "0123456"], "no run '0123456' in URL; `agent-eval history` lists the runs"),
    ],
)
def test_an_ambiguous_too_short_or_unknown_prefix_exits_2_with_one_line(
    argv: list[str], error: str, prefixed: tuple[str, Engine], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = prefixed[0]
    eval_file, _ = write_echo_set(tmp_path, ["one"])
    places = {"EVAL": str(eval_file), "OUT": str(tmp_path / "never.html")}
    arguments = [places.get(part, part) for part in argv]

    code, out, err = _run(capsys, *arguments, "--db-url", url)

    assert (code, out) == (2, "")
    assert err.splitlines() == [f"agent-eval: error: {error.replace('URL', url)}"]
    assert not (tmp_path / "never.html").exists()
    with Session(prefixed[1]) as session:  # nothing ran: still the three runs
        assert sorted(session.exec(select(Run.id)).all()) == sorted([FIRST, SECOND, THIRD])


def test_resolve_run_id_asks_the_store_for_two_rows_at_most(prefixed: tuple[str, Engine]) -> None:
    engine = prefixed[1]
    statements: list[str] = []

    def remember(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        statements.append(statement)

    event.listen(engine, "before_cursor_execute", remember)
    try:
        assert resolve_run_id("fedcba", engine) == THIRD
        with pytest.raises(EvalInputError, match="is ambiguous"):
            resolve_run_id("abc123", engine)
    finally:
        event.remove(engine, "before_cursor_execute", remember)
    prefix_queries = [s for s in statements if " LIKE " in s.upper()]
    assert len(prefix_queries) == 2
    assert all("LIMIT" in s.upper() for s in prefix_queries)
    assert resolve_run_id(SECOND, engine) == SECOND  # a whole id: no prefix query needed
    with pytest.raises(RunNotFoundError):
        resolve_run_id("not-hex-at-all", engine)


# ---------------------------------------------------------------------------------------------------- history
LONG_AGENT = "examples/home_automation/agent.py:root_agent"
MEANS = {name: {"a": 0.9, "b": 0.5, "c": 0.7} for name in ("response_match_score", "tool_trajectory_avg_score")}


@pytest.fixture
def lineage(tmp_path: Path) -> str:
    """A store of a run (FIRST, 3 cases), a rerun of it (SECOND), a rerun of its case `c` only (THIRD), and a
    rescore of it: long agent reference, long metric names. Returns the URL."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    engine = get_engine(url)
    full, only_c = eval_set(), eval_set(eval_ids=("c",))
    rescore_id = "0123abcd" + "3" * 24
    runs = [(FIRST, full, None, []), (SECOND, full, FIRST, ["rerun"]), (THIRD, only_c, FIRST, ["rerun"])]
    runs.append((rescore_id, full, FIRST, ["rescore"]))
    for hours, (run_id, eval_sets, source, tags) in enumerate(runs):
        report = make_report(run_id, [eval_sets], MEANS, started_at=START + timedelta(hours=hours), agent=LONG_AGENT)
        save_report(report, engine, eval_sets=[eval_sets], tags=tags)
        with Session(engine) as session, session.begin():
            session.execute(update(Run).where(col(Run.id) == run_id).values(source_run_id=source))
    return url


def _on_a_terminal(monkeypatch: pytest.MonkeyPatch, columns: int) -> None:
    """stdout (pytest's capture) a terminal of `columns` characters, as `shutil.get_terminal_size` reads it."""
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.setenv("COLUMNS", str(columns))


def _table(out: str, url: str) -> list[str]:
    """The lines of a history table fitted to a terminal, after checking its last line names the store read."""
    *table, caption = out.splitlines()
    assert caption == f"(runs stored in {url})"
    return table


def _starts(line: str, texts: list[str]) -> list[int]:
    """Where each text starts in the line, each searched after the previous one."""
    starts, position = [], 0
    for text in texts:
        position = line.index(text, position)
        starts.append(position)
        position += len(text)
    return starts


def _right_aligned(starts: list[int], index: int, title: str, cell: str) -> list[int]:
    """The header's starts with column `index` (right-aligned) moved to where a cell of its width starts."""
    return [*starts[:index], starts[index] + len(title) - len(cell), *starts[index + 1 :]]


def test_history_on_an_80_column_terminal_fits_it_with_headers_over_their_columns(
    lineage: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _on_a_terminal(monkeypatch, 80)

    code, out, _ = _run(capsys, "history", "--db-url", lineage)

    lines = _table(out, lineage)
    assert code == 0
    assert [len(line) <= 80 for line in lines] == [True] * 5
    header, rows = lines[0], lines[1:]
    # by priority: run, status, pass rate, start, regression; the source (24 wide) does not fit, the eval sets do
    titles = ["RUN", "STARTED (UTC)", "STATUS", "PASS RATE", "REGRESSION", "EVAL SETS"]
    assert re.split(r"\s{2,}", header.strip()) == titles
    assert [row.split()[0] for row in rows] == ["0123abcd", THIRD[:8], SECOND[:8], FIRST[:8]]
    cells = [THIRD[:8], "2026-12-02 14:00", "completed", "100.0% (1/1)", "-", "set"]
    assert _starts(rows[1], cells) == _right_aligned(_starts(header, titles), 3, "PASS RATE", cells[3])
    assert rows[1] == "  ".join([*cells[:4], "-".ljust(len("REGRESSION")), "set"])


def test_history_on_a_100_column_terminal_marks_reruns_and_rescores_with_their_source(
    lineage: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _on_a_terminal(monkeypatch, 100)

    code, out, _ = _run(capsys, "history", "--db-url", lineage)

    lines = _table(out, lineage)
    assert code == 0
    assert max(len(line) for line in lines) <= 100
    titles = ["RUN", "STARTED (UTC)", "STATUS", "PASS RATE", "REGRESSION", "SOURCE", "EVAL SETS"]
    assert re.split(r"\s{2,}", lines[0].strip()) == titles
    sources = [line[_starts(lines[0], titles)[5] :].split("  ")[0] for line in lines[1:]]
    assert sources == ["rescore of abc1234f", "subset rerun of abc1234f", "rerun of abc1234f", "-"]


def test_history_on_a_wide_terminal_wraps_the_means_under_their_header(
    lineage: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _on_a_terminal(monkeypatch, 150)

    code, out, _ = _run(capsys, "history", "--db-url", lineage)

    lines = _table(out, lineage)
    assert code == 0
    assert max(len(line) for line in lines) <= 150
    assert lines[0].split() == [
        *("RUN", "STARTED", "(UTC)", "STATUS", "PASS", "RATE", "PASS@K", "REGRESSION", "SOURCE", "EVAL", "SETS"),
        "MEANS",
    ]  # the agent (44 wide) comes after the means in priority: it goes, pass@k (narrow) stays
    means_at = lines[0].index("MEANS")
    assert len(lines) == 1 + 2 * 4  # the means of each run wrap onto a second line
    assert [line[means_at:] for line in lines[1:3]] == [
        "response_match_score=0.700",
        "tool_trajectory_avg_score=0.700",
    ]
    assert lines[2][:means_at].strip() == ""


def test_history_with_wide_or_into_a_pipe_prints_every_column_and_whole_ids(
    lineage: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    piped = _run(capsys, "history", "--db-url", lineage)
    _on_a_terminal(monkeypatch, 80)
    wide = _run(capsys, "history", "--wide", "--db-url", lineage)

    assert piped == wide
    lines = wide[1].splitlines()
    assert len(lines) == 5
    header, third = lines[0], lines[2]
    titles = ["RUN", "STARTED (UTC)", "STATUS", "PASS RATE", "PASS@K", "REGRESSION", "SOURCE", "AGENT", "EVAL SETS"]
    titles.append("MEANS")
    cells = [THIRD, "2026-12-02 14:00:00", "completed", "100.0% (1/1)", "-", "-", f"subset rerun of {FIRST}"]
    cells += [LONG_AGENT, "set", "response_match_score=0.700 tool_trajectory_avg_score=0.700"]
    assert _starts(third, cells) == _right_aligned(_starts(header, titles), 3, "PASS RATE", cells[3])
    assert third.endswith(cells[-1])
    assert len(third) > 200
