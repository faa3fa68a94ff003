"""The `agent-eval` command line; each command calls the public API only.

Exit codes: 0 every case passed, 1 some case failed, 2 bad input (one line on stderr, nothing run).

Prefect's console output is kept to warnings unless `--verbose`; with no `PREFECT_API_URL` the flow runs on
Prefect's temporary local server, whose own shutdown chatter is silenced (set the variables yourself to
override any of these defaults).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from agent_eval.errors import EvalInputError
from agent_eval.plan import DEFAULT_MAX_CONCURRENCY

__all__ = ["main"]

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agent-eval", description="Evaluate AI agents with Prefect.")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="evaluate an agent on eval files and store the run")
    run.add_argument("paths", nargs="+", help="eval files or folders; FILE:case1,case2 selects cases")
    run.add_argument(
        "--agent",
        help="'package.module:attr', 'file.py:attr', an agent folder, or 'replay' (score recorded predictions)",
    )
    run.add_argument(
        "--format",
        choices=["auto", "adk", "vertex"],
        default="auto",
        help="input format (default: detected from each file's content)",
    )
    run.add_argument("--config", help="ADK test_config.json (default: the one beside the eval files)")
    run.add_argument("--num-runs", type=_positive, default=1, help="runs per case (default 1)")
    run.add_argument(
        "--max-concurrency",
        type=_positive,
        default=DEFAULT_MAX_CONCURRENCY,
        help=f"agent invocations at once (default {DEFAULT_MAX_CONCURRENCY})",
    )
    run.add_argument("--db-url", help="store URL (default $AGENT_EVAL_DB_URL or ~/.agent_eval/agent_eval.db)")
    run.add_argument("--refresh-cache", action="store_true", help="invoke the agent even when cached")
    run.add_argument(
        "--output-dir",
        help="also write the Vertex AI tables (CSV, JSON), report.json, rust_report.json and ADK "
        "*.evalset_result.json files into this folder",
    )
    run.add_argument("-v", "--verbose", action="store_true", help="show Prefect's flow and task logs")
    return parser


def _quiet_prefect(verbose: bool) -> None:
    """Defaults for Prefect's settings, set before Prefect is imported; the user's own values win."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    if not verbose:
        os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "WARNING")
    if not verbose and not os.environ.get("PREFECT_API_URL"):
        # The temporary server inherits these; its shutdown logs tracebacks of cancelled internal writes
        # (Prefect 3.9), some through the root logger, which say nothing about the evaluation.
        os.environ.setdefault("PREFECT_SERVER_LOGGING_LEVEL", "CRITICAL")
        os.environ.setdefault("PREFECT_LOGGING_ROOT_LEVEL", "CRITICAL")


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _prepare_output_dir(folder: str) -> None:
    """Create the output folder before anything runs, so a bad path fails fast as bad input."""
    try:
        Path(folder).mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise EvalInputError(f"cannot create the output folder: {error.strerror}", file=folder) from None


def run_command(args: argparse.Namespace) -> int:
    """`agent-eval run`: evaluate, print the summary, write the outputs, exit 1 when a case failed."""
    from agent_eval.api import evaluate
    from agent_eval.report import format_summary, write_outputs

    if args.output_dir:
        _prepare_output_dir(args.output_dir)
    report = evaluate(
        args.paths,
        agent=args.agent,
        config=args.config,
        format=args.format,
        num_runs=args.num_runs,
        max_concurrency=args.max_concurrency,
        db_url=args.db_url,
        refresh_cache=args.refresh_cache,
    )
    print(format_summary(report))
    if args.output_dir:
        written = write_outputs(report, args.output_dir)
        print(f"Wrote {len(written)} files to {args.output_dir}")
    return EXIT_OK if report.all_passed() else EXIT_FAILED


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `agent-eval` console script."""
    args = _parser().parse_args(argv)
    _quiet_prefect(args.verbose)
    try:
        return run_command(args)
    except EvalInputError as error:
        print(f"agent-eval: error: {error.one_line()}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
