"""The Python API from async code and from a running event loop (a Jupyter cell): `aevaluate`, `arerun`,
`arescore`, and `evaluate` called where a loop already runs."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from agent_eval import evaluate
from agent_eval.api import aevaluate, arerun, arescore, run_sync
from tests.flows.helpers import write_echo_set

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_server")]

AGENT = "tests.flows.agents_for_tests:echo_agent"


def test_aevaluate_runs_on_the_callers_loop_and_stores_the_run(tmp_path: Path, sqlite_url: str) -> None:
    eval_file, _ = write_echo_set(tmp_path, ["alpha", "beta", "gamma"])

    async def main() -> tuple[int, int, float, int, int]:
        report = await aevaluate(eval_file, agent=AGENT, db_url=sqlite_url)
        rerun_report = await arerun(report.run_id, db_url=sqlite_url)
        rescored = await arescore(report.run_id, db_url=sqlite_url)
        return (
            report.summary.total,
            report.summary.passed,
            report.summary.pass_rate,
            rerun_report.summary.cached_case_runs,
            rescored.summary.total,
        )

    # the rerun reuses the answers of the run it repeats: 3 cached case runs
    assert asyncio.run(main()) == (3, 3, 1.0, 3, 3)


def test_evaluate_works_inside_a_running_event_loop(tmp_path: Path, sqlite_url: str) -> None:
    eval_file, _ = write_echo_set(tmp_path, ["one", "two"])

    async def notebook_cell() -> tuple[int, int]:
        report = evaluate(eval_file, agent=AGENT, db_url=sqlite_url)  # what a Jupyter cell does
        return report.summary.total, report.summary.passed

    assert asyncio.run(notebook_cell()) == (2, 2)


def test_run_sync_uses_a_worker_thread_only_when_a_loop_runs() -> None:
    async def thread_name() -> str:
        return threading.current_thread().name

    assert run_sync(thread_name()) == threading.current_thread().name

    async def inside_a_loop() -> str:
        return run_sync(thread_name())

    assert asyncio.run(inside_a_loop()).startswith("agent-eval")
