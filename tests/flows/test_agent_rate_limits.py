"""Agents that are rate limited (issue 32, item 3) through the real flow: an HTTP agent whose server answers 429
past 3 requests at once, and an in-process GenaiAgent whose own model (the fake Gemini server, through the real
google-genai client) answers 429 `RESOURCE_EXHAUSTED` with a `RetryInfo` past 3 calls at once. At
`--max-concurrency 16` every case run completes, each refused try is retried after the provider's delay without
spending a task retry, the run says where its limit settled, and the next run of the agent starts there. A
server that refuses until the deadline makes an outage, not a failing agent."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agent_eval.agents.genai_agent import GenaiAgent
from agent_eval.flows import case_limit
from agent_eval.store import get_engine, list_runs, load_report, settled_limits
from tests.agents.http_servers import serve
from tests.fakes.gemini_server import FakeGeminiServer
from tests.fakes.limited_gemini import RETRY_INFO
from tests.flows.helpers import cli, evaluate_with_a_limited_model, write_echo_set

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_server", "quiet_cli_env")]

CASES = 24
LIMIT = 3


class LimitedAgentServer:
    """An echo agent (`write_echo_set`'s expectations) that holds each request 50 ms and answers 429 with a
    Gemini-style `RetryInfo` of 50 ms to a request past `limit` in flight; `limit=0` refuses every one."""

    def __init__(self, limit: int, retry_delay: str = "0.05s") -> None:
        self.limit, self.retry_delay = limit, retry_delay
        self.in_flight = self.most_in_flight = self.answered = self.refused = 0
        self._lock = threading.Lock()

    def handle(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        del path
        if method != "POST":
            return 200, {}
        with self._lock:
            if self.in_flight >= self.limit:
                self.refused += 1
                return 429, self._refusal()
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            time.sleep(0.05)
            prompt = body["prompt"]
            trajectory = [{"tool_name": "lookup", "tool_input": {"query": prompt}}]
            return 200, {"response": f"answer: {prompt}", "trajectory": trajectory}
        finally:
            with self._lock:
                self.in_flight -= 1
                self.answered += 1

    def _refusal(self) -> dict[str, Any]:
        details = [{"@type": RETRY_INFO, "retryDelay": self.retry_delay}]
        return {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "quota", "details": details}}


def test_an_http_agent_limited_to_3_at_once_completes_every_case_at_max_concurrency_16(
    tmp_path: Path, sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    eval_file, _ = write_echo_set(tmp_path, [f"case{i:02d}" for i in range(CASES)])
    server = LimitedAgentServer(LIMIT)
    with serve(server.handle) as (url, _requests):
        code, out, err = cli(
            capsys, "run", str(eval_file), "--agent", f"{url}/agent", "--db-url", sqlite_url, "--max-concurrency", "16"
        )

    engine = get_engine(sqlite_url)
    (run,) = list_runs(engine)
    report = load_report(run.id, engine)
    assert code == 0, err
    assert server.most_in_flight <= LIMIT and server.refused > 0 and server.answered == CASES
    assert report.summary.passed == CASES and report.summary.agent_failures == 0
    stats = report.summary.invocations
    assert (stats["rate_limited"], stats["lost"]) == (server.refused, 0)
    assert 1 <= stats["concurrency"] <= 16 and stats["concurrency_max"] <= 16
    # every refused try was one more attempt of its case run, none a Prefect task retry
    assert sum(case.agent_run.attempts for case in report.cases) == CASES + server.refused
    line = (
        f"agent: settled at {stats['concurrency']} concurrent case run{'s' if stats['concurrency'] != 1 else ''} "
        f"(at most {stats['concurrency_max']}), {server.refused} rate-limited case runs retried, 0 lost"
    )
    assert line in out.splitlines()
    assert settled_limits(f"{url}/agent", engine).case_runs == stats["concurrency"]


def test_an_agent_still_rate_limited_at_the_deadline_is_an_outage_after_one_try_each(
    tmp_path: Path, sqlite_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(case_limit, "RATE_LIMIT_DEADLINE", 0.5)
    eval_file, _ = write_echo_set(tmp_path, ["one", "two"])
    server = LimitedAgentServer(0, retry_delay="1s")  # refuses every call, asks for 1 s: past the deadline
    with serve(server.handle) as (url, _requests):
        code, out, err = cli(capsys, "run", str(eval_file), "--agent", f"{url}/agent", "--db-url", sqlite_url)

    engine = get_engine(sqlite_url)
    (run,) = list_runs(engine)
    report = load_report(run.id, engine)
    assert code == 4
    assert server.refused == 2  # one try each: neither the task's retries nor ours were spent
    assert run.status == "errored"
    assert (run.error or "").startswith(
        "could not evaluate: 2 of 2 case runs could not reach the agent or were rate limited (first: "
    )
    assert {case.agent_run.error_kind for case in report.cases} == {"rate_limit"}
    assert all(
        (case.agent_run.error or "").startswith("rate limited until the deadline (0.5 s, 1 try): TransientAgentError")
        for case in report.cases
    )
    failures = [line for line in err.splitlines() if line.startswith("agent-eval: case ")]
    assert len(failures) == 2 and all("was rate limited after 1 attempt(s): rate limited" in f for f in failures)
    assert run.summary["invocations"]["lost"] == report.summary.invocations["lost"] == 2
    assert "agent: settled at " in out and ", 0 rate-limited case runs retried, 2 lost" in out


# ------------------------------------------------------------------------------- an in-process genai agent
AGENT = "tests.flows.test_agent_rate_limits:agent"
agent = GenaiAgent(model="agent-model", instruction="Answer with 'answer: ' and the question.", name="limited")


def test_a_genai_agent_whose_model_is_limited_completes_every_case_and_the_next_run_starts_where_it_settled(
    tmp_path: Path, sqlite_url: str, fake_gemini: FakeGeminiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    report, provider = evaluate_with_a_limited_model(
        AGENT,
        cases=CASES,
        limit=LIMIT,
        tmp_path=tmp_path,
        sqlite_url=sqlite_url,
        fake_gemini=fake_gemini,
        monkeypatch=monkeypatch,
    )

    assert provider.most_in_flight <= LIMIT and provider.refused > 0 and provider.answered == CASES
    assert report.summary.passed == CASES
    stats = report.summary.invocations
    assert (stats["rate_limited"], stats["lost"]) == (provider.refused, 0)
    assert {case.agent_run.error_kind for case in report.cases} == {None}
    (run,) = list_runs(get_engine(sqlite_url))
    assert settled_limits(run.agent_reference, get_engine(sqlite_url)).case_runs == stats["concurrency"]
