"""A process that evaluates a slow agent on an eval set, for tests/flows/test_resume.py to kill and start again.

Usage, from the repository root: `python tests/flows/resume_worker.py EVAL_FILE` (evaluate) or
`python tests/flows/resume_worker.py --rerun RUN_ID [--only-failed]` (resume a run), with `$AGENT_EVAL_DB_URL`
(the store), `$RESUME_AGENT_LOG` (a file the agent appends each message to when it finishes a case) and
Prefect's home and result storage set by the caller; prints the run's id and case counts as JSON on success.

The agent has a fixed fingerprint, so both processes compute the same invocation cache keys even if the other
files of this folder change in between.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:  # run as a script, `tests` is not importable otherwise
    sys.path.insert(0, str(REPO_ROOT))

from agent_eval.agents import AgentSession, AgentTurn, CallableAgent, ToolCallRecord  # noqa: E402

AGENT_REFERENCE = "tests.flows.resume_worker:slow_agent"
LOG_ENV = "RESUME_AGENT_LOG"
SECONDS_PER_CASE = 0.5


def _slow_echo(message: str, session: AgentSession) -> AgentTurn:
    """The echo agent, taking `SECONDS_PER_CASE`; appends the message to `$RESUME_AGENT_LOG` once done."""
    time.sleep(SECONDS_PER_CASE)
    with open(os.environ[LOG_ENV], "a", encoding="utf-8") as log:
        log.write(message + "\n")
    return AgentTurn(
        response=f"answer: {message}",
        tool_calls=[ToolCallRecord(name="lookup", args={"query": message}, response={"ok": True})],
    )


slow_agent = CallableAgent(_slow_echo, reference=AGENT_REFERENCE, fingerprint="resume-worker-slow-echo-v1")


def main(arguments: list[str]) -> None:
    from agent_eval import evaluate, rerun

    if arguments[0] == "--rerun":
        report = rerun(arguments[1], only_failed="--only-failed" in arguments, max_concurrency=1)
    else:
        report = evaluate(arguments[0], agent=AGENT_REFERENCE, max_concurrency=1)
    print(json.dumps({"run_id": report.run_id, "cases": len(report.cases), "passed": report.summary.passed}))


if __name__ == "__main__":
    main(sys.argv[1:])
