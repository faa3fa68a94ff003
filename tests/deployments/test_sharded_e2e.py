"""Sharded runs end to end: a real Prefect server on PostgreSQL, the store on PostgreSQL, a process work pool
with two workers that share no local folder (each its own HOME and PREFECT_HOME), 400-case evaluations in
4 shards. Both workers run shards; the report equals the unsharded run's; a worker SIGKILLed mid-shard loses
no case and re-invokes none that finished.

Run it alone with `pytest -m e2e tests/deployments/test_sharded_e2e.py` (about four minutes).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO_ROOT
from tests.deployments.prefect_stack import POOL, PREFECT, PrefectStack
from tests.flows.agents_for_tests import CALL_LOG_ENV
from tests.flows.helpers import write_echo_set
from tests.store.conftest import fresh_postgres_database

pytestmark = pytest.mark.e2e

CASES = 400
RAN = re.compile(r"Flow run '(\w+-shard-\d+-of-\d+-attempt-\d+)'")
"""A shard's flow run, as the worker that runs it logs it (both workers log "submitting" for a run that only
one of them gets)."""
WORKERS = ("worker-1", "worker-2")


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrefectStack]:
    """Server and store on PostgreSQL, the pool, every deployment, two workers with nothing local in common;
    heartbeats every 30 s (Prefect's minimum) and a shard silent for 45 s counted as crashed."""
    home = tmp_path_factory.mktemp("sharded")
    with fresh_postgres_database() as prefect_db, fresh_postgres_database() as store_url:
        stack = PrefectStack.start(
            home,
            {
                "PREFECT_SERVER_DATABASE_CONNECTION_URL": prefect_db.replace("+psycopg", "+asyncpg"),
                "AGENT_EVAL_DB_URL": store_url,
                "PREFECT_WORKER_QUERY_SECONDS": "2",
                "PREFECT_FLOWS_HEARTBEAT_FREQUENCY": "30",
                "AGENT_EVAL_SHARD_STALE_SECONDS": "45",
                CALL_LOG_ENV: str(home / "calls.log"),
            },
        )
        try:
            _deploy(stack)
            for worker in WORKERS:
                _start_worker(stack, worker)
            yield stack
        finally:
            stack.stop()


def _deploy(stack: PrefectStack) -> None:
    created = stack.run("work-pool", "create", POOL, "--type", "process")
    assert created.returncode == 0, created.stdout + created.stderr
    deployed = stack.run("deploy", "--all", "--prefect-file", "deployments/prefect.yaml", "--no-prompt")
    assert deployed.returncode == 0, deployed.stdout + deployed.stderr


def _start_worker(stack: PrefectStack, worker: str) -> subprocess.Popen[bytes]:
    """A process worker with its own HOME, PREFECT_HOME and result storage; two shards at most at a time, so
    the first worker to poll cannot take all four."""
    home = stack.home / worker
    (home / "prefect").mkdir(parents=True)
    own = {
        "HOME": str(home),
        "PREFECT_HOME": str(home / "prefect"),
        "PREFECT_LOCAL_STORAGE_PATH": str(home / "prefect" / "storage"),
        "AGENT_EVAL_HOME": str(home / "agent-eval"),
    }
    command = [PREFECT, "worker", "start", "--pool", POOL, "--limit", "2", "--name", worker]
    return stack.spawn(command, f"{worker}.log", own)


def _agent_eval(stack: PrefectStack, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI as the parent: its flow runs here, its shards on the workers."""
    command = [sys.executable, "-m", "agent_eval.cli", *args]
    env = {**stack.env, "HOME": str(stack.home / "parent"), "AGENT_EVAL_HOME": str(stack.home / "parent-ae")}
    return subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)


def _ran(stack: PrefectStack) -> dict[str, set[str]]:
    """The shard flow runs each worker ran, by name, from its log."""
    return {w: set(RAN.findall((stack.home / f"{w}.log").read_text(errors="replace"))) for w in WORKERS}


def _report(stack: PrefectStack, run_id: str) -> dict[str, Any]:
    shown = _agent_eval(stack, "show", run_id, "--json")
    assert shown.returncode == 0, shown.stderr[-2000:]
    return json.loads(shown.stdout)  # type: ignore[no-any-return]


def _latest_run_id(stack: PrefectStack) -> str:
    runs = json.loads(_agent_eval(stack, "history", "--json", "--limit", "1").stdout)
    return str(runs[0]["run_id"])


def _outcomes(report: dict[str, Any]) -> list[tuple[Any, ...]]:
    """What must match between a sharded and an unsharded run: each case run's outcome and scores."""
    return sorted(
        (case["eval_set_id"], case["eval_id"], case["run_index"], case["status"],
         tuple(sorted((m["metric_name"], m["score"], m["status"]) for m in case["metrics"])))
        for case in report["cases"]
    )  # fmt: skip


def test_a_sharded_run_spreads_over_two_workers_and_equals_the_unsharded_run(
    pool: PrefectStack, tmp_path: Path
) -> None:
    path, messages = write_echo_set(tmp_path, [f"case_{i:03d}" for i in range(CASES)])
    agent = "tests.flows.agents_for_tests:echo_agent"
    before = _ran(pool)

    sharded = _agent_eval(pool, "run", str(path), "--agent", agent, "--shards", "4", "--max-concurrency", "8")
    sharded_id = _latest_run_id(pool)
    unsharded = _agent_eval(pool, "run", str(path), "--agent", agent, "--max-concurrency", "8")
    unsharded_id = _latest_run_id(pool)

    logs = {w: (pool.home / f"{w}.log").read_text(errors="replace")[-2000:] for w in WORKERS}
    assert sharded.returncode == 0, sharded.stdout[-2000:] + sharded.stderr[-3000:] + str(logs)
    assert unsharded.returncode == 0, unsharded.stdout[-2000:] + unsharded.stderr[-2000:]
    assert f"Total: {CASES}  Passed: {CASES}" in sharded.stdout
    took = {w: runs - before[w] for w, runs in _ran(pool).items()}
    assert all(took.values()), took  # both workers ran shards
    assert sum(len(runs) for runs in took.values()) == 4  # four shards, none submitted twice
    reports = [_report(pool, run_id) for run_id in (sharded_id, unsharded_id)]
    assert len(reports[0]["cases"]) == CASES
    assert _outcomes(reports[0]) == _outcomes(reports[1])
    assert reports[0]["summary"]["cached_case_runs"] == 0
    assert sorted(case["eval_id"] for case in reports[0]["cases"]) == sorted(messages)


@pytest.mark.timeout(660)  # its own bounds: 180 s until the kill, 420 s for the run to end (crash detection)
def test_a_worker_killed_mid_shard_loses_no_case_and_reinvokes_none_that_finished(
    pool: PrefectStack, tmp_path: Path
) -> None:
    """Two invocations at a time per shard, 0.2 s each: worker-1 and its flow runs are SIGKILLed once 60 calls
    are logged. Its shards fall silent, are set Crashed after 45 s and run again on the other worker, which
    invokes only what the store does not hold."""
    path, messages = write_echo_set(tmp_path, [f"slow_{i:03d}" for i in range(CASES)])
    calls = Path(pool.env[CALL_LOG_ENV])
    calls.write_text("")
    command = [sys.executable, "-m", "agent_eval.cli", "run", str(path), "--shards", "4", "--max-concurrency", "8"]
    command += ["--agent", "tests.flows.agents_for_tests:logged_slow_agent", "-v"]
    env = {**pool.env, "HOME": str(pool.home / "parent"), "AGENT_EVAL_HOME": str(pool.home / "parent-ae")}
    parent = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)  # fmt: skip
    try:
        _wait_for_lines(calls, 60, timeout=180)
        _kill_tree(pool.processes[1].pid)  # the stack's processes: the server, worker-1, worker-2
        output, _ = parent.communicate(timeout=420)
    finally:
        parent.kill()

    assert parent.returncode == 0, output[-4000:]
    assert "ended Crashed" in output
    assert re.search(rf"agent-eval: [1-9]\d*/{CASES} case runs", output), "progress never counted the shards' work"
    report = _report(pool, _latest_run_id(pool))
    assert report["status"] == "completed"
    assert sorted(case["eval_id"] for case in report["cases"]) == sorted(messages)
    counted = Counter(calls.read_text().splitlines())
    assert set(counted) == set(messages.values())
    twice = [message for message, n in counted.items() if n > 1]
    # Only what was in flight when the worker died is invoked again: two per shard it held (at most two shards).
    assert len(twice) <= 4 and all(counted[message] == 2 for message in twice), twice


def _wait_for_lines(path: Path, count: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(path.read_text().splitlines()) >= count:
            return
        time.sleep(0.2)
    raise TimeoutError(f"fewer than {count} calls logged in {timeout} s")


def _kill_tree(pid: int) -> None:
    """SIGKILL a process and every descendant, as a machine that dies takes them all."""
    children = _descendants(pid)
    for victim in [pid, *children]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(victim, signal.SIGKILL)


def _descendants(pid: int) -> list[int]:
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            child = int(entry.name)
            found += [child, *_descendants(child)]
    return found
