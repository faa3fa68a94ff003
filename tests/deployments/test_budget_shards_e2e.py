"""A budget over a sharded run, end to end (issue 31 item 5): a real Prefect server, the work pool, the deployments
of deployments/prefect.yaml, one process worker running two shards at once, the store on PostgreSQL. The run's
budget is the run's, not a shard's: the shards share their spend through the store (`run_spend`), the run ends
`stopped` (exit 5) once the budget is reached, and what no shard started is NOT_EVALUATED with the budget reason.

Run it alone with `pytest -m e2e tests/deployments/test_budget_shards_e2e.py` (about a minute).
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_eval.results.budget import SpendTotals
from agent_eval.schema import EvalStatus, ModelUsage
from agent_eval.store import get_engine, list_runs, load_case_records
from agent_eval.store.spend import run_spend_of
from tests.conftest import REPO_ROOT
from tests.deployments.prefect_stack import POOL, PREFECT, PrefectStack
from tests.store.conftest import fresh_postgres_database

pytestmark = pytest.mark.e2e

CALL_LOG_ENV = "AGENT_EVAL_TEST_BUDGET_CALL_LOG"
CASES = 8
BUDGET = 0.009
PER_CASE = 0.002
"""Each case run: one `my-model` call of 1,000 in / 100 out, at $1 / $10 per million tokens."""
SHARDS = 2
MAX_CONCURRENCY = 2
"""Divided among the shards: one case run at a time in each."""

AGENT = f"""
import os
import time
from agent_eval.agents import AgentSession, AgentTurn
from agent_eval.schema import ModelUsage

def answer(message: str, session: AgentSession | None) -> AgentTurn:
    \"\"\"Logs the message; the first call of each shard waits for the other's, so both shards spend.\"\"\"
    log = os.environ[{CALL_LOG_ENV!r}]
    with open(log, "a", encoding="utf-8") as file:
        file.write(message + "\\n")
    deadline = time.monotonic() + 120
    while len(open(log, encoding="utf-8").read().splitlines()) < 2:
        if time.monotonic() > deadline:
            raise RuntimeError("the other shard never called the agent")
        time.sleep(0.05)
    usage = ModelUsage(calls=1, input_tokens=1000, output_tokens=100)
    return AgentTurn(response="ok", input_tokens=1000, output_tokens=100, model_usage={{"my-model": usage}})
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PrefectStack, str]]:
    """Server up, pool created, deployments deployed, one worker that runs two flow runs at once; the store on a
    fresh PostgreSQL database (its URL). All stopped afterwards."""
    home = tmp_path_factory.mktemp("budget-shards")
    with fresh_postgres_database() as store_url:
        extra = {"AGENT_EVAL_DB_URL": store_url, "PREFECT_WORKER_QUERY_SECONDS": "2", CALL_LOG_ENV: str(home / "calls")}
        stack = PrefectStack.start(home, extra)
        try:
            created = stack.run("work-pool", "create", POOL, "--type", "process")
            assert created.returncode == 0, created.stdout + created.stderr
            deployed = stack.run("deploy", "--all", "--prefect-file", "deployments/prefect.yaml", "--no-prompt")
            assert deployed.returncode == 0, deployed.stdout + deployed.stderr
            stack.spawn([PREFECT, "worker", "start", "--pool", POOL, "--limit", "2"], "worker.log")
            yield stack, store_url
        finally:
            stack.stop()


def write_inputs(folder: Path) -> tuple[Path, Path, Path]:
    """The agent file, an eval set of `CASES` cases expecting "ok" (fresh messages), and the config pricing
    my-model."""
    agent = folder / "budget_agent.py"
    agent.write_text(AGENT, encoding="utf-8")
    token = uuid.uuid4().hex[:8]
    cases = [
        {
            "eval_id": f"c{i}",
            "conversation": [
                {
                    "user_content": {"role": "user", "parts": [{"text": f"c{i} {token}"}]},
                    "final_response": {"role": "model", "parts": [{"text": "ok"}]},
                }
            ],
        }
        for i in range(CASES)
    ]
    eval_file = folder / "budget.evalset.json"
    eval_file.write_text(json.dumps({"eval_set_id": f"budget_{token}", "eval_cases": cases}), encoding="utf-8")
    config = folder / "budget_config.json"
    pricing = {"my-model": {"input_per_mtok": 1.0, "output_per_mtok": 10.0}}
    config.write_text(json.dumps({"criteria": {"response_match_score": 0.5}, "pricing": pricing}), encoding="utf-8")
    return agent, eval_file, config


def test_a_budget_holds_across_the_shards_of_a_run(stack: tuple[PrefectStack, str], tmp_path: Path) -> None:
    """$0.009 at $0.002 a case run allows 4. The rule lets a call start when the spend so far plus the calls in
    flight (at the mean of the finished ones) and itself stay within the budget, so with every shard's spend read
    from the store no more than 4 would start; two shards can each read the other's row before the other
    writes its new call in flight, so at most one more (each shard has one call in flight at a time). And at least
    4 start: a call is refused only when 4 are known to have started."""
    pool, store_url = stack
    agent, eval_file, config = write_inputs(tmp_path)
    calls = Path(pool.env[CALL_LOG_ENV])
    calls.write_text("", encoding="utf-8")
    command = [sys.executable, "-m", "agent_eval.cli", "run", str(eval_file), "--agent", f"{agent}:answer"]
    command += ["--config", str(config), "--shards", str(SHARDS), "--max-concurrency", str(MAX_CONCURRENCY)]
    command += ["--budget", str(BUDGET)]
    env = {**pool.env, "HOME": str(pool.home / "parent"), "AGENT_EVAL_HOME": str(pool.home / "parent-ae")}

    done = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)

    worker_log = (pool.home / "worker.log").read_text(errors="replace")[-3000:]
    assert done.returncode == 5, done.stdout[-3000:] + done.stderr[-3000:] + worker_log
    allowed = int(BUDGET / PER_CASE + 1e-9)  # 4
    started = len(calls.read_text("utf-8").splitlines())
    assert allowed <= started <= allowed + SHARDS - 1
    engine = get_engine(store_url)
    [run] = list_runs(engine, limit=None)
    assert (run.status, run.error) == (
        "stopped",
        f"budget of $0.0090 reached: ${started * PER_CASE:.4f} spent, {CASES - started} case runs not started",
    )
    records = load_case_records(run.id, engine)
    assert sorted((EvalStatus(r.status), r.error_kind, r.attempts) for r in records) == sorted(
        [(EvalStatus.PASSED, None, 1)] * started + [(EvalStatus.NOT_EVALUATED, "budget", 0)] * (CASES - started)
    )
    assert all((r.error or "").startswith("not started: budget of $0.0090 reached (") for r in records if r.error_kind)
    # the spend is the run's: one row per shard, both spent, summed in the store
    assert run_spend_of(run.id, engine) == SpendTotals(
        agent={"my-model": ModelUsage(calls=started, input_tokens=1_000 * started, output_tokens=100 * started)},
        finished={"agent": started},
        in_flight={"agent": 0},
    )
    shards = _shard_rows(store_url, run.id)
    assert len(shards) == SHARDS
    assert all(row.finished.get("agent", 0) >= 1 and row.in_flight.get("agent", 0) == 0 for row in shards)


def _shard_rows(store_url: str, run_id: str) -> list[SpendTotals]:
    """The `run_spend` rows the run's shards wrote (a worker named `shard-...`)."""
    from sqlmodel import Session, col, select

    from agent_eval.store.models import RunSpendRecord

    statement = select(RunSpendRecord).where(col(RunSpendRecord.run_id) == run_id)
    with Session(get_engine(store_url)) as session:
        rows = session.exec(statement).all()
    return [SpendTotals.model_validate(row.totals) for row in rows if row.worker.startswith("shard-")]
