"""Limits that hold beyond one process, and what a sharded run checks before it starts, on the test server.
The sharded run itself (a server on PostgreSQL, two workers) is tests/deployments/test_sharded_e2e.py."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from prefect import flow
from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
from prefect.states import Completed, Pending, Running
from sqlmodel import Session, select

from agent_eval import evaluate
from agent_eval.agents import AgentSession, AgentTurn
from agent_eval.errors import EvalInputError
from agent_eval.flows.shard import shard_concurrency, wait_for_shard
from agent_eval.io import load_eval_sets
from agent_eval.plan.eval_plan import EvalRequest, prepare
from agent_eval.store import Run, get_engine
from tests.flows.helpers import write_echo_set

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_server")]

AGENT = "tests.flows.test_limits_and_shards:overlap_agent"
IN_FLIGHT: list[str] = []
PEAKS: list[int] = []
"""How many invocations `overlap_agent` saw at once, one entry per call."""


async def overlap_agent(message: str, session: AgentSession) -> AgentTurn:
    """Answers like the echo agent after 0.2 s, recording how many of its calls overlap."""
    IN_FLIGHT.append(message)
    PEAKS.append(len(IN_FLIGHT))
    await asyncio.sleep(0.2)
    IN_FLIGHT.remove(message)
    return AgentTurn(response=f"answer: {message}")


def _limit(slots: int) -> str:
    name = f"agent-eval-test-{uuid.uuid4().hex[:8]}"

    async def create() -> None:
        async with get_client() as client:
            await client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=name, limit=slots))

    asyncio.run(create())
    return name


def test_a_named_global_limit_holds_every_invocation_to_its_slots(tmp_path: Path, sqlite_url: str) -> None:
    path, _ = write_echo_set(tmp_path, [f"c{i}" for i in range(4)])
    PEAKS.clear()
    evaluate([str(path)], agent=AGENT, db_url=sqlite_url, max_concurrency=4)
    assert max(PEAKS) == 4  # without a limit, all four at once

    PEAKS.clear()
    report = evaluate([str(path)], agent=AGENT, db_url=sqlite_url, max_concurrency=4, concurrency_limits=[_limit(1)])

    assert len(PEAKS) == 4 and max(PEAKS) == 1
    assert report.summary.total == 4


@pytest.mark.parametrize(
    ("arguments", "message", "field"),
    [
        ({"concurrency_limits": ["nope"]}, "no Prefect global concurrency limit 'nope'", "concurrency_limits"),
        ({"shards": 2}, "no deployment 'agent-eval-shard/shard' on the Prefect server to run shards", "shards"),
    ],
)  # fmt: skip
def test_a_missing_limit_or_shard_deployment_is_refused_before_anything_is_stored(
    tmp_path: Path, sqlite_url: str, arguments: dict[str, object], message: str, field: str
) -> None:
    path, _ = write_echo_set(tmp_path, ["a", "b"])

    with pytest.raises(EvalInputError, match=message) as raised:
        evaluate([str(path)], agent=AGENT, db_url=sqlite_url, **arguments)  # type: ignore[arg-type]

    assert raised.value.field == field
    with Session(get_engine(sqlite_url)) as session:
        assert session.exec(select(Run)).all() == []


def test_shards_split_the_case_runs_evenly_and_completely(tmp_path: Path) -> None:
    path, _ = write_echo_set(tmp_path, [f"c{i}" for i in range(5)])
    plan = prepare(EvalRequest(paths=[str(path)], agent=AGENT, num_runs=2, shards=3))
    everything = [(k.eval_set_id, k.case.eval_id, k.run_index) for k in plan.case_runs()]

    shards = [[(k.eval_set_id, k.case.eval_id, k.run_index) for k in plan.shard(i, 3)] for i in range(3)]

    assert [len(shard) for shard in shards] == [4, 3, 3]
    assert sorted(key for shard in shards for key in shard) == sorted(everything)
    assert len(load_eval_sets([str(path)])[0].eval_cases) == 5


@pytest.mark.parametrize(("slots", "count", "shares"), [(8, 4, [2, 2, 2, 2]), (8, 3, [3, 3, 2]), (3, 3, [1, 1, 1])])
def test_the_runs_max_concurrency_is_divided_among_its_shards(slots: int, count: int, shares: list[int]) -> None:
    assert [shard_concurrency(slots, index, count) for index in range(count)] == shares
    assert sum(shares) == slots


def test_a_shard_left_pending_by_a_dead_worker_is_set_crashed() -> None:
    """A worker killed while it starts a shard leaves it Pending for good: silent past the window, it is set
    Crashed as a running one is (before, the parent waited for it without end)."""

    @flow(name="agent-eval-shard-test")
    def stand_in() -> None:
        """Never run: its flow runs are created and moved through states by hand."""

    async def scenario() -> tuple[str, str]:
        async with get_client() as client:
            stuck = await client.create_flow_run(stand_in, state=Pending())
            await asyncio.sleep(1.5)
            silent = await asyncio.wait_for(wait_for_shard(stuck.id, stale_after=timedelta(seconds=1)), 20)
            stored = (await client.read_flow_run(stuck.id)).state
            assert stored is not None
            return silent.type.value, stored.type.value

    assert asyncio.run(scenario()) == ("CRASHED", "CRASHED")


def test_a_running_shard_without_heartbeats_is_set_crashed_and_a_finished_one_is_left_alone() -> None:
    """A shard whose worker died stays Running on the server: the parent finds it silent past the window,
    sets it Crashed (so the UI says so) and gets that state back to submit the shard again."""

    @flow(name="agent-eval-shard-test")
    def stand_in() -> None:
        """Never run: its flow runs are created and moved through states by hand."""

    async def scenario() -> tuple[str, str, str]:
        async with get_client() as client:
            dead = await client.create_flow_run(stand_in, state=Running())
            finished = await client.create_flow_run(stand_in, state=Running())
            await client.set_flow_run_state(finished.id, Completed())
            await asyncio.sleep(1.5)
            silent = await wait_for_shard(dead.id, stale_after=timedelta(seconds=1))
            stored = (await client.read_flow_run(dead.id)).state
            done = await wait_for_shard(finished.id, stale_after=timedelta(seconds=1))
            assert stored is not None
            return silent.type.value, stored.type.value, done.type.value

    silent, stored, done = asyncio.run(scenario())

    assert (silent, stored, done) == ("CRASHED", "CRASHED", "COMPLETED")
