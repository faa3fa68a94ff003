"""The `agent-eval` command line's arguments: every command, option and help text (`build_parser`).

Internal: the interface is the `agent-eval` command; this module's names may change between releases. It imports
nothing heavy: `agent-eval --help` and a bad option answer before Prefect is imported."""

from __future__ import annotations

import argparse
from typing import Any

from agent_eval.agents.references import AGENT_REFERENCE_FORMS
from agent_eval.cli.judges import add_judges_parsers
from agent_eval.cli.recorded import RECORDED_FORMAT_CHOICES, add_import_sessions_parser, add_recorded_arguments
from agent_eval.cli.server import add_server_parser
from agent_eval.cli.values import age_hours, positive, positive_float
from agent_eval.render.formats import output_dir_help
from agent_eval.settings import (
    DASK_ADDRESS_ENV,
    DEFAULT_MAX_CONCURRENCY,
    DEFAULT_TURN_TIMEOUT_SECONDS,
    STORE_RULE,
    default_store_shown,
)

__all__ = ["build_parser"]


def _db_url_help() -> str:
    """The `--db-url` help: the one rule for the default store, and what it names here."""
    return f"store URL (default: {STORE_RULE}; here: {default_store_shown()})"


_RUN_ID_HELP = "a run id from `agent-eval history`, or a unique prefix of it (at least 6 characters)"


def build_parser() -> argparse.ArgumentParser:
    """`agent-eval` and its commands, with every option's help."""
    parser = argparse.ArgumentParser(prog="agent-eval", description="Evaluate AI agents with Prefect.")
    commands = parser.add_subparsers(dest="command", required=True)
    _add_run_parser(commands)
    _add_history_parsers(commands)
    _add_stored_run_parsers(commands)
    add_judges_parsers(commands, _db_url_help())
    add_server_parser(commands)
    add_import_sessions_parser(commands)
    return parser


def _add_run_parser(commands: Any) -> None:
    """`run`: evaluate an agent on eval files (or score recorded traffic)."""
    run = commands.add_parser("run", help="evaluate an agent on eval files and store the run")
    _add_run_inputs(run)
    _add_run_execution(run)
    _add_run_scale(run)
    add_recorded_arguments(run)
    _add_output_arguments(run)
    _add_quiet_argument(run)
    run.add_argument("-v", "--verbose", action="store_true", help="show Prefect's flow and task logs")


def _add_run_inputs(run: argparse.ArgumentParser) -> None:
    """What is evaluated: the files, the agent, the format, the config, the store and the baseline."""
    run.add_argument(
        "paths",
        nargs="*",
        help="eval files or folders (FILE:case1,case2 selects cases); or recorded traffic: OTLP span files "
        "or folders, ADK session JSON",
    )
    run.add_argument("--agent", help="the agent, one of: " + "; ".join(AGENT_REFERENCE_FORMS.splitlines()))
    run.add_argument(
        "--format",
        choices=["auto", "adk", "vertex", *RECORDED_FORMAT_CHOICES],
        default="auto",
        help="input format (default: detected from each file's content); otel and adk-session score recorded "
        "traffic as it is, with no agent call",
    )
    run.add_argument("--config", help="ADK test_config.json (default: the one beside the eval files)")
    run.add_argument("--db-url", help=_db_url_help())
    run.add_argument("--tag", action="append", default=[], help="a label stored with the run (repeatable)")
    run.add_argument(
        "--baseline", help="compare with this run id or unique prefix of one (default: the latest comparable run)"
    )


def _add_run_execution(run: argparse.ArgumentParser) -> None:
    """How the agent is invoked: runs per case, concurrency, answers reused, turn timeout."""
    run.add_argument("--num-runs", type=positive, default=1, help="runs per case (default 1)")
    run.add_argument(
        "--max-concurrency",
        type=positive,
        default=DEFAULT_MAX_CONCURRENCY,
        help=f"agent invocations at once (default {DEFAULT_MAX_CONCURRENCY})",
    )
    run.add_argument(
        "--reuse-answers",
        metavar="MAX_AGE",
        nargs="?",
        const="24h",
        type=age_hours,
        help="reuse the agent's answers from earlier evaluations no older than MAX_AGE (e.g. 30m, 12h, 7d; "
        "default 24h when given without a value). Without it every evaluation invokes the agent.",
    )
    run.add_argument("--refresh-cache", action="store_true", help="invoke the agent even when cached")
    _add_budget_arguments(run)
    run.add_argument(
        "--estimate",
        action="store_true",
        help="print what the run would cost (tokens and dollars, from the last comparable run) and run nothing",
    )
    run.add_argument(
        "--turn-timeout",
        type=float,
        default=DEFAULT_TURN_TIMEOUT_SECONDS,
        help=f"seconds one agent turn may take before it is interrupted (default {DEFAULT_TURN_TIMEOUT_SECONDS:g})",
    )


def _add_budget_arguments(command: argparse.ArgumentParser) -> None:
    """`--budget USD` and `--max-tokens N`: the most the run may spend (default: the config's `budget`)."""
    command.add_argument(
        "--budget",
        type=positive_float,
        metavar="USD",
        help="the most the run may spend on agent and judge calls, in US dollars; once reached no new call starts "
        "and the run ends stopped (exit 5)",
    )
    command.add_argument(
        "--max-tokens",
        type=positive,
        metavar="N",
        help="the most tokens (input, output, thinking) the run may spend on agent and judge calls",
    )


def _add_run_scale(run: argparse.ArgumentParser) -> None:
    """Beyond one process: shards on a work pool, global concurrency limits, a Dask cluster."""
    run.add_argument(
        "--shards",
        type=positive,
        default=1,
        help="split the invocations into N flow runs of the shard deployment, run by the workers of its pool "
        "(deployments/README.md; default 1: in this process)",
    )
    run.add_argument(
        "--concurrency-limit",
        action="append",
        default=[],
        metavar="NAME",
        help="a Prefect global concurrency limit every agent invocation holds a slot of (repeatable)",
    )
    run.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="invoke the agent on the workers of the Dask cluster whose scheduler listens at ADDRESS "
        f"(tcp://HOST:8786; needs agent-eval[dask]; default ${DASK_ADDRESS_ENV}, unset: in this process)",
    )


def _add_quiet_argument(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "-q", "--quiet", action="store_true", help="no live progress on stderr (the summary is still printed)"
    )


def _add_output_arguments(command: argparse.ArgumentParser) -> None:
    """Where a run's report is also written: a folder of every format, JUnit XML, HTML."""
    command.add_argument("--output-dir", help=output_dir_help())  # the registry of agent_eval.render.formats
    command.add_argument("--junit", help="also write JUnit XML (one test case per case run) to this file")
    command.add_argument("--html", help="also write the self-contained HTML report to this file")


def _add_stored_run_parsers(commands: Any) -> None:
    """`rerun`, `rescore` and `report`: act on a stored run."""
    rerun = commands.add_parser("rerun", help="evaluate a stored run's cases again (same agent and config)")
    rerun.add_argument("run_id", help=_RUN_ID_HELP)
    rerun.add_argument("--only-failed", action="store_true", help="only the cases that failed or errored")
    rerun.add_argument("--refresh", action="store_true", help="invoke the agent even when cached")
    _add_budget_arguments(rerun)
    rescore = commands.add_parser("rescore", help="score a stored run's invocations with a new config")
    rescore.add_argument("run_id", help=_RUN_ID_HELP)
    rescore.add_argument("--config", help="ADK test_config.json (default: the run's own config)")
    report = commands.add_parser("report", help="write a stored run's HTML report (and JUnit XML)")
    report.add_argument("run_id", help=_RUN_ID_HELP)
    report.add_argument("-o", "--output", dest="html", required=True, help="the HTML file to write")
    report.add_argument("--junit", help="also write JUnit XML to this file")
    for command in (rerun, rescore):
        _add_output_arguments(command)
        _add_quiet_argument(command)
    for command in (rerun, rescore, report):
        command.add_argument("--db-url", help=_db_url_help())
    for command in (rerun, rescore):  # `report` runs no flow: it has no Prefect logs to show
        command.add_argument("-v", "--verbose", action="store_true", help="show Prefect's flow and task logs")


def _add_history_parsers(commands: Any) -> None:
    """`history`, `show` and `compare`: read the store, each with `--db-url` and `--json`."""
    history = commands.add_parser("history", help="stored runs, newest first, with pass rate and metric means")
    history.add_argument("--eval-set", help="only runs that evaluated this eval set id")
    history.add_argument("--agent", help="only runs of this agent reference")
    history.add_argument("--limit", type=positive, default=20, help="at most N runs (default 20)")
    history.add_argument(
        "--wide",
        action="store_true",
        help="every column and whole run ids even on a terminal (by default a terminal gets the columns that fit "
        "its width, short ids; a pipe or file always gets everything)",
    )
    show = commands.add_parser("show", help="the summary and failures of one stored run")
    show.add_argument("run_id", help=_RUN_ID_HELP)
    compare = commands.add_parser("compare", help="compare run B with run A: metric means, changed cases")
    compare.add_argument("run_a", help="the baseline run id (or a unique prefix of it, at least 6 characters)")
    compare.add_argument("run_b", help="the run id to compare with it (or a unique prefix)")
    for command in (history, show, compare):
        command.add_argument("--json", action="store_true", help="print JSON instead of text")
        command.add_argument("--db-url", help=_db_url_help())
