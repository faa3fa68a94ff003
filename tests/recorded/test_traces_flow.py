"""The `agent-eval-traces` flow on a real (temporary) Prefect server: scheduled runs over a growing spans folder
score each trace once, and a run killed in the middle leaves the watermark where the next run picks up every
trace it did not finish."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from prefect.settings import PREFECT_API_URL
from sqlmodel import Session, select

from agent_eval.flows import TracesRequest, traces_flow
from agent_eval.io.recorded import RecordedSource
from agent_eval.store import CaseRecord, Run, RunStatus, get_engine, mark_abandoned_runs
from agent_eval.store.watermarks import read_watermark
from tests.recorded.otlp_lines import SECOND, append_traces

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_server")]

REPO_ROOT = Path(__file__).resolve().parents[2]

KILLER = """
import os, signal
from agent_eval.schema import EvaluationResult

def kill_the_run(eval_metric, actual_invocations, expected_invocations, conversation_scenario=None):
    os.kill(os.getpid(), signal.SIGKILL)  # as a worker killed mid-run: no clean-up at all
    return EvaluationResult()
"""


def run_traces(request: TracesRequest) -> Any:
    return asyncio.run(traces_flow(request))


def scored(db_url: str) -> list[tuple[str, list[str]]]:
    """Each run (oldest first): its status and the session ids it scored."""
    with Session(get_engine(db_url)) as session:
        runs = session.exec(select(Run).order_by(Run.started_at)).all()
        return [
            (run.status, sorted(c.eval_id for c in session.exec(select(CaseRecord).where(CaseRecord.run_id == run.id))))
            for run in runs
        ]


def test_scheduled_runs_score_each_trace_once_as_the_folder_grows(tmp_path: Path, sqlite_url: str) -> None:
    spans = tmp_path / "spans"
    spans.mkdir()
    now = time.time_ns()
    append_traces(spans, "a.jsonl", [("s1", 1, now - 3 * 3600 * SECOND), ("s2", 2, now - 2 * 3600 * SECOND)])
    request = TracesRequest(
        recorded=RecordedSource(paths=[str(spans)]), db_url=sqlite_url, settle_seconds=0, watermark="prod"
    )

    first = run_traces(request)
    after_first = read_watermark("prod", get_engine(sqlite_url))
    append_traces(spans, "b.jsonl", [("s3", 3, time.time_ns())])  # recorded after the first run
    time.sleep(0.05)
    second = run_traces(request)
    nothing_new = asyncio.run(traces_flow(request, return_state=True))

    assert first.summary.total == 2
    assert scored(sqlite_url) == [("completed", ["s1", "s2"]), ("completed", ["s3"])]
    assert after_first is not None and read_watermark("prod", get_engine(sqlite_url)) > after_first
    assert "no recorded turn in" in nothing_new.message
    # Other sessions each window, yet comparable: the first run is the second's baseline, compared as samples.
    assert second.regression["baseline_run_id"] == first.run_id
    assert second.regression["notes"] == [
        "recorded traffic: 2 baseline and 1 current sessions compared as samples, not case by case "
        "(pass rate 100.0% → 100.0%)"
    ]
    assert [m["metric_name"] for m in second.regression["metrics"]] == [
        "tool_call_count_v1",
        "inference_call_count_v1",
        "token_usage_v1",
        "invocation_duration_v1",
    ]


def test_a_killed_run_leaves_the_watermark_and_the_next_run_scores_what_it_did_not_finish(
    tmp_path: Path, sqlite_url: str
) -> None:
    spans = tmp_path / "spans"
    spans.mkdir()
    now = time.time_ns()
    append_traces(spans, "a.jsonl", [("s1", 1, now - 3 * 3600 * SECOND)])
    request = TracesRequest(
        recorded=RecordedSource(paths=[str(spans)]), db_url=sqlite_url, settle_seconds=0, watermark="prod"
    )
    run_traces(request)
    watermark = read_watermark("prod", get_engine(sqlite_url))
    append_traces(spans, "b.jsonl", [("s2", 2, time.time_ns()), ("s3", 3, time.time_ns())])
    (tmp_path / "killer_metric.py").write_text(KILLER, encoding="utf-8")
    config = {
        "criteria": {"kill": 0.5},
        "custom_metrics": {"kill": {"code_config": {"name": "killer_metric.kill_the_run"}}},
    }
    killed_request = request.model_copy(update={"config": config})
    script = (
        "import asyncio, sys; from agent_eval.flows import TracesRequest, traces_flow; "
        "asyncio.run(traces_flow(TracesRequest.model_validate_json(sys.argv[1])))"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO_ROOT)]),
        # The session's server: a temporary one of the child's own would outlive the SIGKILL (Prefect's child).
        "PREFECT_API_URL": str(PREFECT_API_URL.value()),
    }

    killed = subprocess.run(
        [sys.executable, "-c", script, killed_request.model_dump_json()],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert killed.returncode == -9, killed.stderr[-2000:]
    assert read_watermark("prod", get_engine(sqlite_url)) == watermark  # the killed run moved nothing

    run_traces(request)

    ended = mark_abandoned_runs(get_engine(sqlite_url))  # as the next CLI command does: its process is gone
    runs = scored(sqlite_url)
    assert runs[0] == ("completed", ["s1"])
    assert runs[1] == (RunStatus.CRASHED, ["s2", "s3"]) and len(ended) == 1  # invoked, never scored
    assert runs[2] == ("completed", ["s2", "s3"])
    assert read_watermark("prod", get_engine(sqlite_url)) > watermark
