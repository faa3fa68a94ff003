"""`agent-eval label RUN_ID`, `agent-eval labels import|export FILE` and `agent-eval judges`: the commands that
prove a judge (`agent_eval.judges`).

Internal: the interface is the `agent-eval` command; this module's names may change between releases."""

from __future__ import annotations

import argparse
import json
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from agent_eval.errors import EXIT_FAILED, EXIT_OK, EXIT_REGRESSION, EvalInputError

if TYPE_CHECKING:
    from agent_eval.results.model import RunReport
    from agent_eval.schema import EvalConfig

T = TypeVar("T")

__all__ = ["JUDGE_COMMANDS", "add_judges_parsers", "with_judge_agreement"]

_RUN_ID_HELP = "a run id from `agent-eval history`, or a unique prefix of it (at least 6 characters)"


def add_judges_parsers(commands: Any, db_url_help: str) -> None:
    """`label`, `labels import|export` and `judges`, each with `--db-url`."""
    label = commands.add_parser("label", help="label a stored run's judged items on a local web page")
    label.add_argument("run_id", help=_RUN_ID_HELP)
    label.add_argument("--port", type=int, default=0, help="the page's port on 127.0.0.1 (default: a free one)")
    labels = commands.add_parser("labels", help="import or export human labels of judged items (CSV or JSONL)")
    labels.add_argument("action", choices=["import", "export"])
    labels.add_argument("file", help="a .csv or .jsonl file (columns: see the README's 'Can I trust the judge?')")
    labels.add_argument("--metric", help="export: only the labels of this metric")
    judges = commands.add_parser(
        "judges",
        help="how far each LLM judge agrees with human labels; `judges check METRIC` asks the judge again; "
        "`judges align METRIC --profile NAME` chooses examples for it",
    )
    judges.add_argument(
        "action",
        nargs="?",
        choices=["list", "check", "align"],
        default="list",
        help="list (default): each judge's agreement with the labels; check: ask the judge again, exit 3 on drift; "
        "align: choose few-shot examples, kept only if they help",
    )
    judges.add_argument(
        "check_metric", nargs="?", metavar="METRIC", help="check, align: the judged metric to check or align"
    )
    judges.add_argument("--profile", help="align: the name of the judge profile to make (a new version of it)")
    judges.add_argument("--examples", type=int, default=None, help="align: at most N examples (default 8)")
    judges.add_argument("--seed", type=int, default=0, help="align: the seed of the train/held-out split")
    judges.add_argument("--metric", help="list: only this judged metric")
    judges.add_argument("--json", action="store_true", help="print JSON instead of text")
    judges.add_argument(
        "--config", help="check, align: the config whose criterion to use (default: the one last stored)"
    )
    judges.add_argument("--floor", type=float, help="check: drift when kappa is below this")
    judges.add_argument(
        "--max-drop", type=float, default=None, help="check: drift when kappa fell by more than this (default 0.15)"
    )
    for command in (label, labels):
        command.add_argument(
            "--labeller", default=None, help="who labels (default: $AGENT_EVAL_LABELLER, else your login name)"
        )
    for command in (label, labels, judges):
        command.add_argument("--db-url", help=db_url_help)


def label_command(args: argparse.Namespace) -> int:
    """`agent-eval label RUN_ID`: serve the labelling page until Ctrl-C, printing its URL first."""
    from agent_eval.judges.labels_io import default_labeller
    from agent_eval.judges.page import serve_labelling_page
    from agent_eval.store.engine import check_store, default_db_url, shown_url
    from agent_eval.store.labels import backfill_judged_items
    from agent_eval.store.queries import RunNotFoundError, resolve_run_id

    engine = check_store(args.db_url)  # None: a SQLite file that does not exist (not created for a typo)
    if engine is None:
        raise RunNotFoundError(args.run_id, shown_url(args.db_url or default_db_url()))
    run_id = resolve_run_id(args.run_id, engine)
    backfill_judged_items(run_id, engine)  # a run of an earlier release: its items join their labels
    labeller = args.labeller or default_labeller()

    def ready(url: str) -> None:
        print(f"Labelling run {run_id} as {labeller}: open {url} (Ctrl-C stops)", flush=True)

    serve_labelling_page(run_id, args.db_url, labeller, port=args.port, ready=ready)
    return EXIT_OK


def labels_command(args: argparse.Namespace) -> int:
    """`agent-eval labels import|export FILE`: one line saying how many labels were stored or written."""
    from agent_eval.judges.labels_io import default_labeller, export_labels, import_labels
    from agent_eval.store.engine import get_engine

    engine = get_engine(args.db_url)
    if args.action == "import":
        count = import_labels(args.file, args.labeller or default_labeller(), engine)
        print(f"Imported {count} label{'s' if count != 1 else ''} from {args.file}")
    else:
        count = export_labels(args.file, engine, metric=args.metric)
        print(f"Exported {count} label{'s' if count != 1 else ''} to {args.file}")
    return EXIT_OK


def judges_command(args: argparse.Namespace) -> int:
    """`agent-eval judges`: per judged metric and judge identity, the agreement with human labels; `judges check
    METRIC`: the judge asked again on every labelled item, exit 3 on drift."""
    if args.action == "check":
        return _check_command(args)
    if args.action == "align":
        return _align_command(args)
    from agent_eval.judges.agreement import format_judges, judge_agreements
    from agent_eval.store.engine import get_engine

    agreements = judge_agreements(get_engine(args.db_url), metric=args.metric)
    if args.json:
        print(json.dumps([a.model_dump(mode="json") for a in agreements], indent=2, ensure_ascii=False))
    else:
        print(format_judges(agreements))
    return EXIT_OK


def _judging(work: Coroutine[Any, Any, T]) -> T:
    """Run a command's judge work to its end, then close the judges' connections."""
    import asyncio

    from agent_eval.metrics.judged import close_judge_clients

    async def closing() -> T:
        try:
            return await work
        finally:
            await close_judge_clients()

    return asyncio.run(closing())


def _config(args: argparse.Namespace) -> EvalConfig | None:
    """`--config`'s config, if given (check, align)."""
    from agent_eval.io import load_eval_config

    return load_eval_config(args.config) if args.config else None


def _check_command(args: argparse.Namespace) -> int:
    from agent_eval.judges.check import DEFAULT_MAX_DROP, check_judge
    from agent_eval.store.engine import get_engine

    if not args.check_metric:
        raise EvalInputError("`judges check` needs the metric to check, e.g. `judges check final_response_match_v2`")
    config, engine = _config(args), get_engine(args.db_url)
    max_drop = DEFAULT_MAX_DROP if args.max_drop is None else args.max_drop
    check = _judging(check_judge(args.check_metric, engine, config=config, floor=args.floor, max_drop=max_drop))
    if args.json:
        payload: dict[str, Any] = {"check_id": check.stored.id, "metric": check.metric, "drift": check.drift}
        payload |= {"judge": check.judge.stored(), "agreement": check.agreement.model_dump(mode="json")}
        payload["change"] = check.change
        print(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        print(check.describe())
    return EXIT_REGRESSION if check.drift else EXIT_OK


def _align_command(args: argparse.Namespace) -> int:
    from agent_eval.judges.align import DEFAULT_EXAMPLES, align_judge
    from agent_eval.store.engine import get_engine

    if not args.check_metric or not args.profile:
        raise EvalInputError(
            "`judges align` needs the metric and --profile NAME, e.g. `judges align M --profile strict`"
        )
    config, engine = _config(args), get_engine(args.db_url)
    examples = DEFAULT_EXAMPLES if args.examples is None else args.examples
    alignment = _judging(
        align_judge(args.check_metric, args.profile, engine, config=config, examples=examples, seed=args.seed)
    )
    if args.json:
        payload = {"profile": alignment.profile.name, "version": alignment.profile.version, "kept": alignment.kept}
        payload |= {"evaluation": alignment.profile.evaluation, "examples": alignment.profile.examples}
        print(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        print(alignment.describe())
    return EXIT_OK if alignment.kept else EXIT_FAILED


def with_judge_agreement(report: RunReport, db_url: str | None) -> RunReport:
    """The report with the agreement of its judges with human labels (`RunReport.judge_agreement`)."""
    if not report.judges:
        return report
    from agent_eval.judges.agreement import run_judge_agreements
    from agent_eval.store.engine import get_engine

    return report.model_copy(update={"judge_agreement": run_judge_agreements(report, get_engine(db_url))})


JUDGE_COMMANDS = {"label": label_command, "labels": labels_command, "judges": judges_command}
"""The commands of this module by name, for `agent_eval.cli.main.COMMANDS`."""
