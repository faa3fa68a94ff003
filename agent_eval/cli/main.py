"""The `agent-eval` command line; each command calls the public API only.

Internal: the interface is the `agent-eval` command; this module's names may change between releases.

Commands: `run` (evaluate and store a run), `rerun RUN_ID` (its cases again), `rescore RUN_ID` (its
invocations with a new config), `history` (stored runs, newest first), `show RUN_ID` (one run's summary and
failures), `compare RUN_A RUN_B` (metric means and changed cases), `report RUN_ID -o FILE.html`, `server
start|stop|status` (the local Prefect server that runs reuse, `agent_eval.runtime.server`), `label RUN_ID`,
`labels import|export FILE` and `judges` (human labels of judged items and each judge's agreement with them,
`agent_eval.cli.judges`). A RUN_ID (and
`run --baseline`) is a whole run id or a unique prefix of one, at least 6 characters, as git takes commits
(`agent_eval.store.queries.resolve_run_id`). `history` fits its table into the terminal's width when stdout is a
terminal, and prints every column with whole ids to a pipe or file, or with `--wide`.

Exit codes (one table for every command, `agent_eval.errors`): 0 every case passed (or the command did what
it was asked), 1 a case failed or a criterion scored no case run, 2 usage / input / config error (a bad file,
option, agent reference, store URL or run id: one line, nothing run or written), 3 a regression against the
baseline run, 4 infrastructure: the store, the agent's server or the judge could not be reached (an outage
run is stored `errored`), 130 stopped by SIGINT / SIGTERM (the run is stored `cancelled`), 141 the reader of
the output went away (`agent-eval history | head -1`): the command ends quietly, nothing on stderr, as a Unix
tool ended by SIGPIPE does (128 + 13; a run is stored before its summary is printed).

Prefect's own console output is silenced unless `--verbose`: a failed case run is one line on stderr (its
traceback is kept in the store; `-v` prints it). With no `PREFECT_API_URL` the flow runs on a local Prefect
server started once and reused by later runs, or in CI on Prefect's temporary server, whose own shutdown
chatter is silenced too (set the variables yourself to override).
"""

from __future__ import annotations

import argparse
import json
import os
import select
import shutil
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from agent_eval.cli.judges import JUDGE_COMMANDS, with_judge_agreement
from agent_eval.cli.parser import build_parser
from agent_eval.cli.recorded import import_sessions_command, recorded_source
from agent_eval.cli.server import keep_warm, server_command
from agent_eval.errors import (
    EXIT_BAD_INPUT,
    EXIT_BUDGET,
    EXIT_FAILED,
    EXIT_INFRASTRUCTURE,
    EXIT_OK,
    EXIT_REGRESSION,
    EvalInputError,
    InfrastructureError,
)
from agent_eval.settings import settings

if TYPE_CHECKING:
    from agent_eval.results.model import RunReport

__all__ = ["main", "serve_warm"]


def _quiet_prefect(verbose: bool) -> None:
    """Defaults for Prefect's settings, set before Prefect is imported; the user's own values win."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    if not verbose:
        # Failed case runs are reported one line each by us; Prefect's own ERROR logs (a traceback each) stay
        # in Prefect's UI and the store.
        os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "CRITICAL")
    if not verbose and not os.environ.get("PREFECT_API_URL"):
        # The temporary server inherits these; its shutdown logs tracebacks of cancelled internal writes
        # (Prefect 3.9), some through the root logger, which say nothing about the evaluation.
        os.environ.setdefault("PREFECT_SERVER_LOGGING_LEVEL", "CRITICAL")
        os.environ.setdefault("PREFECT_LOGGING_ROOT_LEVEL", "CRITICAL")


def _check_output_dir(folder: str) -> None:
    """Fail fast, as bad input and before anything runs, when the output folder could not be created; nothing
    is created until the run has finished."""
    path = Path(folder).absolute()
    if path.exists() and not path.is_dir():
        raise EvalInputError("the output folder is a file", file=folder)
    existing = next(parent for parent in (path, *path.parents) if parent.exists())
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise EvalInputError(f"cannot create the output folder: {existing} is not a writable folder", file=folder)


def run_command(args: argparse.Namespace) -> int:
    """`agent-eval run`: evaluate, print the summary, write the outputs, exit 1 when a case failed; with
    `--estimate`, print what the run would cost and run nothing."""
    from agent_eval.api import evaluate

    if args.estimate:
        return _estimate_command(args)
    recorded = recorded_source(args, args.paths)
    report = evaluate(
        args.reference if recorded is not None else args.paths,
        agent=args.agent,
        config=args.config,
        format="auto" if recorded is not None else args.format,
        recorded=recorded,
        num_runs=args.num_runs,
        max_concurrency=args.max_concurrency,
        db_url=args.db_url,
        refresh_cache=args.refresh_cache,
        reuse_max_age_hours=args.reuse_answers,
        turn_timeout_seconds=args.turn_timeout,
        tags=args.tag,
        baseline_run_id=args.baseline,
        shards=args.shards,
        concurrency_limits=args.concurrency_limit,
        dask_address=args.dask,
        budget_usd=args.budget,
        max_tokens=args.max_tokens,
    )
    return _finish(report, args)


def _estimate_command(args: argparse.Namespace) -> int:
    """`agent-eval run ... --estimate`: the projected tokens and cost, from the store's last comparable run."""
    from agent_eval.api import estimate
    from agent_eval.render.estimate import estimate_lines

    if recorded_source(args, args.paths) is not None:
        raise EvalInputError("recorded traffic calls no agent: there is nothing to estimate", field="--estimate")
    found = estimate(
        args.paths, agent=args.agent, config=args.config, format=args.format, num_runs=args.num_runs, db_url=args.db_url
    )
    print("\n".join(estimate_lines(found)))
    return EXIT_OK


def rerun_command(args: argparse.Namespace) -> int:
    """`agent-eval rerun`: a stored run's cases again; prints and exits like `run`."""
    from agent_eval.api import rerun

    report = rerun(
        args.run_id,
        only_failed=args.only_failed,
        refresh=args.refresh,
        db_url=args.db_url,
        budget_usd=args.budget,
        max_tokens=args.max_tokens,
    )
    return _finish(report, args)


def rescore_command(args: argparse.Namespace) -> int:
    """`agent-eval rescore`: a stored run's invocations scored with a new config; prints and exits like `run`."""
    from agent_eval.api import rescore

    return _finish(rescore(args.run_id, args.config, db_url=args.db_url), args)


def report_command(args: argparse.Namespace) -> int:
    """`agent-eval report RUN_ID -o report.html`: the stored run's HTML report with its eval sets' trend."""
    from agent_eval.compare.run_history import show

    _write_report_files(with_judge_agreement(show(args.run_id, db_url=args.db_url), args.db_url), args)
    return EXIT_OK


def _write_report_files(report: RunReport, args: argparse.Namespace) -> None:
    """`--html` (with the trend of the run's eval sets from the store) and `--junit`, as both `report` and the
    evaluating commands write them, then one line on stdout: `Wrote /abs/report.html and /abs/junit.xml`."""
    from agent_eval.compare.run_history import history_points
    from agent_eval.render import write_html, write_junit

    written: list[Path] = []
    if args.html:
        written.append(write_html(report, args.html, history_points(report, db_url=args.db_url)))
    if args.junit:
        written.append(write_junit(report, args.junit))
    if written:
        print("Wrote " + " and ".join(str(path.absolute()) for path in written))


def _finish(report: RunReport, args: argparse.Namespace) -> int:
    """Print the summary (and the comparison with the baseline), write the asked outputs, and exit: 4 for an
    outage, 5 for a run its budget stopped, 3 on a regression, 1 when a case failed or a criterion scored nothing,
    0 otherwise."""
    from agent_eval.render import format_summary, write_outputs

    report = with_judge_agreement(report, args.db_url)  # as `show` and `report` give it
    print(format_summary(report))  # its last lines are the regression check against the baseline
    print(f"Stored in {_store_shown(args.db_url)}")  # where `history`, `show` and `report` find this run
    if args.verbose:
        _print_tracebacks(report)
    if args.output_dir or args.junit or args.html:
        whole = _with_invocations(report, args.db_url)
        if args.output_dir:
            print(f"Wrote {len(write_outputs(whole, args.output_dir))} files to {args.output_dir}")
        _write_report_files(whole, args)
    return _exit_code(report)


def _with_invocations(report: RunReport, db_url: str | None) -> RunReport:
    """The report as the files need it: a run evaluated in parts (`RunReport.parts`) read back from the store,
    which holds the invocations its report leaves out."""
    if report.parts == 1:
        return report
    from agent_eval.compare.run_history import show

    return show(report.run_id, db_url=db_url).model_copy(update={"notes": report.notes})


def _exit_code(report: RunReport) -> int:
    from agent_eval.render.console import unscored_criteria_lines

    if report.errored:
        print(f"agent-eval: error: {report.error}", file=sys.stderr)
        return EXIT_INFRASTRUCTURE
    if report.stopped:
        print(f"agent-eval: stopped: {report.error}", file=sys.stderr)
        return EXIT_BUDGET
    if report.regressed:
        return EXIT_REGRESSION
    unscored = unscored_criteria_lines(report)
    for line in unscored:
        print(f"agent-eval: {line}", file=sys.stderr)
    return EXIT_OK if report.all_passed() and not unscored else EXIT_FAILED


def _print_tracebacks(report: RunReport) -> None:
    """`-v`: the stored traceback of every case run whose agent failed."""
    for case in report.cases:
        if case.agent_run.error_traceback:
            print(f"--- {case.eval_set_id}/{case.eval_id} run {case.run_index}", file=sys.stderr)
            print(case.agent_run.error_traceback.rstrip(), file=sys.stderr)


def history_command(args: argparse.Namespace) -> int:
    """`agent-eval history`: one line (or JSON object) per stored run, newest first, fitted into the terminal's
    width (`_history_width`)."""
    from agent_eval.compare.run_history import format_history, history, history_json

    frame = history(eval_set=args.eval_set, agent=args.agent, limit=args.limit, db_url=args.db_url)
    width = None if args.json else _history_width(args.wide)
    print(history_json(frame) if args.json else format_history(frame, width))
    if width is not None:  # a table fitted to a person's terminal says which store it read
        print(f"(runs stored in {_store_shown(args.db_url)})")
    return EXIT_OK


def _store_shown(db_url: str | None) -> str:
    """The store a command reads or writes (`db_url`, else the default one), its password hidden."""
    from agent_eval.store.engine import default_db_url, shown_url

    return shown_url(db_url or default_db_url())


def _history_width(wide: bool) -> int | None:
    """The width `history` fits its table into: the terminal's (`shutil.get_terminal_size`, which `$COLUMNS`
    overrides) when stdout is a terminal; None (every column, whole ids) with `--wide` or when stdout is not a
    terminal, so that a pipe, `grep` or a file gets everything."""
    if wide or not sys.stdout.isatty():
        return None
    return shutil.get_terminal_size().columns


def show_command(args: argparse.Namespace) -> int:
    """`agent-eval show`: the stored run's summary, as `run` printed it (its report JSON with `--json`)."""
    from agent_eval.compare.run_history import run_info, show
    from agent_eval.render import format_summary

    report = with_judge_agreement(show(args.run_id, db_url=args.db_url), args.db_url)
    if args.json:
        print(report.to_json())
        return EXIT_OK
    status = run_info(report.run_id, db_url=args.db_url).status
    if status != "completed":
        print(f"Status: {status} ({len(report.cases)} case runs recorded)")
    print(format_summary(report))
    return EXIT_OK


def compare_command(args: argparse.Namespace) -> int:
    """`agent-eval compare`: per-metric means of both runs and the shared case runs that changed."""
    from agent_eval.compare.run_history import compare, format_comparison

    comparison = compare(args.run_a, args.run_b, db_url=args.db_url)
    print(
        json.dumps(comparison.to_dict(), indent=2, ensure_ascii=False) if args.json else format_comparison(comparison)
    )
    return EXIT_OK


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": run_command,
    "history": history_command,
    "show": show_command,
    "compare": compare_command,
    "rerun": rerun_command,
    "rescore": rescore_command,
    "report": report_command,
    "server": server_command,
    "import-sessions": import_sessions_command,
    **JUDGE_COMMANDS,
}


STORE_COMMANDS = frozenset(COMMANDS) - {"server", "import-sessions"}
"""Every command reads or writes the store: it is checked (and abandoned runs ended) before anything else."""
EVALUATING_COMMANDS = frozenset({"run", "rerun", "rescore"})
WARM_COMMANDS = STORE_COMMANDS - {"label"}
"""The commands the warm process may run: not `label`, a server that lives until Ctrl-C."""


EXIT_CLOSED_PIPE = 128 + signal.SIGPIPE
"""141: the reader of the output went away (`agent-eval history | head -1`); what a Unix tool's shell reports
when SIGPIPE ends it, so that `set -o pipefail` sees the output was cut short."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `agent-eval` console script; returns the exit code (see the module docstring).

    A reader of stdout or stderr that goes away (`| head`) ends the command quietly, with `EXIT_CLOSED_PIPE`:
    that stream is pointed at /dev/null (Python's recipe for `BrokenPipeError`), so nothing written later, by
    the interpreter's exit or a warm child's (`agent_eval.runtime.warm`), fails either. stdout is flushed
    here, not at the interpreter's exit, for that reason.
    """
    try:
        try:
            return _command(argv)
        finally:
            sys.stdout.flush()
    except BrokenPipeError:
        gone = _readers_gone()
        if not gone:
            raise  # a pipe or socket other than the output (with -v: its traceback)
        devnull = os.open(os.devnull, os.O_WRONLY)
        for fd in gone:
            os.dup2(devnull, fd)
        os.close(devnull)
        return EXIT_CLOSED_PIPE


def _readers_gone() -> list[int]:
    """The file descriptors among stdout and stderr that are pipes (or terminals, sockets) nobody reads any more;
    without `poll` (Windows), stdout."""
    if not hasattr(select, "poll"):
        return [1]
    poller = select.poll()
    for fd in (1, 2):  # a warm child's are its client's (`agent_eval.runtime.warm`)
        poller.register(fd, select.POLLOUT)
    return [fd for fd, events in poller.poll(0) if events & (select.POLLERR | select.POLLHUP)]


def _command(argv: Sequence[str] | None) -> int:
    """`main` until the output is flushed: parse, check, run the command here or in the warm process."""
    args = build_parser().parse_args(argv)
    verbose = getattr(args, "verbose", False)
    _quiet_prefect(verbose)
    try:
        _check_arguments(args)
    except EvalInputError as error:
        return _error_line(error.one_line(), EXIT_BAD_INPUT)
    if args.command in WARM_COMMANDS and (code := _in_warm_process(argv, verbose)) is not None:
        return code
    if _evaluates(args):
        from agent_eval.cli.shutdown import install_signal_handlers

        install_signal_handlers()
        _show_progress(args)
    try:
        return _checked_command(args, verbose)
    except EvalInputError as error:  # and RunNotFoundError: an unknown run id
        return _error_line(error.one_line(), EXIT_BAD_INPUT)
    except InfrastructureError as error:
        return _error_line(str(error), EXIT_INFRASTRUCTURE)
    except Exception as error:
        if verbose or (isinstance(error, BrokenPipeError) and _readers_gone()):
            raise  # a closed output ends the command quietly (`main`)
        return _error_line(
            f"{type(error).__name__}: {error} (run again with -v for the traceback)", EXIT_INFRASTRUCTURE
        )
    finally:
        from agent_eval.runtime.progress import uninstall_progress

        uninstall_progress()


def _in_warm_process(argv: Sequence[str] | None, verbose: bool) -> int | None:
    """The command's exit code when the warm process ran it (`agent_eval.runtime.warm`), else None: run it here
    (with `verbose`, one line says why when the warm process answered so)."""
    from agent_eval.runtime.warm import run_in_warm_process

    return run_in_warm_process(sys.argv[1:] if argv is None else argv, verbose=verbose)


def serve_warm() -> None:
    """The warm process's entry point (`agent_eval.runtime.warm`): serve runs of this command line until stopped."""
    from agent_eval.runtime.warm import serve

    serve(main)


def _show_progress(args: argparse.Namespace) -> None:
    """What an evaluating command shows on stderr as it runs (`agent_eval.runtime.progress`): the progress and one
    line per failed case run; with `-q` only those lines, with `-v` no bar, which Prefect's log lines would tear
    (status lines instead)."""
    from agent_eval.runtime.progress import install_progress

    install_progress(enabled=not args.quiet, judge_stats=_judge_totals, plain=args.verbose)


def _judge_totals() -> dict[str, int]:
    from agent_eval.metrics.judged.policy import judge_totals

    return judge_totals().as_dict()


def _checked_command(args: argparse.Namespace, verbose: bool) -> int:
    """The command after its checks: every `AGENT_EVAL_*` setting (a bad one: one line naming it), then the store,
    opened once for the whole command (`one_store_check`: the API's own check does not open it again), and the
    Prefect server an evaluating command needs, started now so that its start overlaps loading the inputs."""
    settings()
    if args.command not in STORE_COMMANDS:
        return _run_command(args)
    from agent_eval.store.engine import one_store_check

    with one_store_check():
        _open_store(args.db_url)
        if _evaluates(args):
            _start_prefect_server()
        code = _run_command(args)
    if _evaluates(args) and not verbose:
        keep_warm()
    return code


def _evaluates(args: argparse.Namespace) -> bool:
    """Whether the command runs a flow (`--estimate` runs none: it reads the store only)."""
    return args.command in EVALUATING_COMMANDS and not getattr(args, "estimate", False)


def _run_command(args: argparse.Namespace) -> int:
    """The command; a signal that reaches it as an exception (Prefect's flow engine raises `TerminationSignal`
    from its own SIGTERM handler while a flow runs) ends the process as our own handler does."""
    try:
        return COMMANDS[args.command](args)
    except KeyboardInterrupt:
        _stop_for_signal(signal.SIGINT)
    except BaseException as error:
        signum = getattr(error, "signal", None)
        if type(error).__name__ == "TerminationSignal" and isinstance(signum, int):
            _stop_for_signal(signum)
        raise


def _check_arguments(args: argparse.Namespace) -> None:
    """What can be checked before anything heavy is imported: the eval paths exist, the output folder can be
    created (a typo answers in a fraction of a second)."""
    if args.command in ("run", "import-sessions"):
        from agent_eval.io.files import check_paths_exist

        if not args.paths and not args.sessions_db:
            raise EvalInputError("give eval files or folders, recorded traffic, or --sessions-db", field="paths")
        check_paths_exist([*args.paths, *getattr(args, "reference", [])])
    if getattr(args, "output_dir", None):
        _check_output_dir(args.output_dir)


def _start_prefect_server() -> None:
    """Start the local Prefect server now, when the run will use it (`agent_eval.runtime.server`) and none runs, so its
    start overlaps loading the inputs and importing the agent; the flow waits for it."""
    from agent_eval.runtime import server

    if server.server_mode() == "local":
        running, started = server.start_local_server()
        if started:
            server.announce_started(running)


def _stop_for_signal(signum: int) -> NoReturn:
    from agent_eval.cli.shutdown import stop_for_signal

    stop_for_signal(signum)


def _open_store(db_url: str | None) -> None:
    """Check the store first (one line and exit 2 or 4 when it cannot be used), then end the runs whose
    process died (`mark_abandoned_runs`), so that no run stays `running` in history."""
    from agent_eval.store.engine import check_store

    engine = check_store(db_url)
    if engine is not None:
        from agent_eval.store.repository import mark_abandoned_runs

        mark_abandoned_runs(engine)


def _error_line(line: str, code: int) -> int:
    print(f"agent-eval: error: {line}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
