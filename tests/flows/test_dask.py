"""Agent invocations on an existing Dask cluster (`dask_address`, prefect-dask's `DaskTaskRunner`): a real
scheduler and two real worker processes started here, the flow on the session's Prefect server."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
from sqlmodel import Session, select

from agent_eval import evaluate
from agent_eval.errors import EvalInputError, InfrastructureError
from agent_eval.results.model import RunReport
from agent_eval.store import Run, get_engine
from agent_eval.tasks import dask as dask_module
from tests.conftest import REPO_ROOT
from tests.flows.agents_for_tests import CALL_LOG_ENV
from tests.flows.helpers import write_echo_set

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_server")]

AGENT = "tests.flows.agents_for_tests:pid_logged_agent"


class Cluster:
    """A Dask scheduler and its workers, each a process of its own, and the file their agents log calls to."""

    def __init__(self, address: str, workers: dict[int, subprocess.Popen[bytes]], calls: Path) -> None:
        self.address = address
        self.workers = workers
        self.worker_pids = set(workers)
        self.calls = calls

    def calls_logged(self) -> list[tuple[int, str]]:
        """(pid of the process that ran it, message) of every call, in order."""
        lines = [line.split(" ", 1) for line in self.calls.read_text().splitlines()]
        return [(int(pid), message) for pid, message in lines]

    def calls_by_pid(self) -> dict[str, int]:
        """message -> pid of the process that ran it."""
        return {message: pid for pid, message in self.calls_logged()}


@contextlib.contextmanager
def running_cluster(home: Path) -> Iterator[Cluster]:
    """A scheduler and two workers (no nanny: the worker is the process), killed at the end."""
    home.mkdir(parents=True, exist_ok=True)
    calls = home / "calls.log"
    calls.write_text("")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), CALL_LOG_ENV: str(calls)}
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    processes = [_spawn([*dask, "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"], env, home)]
    worker = [sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "4", "--no-dashboard"]
    workers = [_spawn([*worker, "--name", f"w{i}", "--no-nanny"], env, home) for i in (1, 2)]
    try:
        assert _wait_for_workers(address, 2) == {process.pid for process in workers}
        yield Cluster(address, {process.pid: process for process in workers}, calls)
    finally:
        for process in [*processes, *workers]:
            process.kill()
            process.wait(timeout=30)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("dask")) as started:
        yield started


def _spawn(command: list[str], env: dict[str, str], home: Path) -> subprocess.Popen[bytes]:
    log = (home / "processes.log").open("ab")
    return subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_for_workers(address: str, count: int) -> set[int]:
    """The pids of the cluster's workers, once `count` of them have joined."""
    from distributed import Client

    deadline = time.monotonic() + 60
    with Client(address, timeout=60) as client:
        while time.monotonic() < deadline:
            if len(client.scheduler_info()["workers"]) >= count:
                return set(client.run(os.getpid).values())
            time.sleep(0.2)
    raise TimeoutError(f"fewer than {count} Dask workers joined {address}")


def _invoke_task_runs(report: RunReport) -> list[str]:
    async def read() -> list[str]:
        async with get_client() as client:
            flow_runs = FlowRunFilter(id=FlowRunFilterId(any_=[report.flow_run_id]))
            runs = await client.read_task_runs(flow_run_filter=flow_runs)
        return sorted(run.name for run in runs if run.name.startswith("invoke "))

    return asyncio.run(read())


def _outcomes(report: RunReport) -> list[tuple[Any, ...]]:
    return sorted(
        (case.eval_id, case.status, tuple((m.metric_name, m.score, m.status) for m in case.metrics))
        for case in report.cases
    )


def test_every_case_run_is_invoked_on_the_cluster_and_the_report_equals_an_in_process_run(
    cluster: Cluster, tmp_path: Path, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = [f"case_{i:02d}" for i in range(16)]
    eval_file, messages = write_echo_set(tmp_path, names)
    monkeypatch.setenv(CALL_LOG_ENV, str(tmp_path / "here.log"))  # where the in-process run's calls go

    on_dask = evaluate(eval_file, agent=AGENT, db_url=sqlite_url, max_concurrency=8, dask_address=cluster.address)
    ran_on = cluster.calls_by_pid()
    here = evaluate(eval_file, agent=AGENT, db_url=sqlite_url, max_concurrency=8)

    assert (on_dask.summary.total, on_dask.summary.passed) == (16, 16)
    assert set(messages.values()) <= ran_on.keys()
    used = {ran_on[message] for message in messages.values()}
    assert used == cluster.worker_pids and os.getpid() not in used  # both workers, never this process
    assert _outcomes(on_dask) == _outcomes(here)
    assert on_dask.summary.cached_case_runs == 0
    assert _invoke_task_runs(on_dask) == sorted(f"invoke {name} #0" for name in names)


def test_the_address_can_come_from_the_environment(
    cluster: Cluster, tmp_path: Path, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    eval_file, messages = write_echo_set(tmp_path, ["from_env"])
    monkeypatch.setenv("AGENT_EVAL_DASK_ADDRESS", cluster.address)

    report = evaluate(eval_file, agent=AGENT, db_url=sqlite_url)

    assert report.summary.passed == 1
    assert cluster.calls_by_pid()[messages["from_env"]] in cluster.worker_pids


def test_a_scheduler_that_does_not_answer_is_one_line_and_stores_nothing(
    tmp_path: Path, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    eval_file, _ = write_echo_set(tmp_path, ["unreached"])
    monkeypatch.setattr(dask_module, "CONNECT_SECONDS", 1.0)
    address = f"tcp://127.0.0.1:{_free_port()}"

    started = time.monotonic()
    with pytest.raises(InfrastructureError) as raised:
        evaluate(eval_file, agent=AGENT, db_url=sqlite_url, dask_address=address)

    assert str(raised.value).startswith(f"the Dask scheduler at {address} could not be reached: ")
    assert "\n" not in str(raised.value)
    assert time.monotonic() - started < 30
    with Session(get_engine(sqlite_url)) as session:
        assert session.exec(select(Run)).all() == []


def test_without_prefect_dask_the_error_names_the_extra(
    tmp_path: Path, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    eval_file, _ = write_echo_set(tmp_path, ["no_extra"])
    monkeypatch.setitem(sys.modules, "prefect_dask", None)  # `import prefect_dask` now raises ImportError

    with pytest.raises(EvalInputError) as raised:
        evaluate(eval_file, agent=AGENT, db_url=sqlite_url, dask_address="tcp://127.0.0.1:1")

    assert raised.value.field == "dask_address"
    assert "pip install 'agent-eval[dask]'" in str(raised.value)
    with Session(get_engine(sqlite_url)) as session:
        assert session.exec(select(Run)).all() == []


def test_a_worker_killed_mid_run_loses_no_case_and_reinvokes_none_that_finished(
    tmp_path: Path, sqlite_url: str
) -> None:
    """Eight case runs in flight (two batches of four), 0.1 s each: once ten calls are logged, the worker that
    made the first is SIGKILLed. Dask runs its batch again on the other worker, whose `invoke-case` task runs
    find the finished case runs in the cache the workers share (this machine's Prefect result storage)."""
    names = [f"kill_{i:02d}" for i in range(40)]
    eval_file, messages = write_echo_set(tmp_path, names)
    with running_cluster(tmp_path / "cluster") as cluster:
        killer = threading.Thread(target=_kill_the_first_caller, args=(cluster, 10), daemon=True)
        killer.start()
        report = evaluate(eval_file, agent=AGENT, db_url=sqlite_url, max_concurrency=8, dask_address=cluster.address)
        killer.join(timeout=5)
        killed = [pid for pid, process in cluster.workers.items() if process.poll() is not None]
        counted = Counter(message for _, message in cluster.calls_logged())

    assert len(killed) == 1
    assert (report.summary.total, report.summary.passed) == (40, 40)
    assert set(counted) == set(messages.values())
    twice = [message for message, n in counted.items() if n > 1]
    assert len(twice) <= 4 and all(counted[message] == 2 for message in twice), twice  # one batch was in flight


def _kill_the_first_caller(cluster: Cluster, calls: int) -> None:
    deadline = time.monotonic() + 60
    while len(logged := cluster.calls_logged()) < calls and time.monotonic() < deadline:
        time.sleep(0.05)
    if logged:
        os.kill(logged[0][0], signal.SIGKILL)
