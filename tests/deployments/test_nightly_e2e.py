"""End to end, as a user runs it: a real `prefect server start`, the work pool, `prefect deploy` from
deployments/prefect.yaml, a process worker, and `prefect deployment run agent-eval/nightly --watch`.

Run it alone with `pytest -m e2e`. It takes about a minute.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlmodel import Session, select

from agent_eval.store import CaseRecord, Run, get_engine
from tests.deployments.prefect_stack import POOL, PREFECT, PrefectStack

pytestmark = pytest.mark.e2e


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[PrefectStack]:
    """Server up, pool created, deployments deployed, one worker polling; all stopped afterwards."""
    db_url = f"sqlite:///{tmp_path / 'store.db'}"
    stack = PrefectStack.start(tmp_path, {"AGENT_EVAL_DB_URL": db_url, "AGENT_EVAL_HOME": str(tmp_path / "ae")})
    try:
        created = stack.run("work-pool", "create", POOL, "--type", "process")
        assert created.returncode == 0, created.stdout + created.stderr
        deployed = stack.run("deploy", "--all", "--prefect-file", "deployments/prefect.yaml", "--no-prompt")
        assert deployed.returncode == 0, deployed.stdout + deployed.stderr
        stack.spawn([PREFECT, "worker", "start", "--pool", POOL], "worker.log")
        yield stack
    finally:
        stack.stop()


def test_nightly_deployment_runs_and_stores_its_results(stack: PrefectStack, tmp_path: Path) -> None:
    listed = stack.run("deployment", "ls")
    assert "agent-eval/nightly" in listed.stdout and "agent-eval/on-demand" in listed.stdout

    done = stack.run("deployment", "run", "agent-eval/nightly", "--watch", timeout=300)

    assert done.returncode == 0, done.stdout[-3000:] + (tmp_path / "worker.log").read_text()[-3000:]
    assert "Completed" in done.stdout
    with Session(get_engine(f"sqlite:///{tmp_path / 'store.db'}")) as session:
        run = session.exec(select(Run)).one()
        assert (run.status, run.total, run.passed, run.failed) == ("completed", 33, 27, 6)
        assert run.flow_run_id is not None
        assert len(session.exec(select(CaseRecord).where(CaseRecord.run_id == run.id)).all()) == 33


def test_parameters_are_enforced_against_the_schema(stack: PrefectStack) -> None:
    rejected = stack.run("deployment", "run", "agent-eval/on-demand", "--param", 'request={"paths": [], "num_runs": 0}')

    assert rejected.returncode != 0
    assert "validation" in (rejected.stdout + rejected.stderr).lower()
