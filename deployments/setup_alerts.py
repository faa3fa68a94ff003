"""Set up agent-eval's regression alerts on the Prefect server in use (`PREFECT_API_URL`).

Creates (or updates) a notification block that POSTs `{"text", "subject", "body"}` as JSON to the webhook (a Slack
incoming webhook shows `text`), then creates the automations of `deployments/automations.yaml` with that block's id
in place of `${AGENT_EVAL_ALERT_BLOCK_ID}`. Running it again updates the block and the automations in place.

    python deployments/setup_alerts.py --webhook https://hooks.slack.com/services/... [--block-name agent-eval-alerts]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agent_eval.compare import DEFAULT_BLOCK_NAME, setup_alerts

AUTOMATIONS_FILE = Path(__file__).resolve().with_name("automations.yaml")


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, set the alerts up and print what was done.

    Args:
        argv: the command line without the program's name (default `sys.argv[1:]`).

    Returns:
        The exit status: 0 when done, 2 for a bad URL or automations file.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--webhook", required=True, help="the URL the notifications are POSTed to")
    parser.add_argument("--block-name", default=DEFAULT_BLOCK_NAME, help="the notification block's name")
    parser.add_argument("--file", type=Path, default=AUTOMATIONS_FILE, help="the automations file")
    args = parser.parse_args(argv)
    try:
        done = setup_alerts(args.webhook, args.file, block_name=args.block_name)
    except ValueError as exc:  # includes pydantic's ValidationError
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"notification block {args.block_name!r}: {done.block_document_id}")
    for name, automation_id in done.created.items():
        print(f"created automation {name!r}: {automation_id}")
    for name, automation_id in done.updated.items():
        print(f"updated automation {name!r}: {automation_id}")
    if done.removed_duplicates:
        print(f"deleted {done.removed_duplicates} duplicate automation(s) of the same name")
    return 0


if __name__ == "__main__":
    sys.exit(main())
