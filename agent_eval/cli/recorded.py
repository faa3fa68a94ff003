"""The command line's recorded-traffic parts: `run`'s options for OpenTelemetry traces and ADK sessions, and
`import-sessions` (recorded sessions written as an ADK eval set).

Internal: the interface is the `agent-eval` command; this module's names may change between releases."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_eval.cli.values import moment, positive
from agent_eval.errors import EXIT_OK, EvalInputError

if TYPE_CHECKING:
    from agent_eval.io.recorded import RecordedSource

__all__ = ["add_import_sessions_parser", "add_recorded_arguments", "import_sessions_command", "recorded_source"]

RECORDED_FORMAT_CHOICES = ("otel", "adk-session")


def add_recorded_arguments(command: argparse.ArgumentParser, *, references: bool = True) -> None:
    """The options that read and choose recorded traffic (`run`, `import-sessions`)."""
    group = command.add_argument_group("recorded traffic (OpenTelemetry traces, ADK sessions)")
    group.add_argument(
        "--sessions-db",
        metavar="URL",
        help="read the sessions of an ADK DatabaseSessionService (a URL with a password: env:NAME naming it)",
    )
    group.add_argument("--app-name", help="only this app's sessions (with --sessions-db)")
    group.add_argument(
        "--since", type=moment, help="only turns that started at or after this time (ISO 8601, or 24h ago as '24h')"
    )
    group.add_argument("--until", type=moment, help="only turns that started before this time (ISO 8601 or '1h')")
    group.add_argument("--sample", type=positive, help="score N sessions, chosen with --seed (reproducible)")
    group.add_argument("--seed", type=int, default=0, help="the seed of --sample (default 0)")
    group.add_argument("--service", action="append", default=[], help="only spans of this service.name (repeatable)")
    group.add_argument("--agent-name", action="append", default=[], help="only turns of this agent (repeatable)")
    if references:
        group.add_argument(
            "--reference",
            action="append",
            default=[],
            metavar="EVAL_FILE",
            help="an eval set whose cases give references to the recorded sessions of the same id (repeatable)",
        )


def recorded_source(args: argparse.Namespace, paths: list[str]) -> RecordedSource | None:
    """The recorded traffic `args` name, or None when the paths are eval files: `--format otel|adk-session`,
    `--sessions-db`, or (format `auto`) paths whose content is spans or sessions.

    Raises:
        EvalInputError: recorded traffic mixed with eval files, or recorded-traffic options on eval files (no
            input at all is refused before, by the CLI's argument check).
    """
    from agent_eval.io.recorded import RecordedSource, detect_recorded_format

    given_format = args.format if args.format in RECORDED_FORMAT_CHOICES else None
    detected = [detect_recorded_format(Path(p)) if Path(p).exists() else None for p in paths]
    if given_format is None and (args.format != "auto" or (not args.sessions_db and not any(detected))):
        _refuse_recorded_options(args)
        return None
    if given_format is None and paths and not all(detected):
        mixed = paths[detected.index(None)]
        raise EvalInputError("recorded traffic and eval files in one run: pass eval files as --reference", file=mixed)
    return RecordedSource(
        paths=paths,
        format=given_format,
        sessions_db=args.sessions_db,
        app_name=args.app_name,
        since=args.since,
        until=args.until,
        sample=args.sample,
        seed=args.seed,
        services=args.service,
        agent_names=args.agent_name,
    )


def _refuse_recorded_options(args: argparse.Namespace) -> None:
    """Options that choose recorded traffic mean nothing on eval files: said, rather than ignored."""
    given = [f"--{name.replace('_', '-')}" for name in _RECORDED_OPTIONS if getattr(args, name, None)]
    if given:
        raise EvalInputError(f"{', '.join(given)}: only for recorded traffic (span files, ADK sessions)", field="paths")


_RECORDED_OPTIONS = ("app_name", "since", "until", "sample", "service", "agent_name", "reference")


# --------------------------------------------------------------------------------------------- import-sessions
def add_import_sessions_parser(commands: Any) -> None:
    """`import-sessions SOURCE... -o FILE`."""
    command = commands.add_parser(
        "import-sessions", help="write recorded sessions or traces as an ADK eval set (regression cases)"
    )
    command.add_argument("paths", nargs="*", help="span files or folders, or ADK session JSON files")
    command.add_argument("-o", "--output", required=True, help="the eval set file to write (.evalset.json)")
    command.add_argument("--format", choices=["auto", *RECORDED_FORMAT_CHOICES], default="auto")
    command.add_argument("--eval-set-id", help="the eval set id (default: from the output file's name)")
    add_recorded_arguments(command, references=False)


def import_sessions_command(args: argparse.Namespace) -> int:
    """Write the chosen sessions as an ADK EvalSet that ADK's own loader reads and `adk eval` runs."""
    from agent_eval.io.recorded import load_recorded
    from agent_eval.io.recorded.export import write_adk_eval_set
    from agent_eval.plan.eval_plan import RECORDED_PART_TURNS

    source = recorded_source(args, args.paths)
    if source is None:
        first = args.paths[0] if args.paths else None
        raise EvalInputError("not recorded traffic: neither OTLP spans nor ADK sessions", file=first)
    output = Path(args.output)
    eval_set_id = args.eval_set_id or output.name.split(".")[0]
    loaded = load_recorded(source.model_copy(update={"eval_set_id": eval_set_id}))
    output.parent.mkdir(parents=True, exist_ok=True)
    temporary = output.with_name(output.name + ".tmp")
    try:
        with temporary.open("w", encoding="utf-8") as target:  # a part of the sessions in memory at a time
            imported = write_adk_eval_set(loaded.eval_sets(RECORDED_PART_TURNS), eval_set_id, target)
        for note in [*loaded.notes(), *imported.notes()]:
            print(f"agent-eval: {note}")
        if not imported.written:
            raise EvalInputError("no session to import: every one failed or was recorded without content", file=output)
        temporary.replace(output)  # all or nothing
    finally:
        temporary.unlink(missing_ok=True)
        loaded.close()
    print(f"Wrote {imported.written} case(s) to {output}")
    return EXIT_OK
