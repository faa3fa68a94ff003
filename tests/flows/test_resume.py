"""A run killed mid-way (kill -9 of the process) is marked `crashed` as soon as anyone looks (its process is
gone), and `rerun RUN_ID --only-failed` resumes it: it covers every case without a passing result and invokes only
those whose answer had not finished (the finished answers are in Prefect's result storage, shared by both
processes, stamped with the killed run)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from sqlmodel import Session, select

from agent_eval.store import CaseRecord, Run, get_engine, get_run, list_runs, mark_abandoned_runs, mark_stale_runs
from tests.conftest import REPO_ROOT
from tests.flows.helpers import write_echo_set

pytestmark = pytest.mark.flow

WORKER = "tests/flows/resume_worker.py"
CASES = 10
FINISHED_BEFORE_KILL = 4
STARTUP_TIMEOUT = 120.0  # the worker starts Prefect's temporary server itself (about 10 s)


def _log_lines(log: Path) -> list[str]:
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def _recorded_cases(url: str) -> list[str]:
    """The eval ids of the case runs stored so far, over every run."""
    with Session(get_engine(url)) as session:
        return list(session.exec(select(CaseRecord.eval_id)).all())


def _stored_messages(url: str, run_id: str, messages: dict[str, str]) -> set[str]:
    with Session(get_engine(url)) as session:
        ids = session.exec(select(CaseRecord.eval_id).where(CaseRecord.run_id == run_id)).all()
    return {messages[eval_id] for eval_id in ids}


def _worker_env(tmp_path: Path, url: str, log: Path) -> dict[str, str]:
    """Both processes share the store, Prefect's home and its result storage (the invocation cache)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API_")}
    env.update(
        AGENT_EVAL_DB_URL=url,
        AGENT_EVAL_HOME=str(tmp_path / "agent_eval"),
        PREFECT_HOME=str(tmp_path / "prefect"),
        PREFECT_LOCAL_STORAGE_PATH=str(tmp_path / "prefect" / "storage"),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        RESUME_AGENT_LOG=str(log),
    )
    return env


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill -9 what is left of the worker's process group (its temporary Prefect server)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


def test_a_run_killed_midway_is_crashed_and_its_rerun_invokes_only_the_unfinished_cases(tmp_path: Path) -> None:
    names = [f"case{i:02d}" for i in range(CASES)]
    eval_file, messages = write_echo_set(tmp_path, names)
    url = f"sqlite:///{tmp_path / 'store.db'}"
    log = tmp_path / "agent.log"
    env = _worker_env(tmp_path, url, log)

    errors = tmp_path / "first.stderr"
    with errors.open("wb") as stderr:
        first = subprocess.Popen(
            [sys.executable, WORKER, str(eval_file)],
            cwd=REPO_ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
        )
    try:
        # Wait for 4 finished cases: logged by the agent AND stored by the flow, which stores a case run only
        # once its task has completed, i.e. once its result is in the cache (the store is read only once the
        # log shows the worker has created it).
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while len(_log_lines(log)) < FINISHED_BEFORE_KILL or len(_recorded_cases(url)) < FINISHED_BEFORE_KILL:
            assert first.poll() is None, f"the worker ended early: {errors.read_text(errors='replace')[-2000:]}"
            assert time.monotonic() < deadline, "the worker did not finish 4 cases in time"
            time.sleep(0.02)
        os.kill(first.pid, signal.SIGKILL)
        assert first.wait(timeout=30) == -signal.SIGKILL
    finally:
        _kill_group(first)
    logged_before = _log_lines(log)
    engine = get_engine(url)
    (killed,) = list_runs(engine)
    stored_before = _stored_messages(url, killed.id, messages)
    assert killed.status == "running" and killed.completed_at is None

    # Anyone looking at the store (every CLI command does this first) ends it: its process is gone.
    assert mark_abandoned_runs(engine) == [killed.id]
    crashed = get_run(killed.id, engine)
    assert crashed.status == "crashed" and "ended without finishing the run" in (crashed.error or "")

    second = subprocess.run(
        [sys.executable, WORKER, "--rerun", killed.id, "--only-failed"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=STARTUP_TIMEOUT + 60,
        check=False,
    )

    assert second.returncode == 0, second.stderr[-3000:]
    resumed = json.loads(second.stdout.strip().splitlines()[-1])
    logged_after = _log_lines(log)[len(logged_before) :]
    everything = set(messages.values())
    # the first process was killed mid-way, after 4 cases (maybe one more), each logged once; the 4 stored
    assert FINISHED_BEFORE_KILL <= len(logged_before) < CASES
    assert len(set(logged_before)) == len(logged_before)
    assert set(logged_before[:FINISHED_BEFORE_KILL]) <= stored_before
    # no case had passed (none was scored), so the rerun covers all of them; it invoked exactly those whose
    # answer had not been stored, each once, and took the killed run's stored answers from the cache
    assert set(logged_after) == everything - stored_before
    assert len(logged_after) == len(set(logged_after))
    assert resumed == {"run_id": resumed["run_id"], "cases": CASES, "passed": CASES}
    done = get_run(resumed["run_id"], engine)
    assert (done.status, done.total, done.passed, done.source_run_id) == ("completed", CASES, CASES, killed.id)
    assert _stored_messages(url, done.id, messages) == everything
    assert mark_stale_runs(timedelta(0), engine) == []
    with Session(engine) as session:
        assert sorted(session.exec(select(Run.status)).all()) == ["completed", "crashed"]
