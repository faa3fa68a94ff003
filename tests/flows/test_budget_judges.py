"""A run's budget holds over its judge calls too (issue 31, item 5): once the judges' spend would pass it, no
judge call starts, the judged results it did not judge are not evaluated with the reason, and the run ends
`stopped`. Through the real flow, the real google-genai client and the fake Gemini server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_eval import evaluate
from agent_eval.schema import EvalStatus
from agent_eval.store import get_engine, get_run
from tests.fakes.gemini_server import CREDENTIAL_VARIABLES, FAKE_API_KEY, FakeGeminiServer
from tests.flows.helpers import write_echo_set
from tests.flows.judge_scripts import JudgeRouter

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_server")]

ECHO_AGENT = "tests.flows.agents_for_tests:echo_agent"
JUDGE_MODEL = "budget-judge"
# The fake server's answers report 10 input and 5 output tokens each, answered by model "fake-gemini" (what the
# judge's usage is counted under): at $1,000 per million both ways, a judge call costs $0.015.
PRICE = {"input_per_mtok": 1000.0, "output_per_mtok": 1000.0}
PRICING = {JUDGE_MODEL: PRICE, "fake-gemini": PRICE}


@pytest.fixture
def judge(fake_gemini: FakeGeminiServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[JudgeRouter]:
    """The real judge client pointed at the fake server, one judge call at a time (a fresh judge cache)."""
    for name in CREDENTIAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GOOGLE_API_KEY", FAKE_API_KEY)
    monkeypatch.setenv("AGENT_EVAL_GEMINI_BASE_URL", fake_gemini.base_url)
    monkeypatch.setenv("AGENT_EVAL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("AGENT_EVAL_JUDGE_CONCURRENCY", "1")
    router = JudgeRouter()
    fake_gemini.respond_with(router)
    yield router
    assert router.problems == []


def test_the_judges_spend_stops_the_run_once_the_next_call_would_pass_the_budget(
    judge: JudgeRouter, fake_gemini: FakeGeminiServer, tmp_path: Path, sqlite_url: str
) -> None:
    path, _ = write_echo_set(tmp_path, ["a", "b", "c", "d", "e"])
    config = {
        "criteria": {
            "final_response_match_v2": {
                "threshold": 0.5,
                "judge_mode": "agent-eval",
                "judge_model_options": {"judge_model": JUDGE_MODEL, "num_samples": 1},
            }
        },
        "pricing": PRICING,
        "budget": {"usd": 0.05},
    }

    report = evaluate(path, agent=ECHO_AGENT, config=config, db_url=sqlite_url)
    spents = ("0.0150", "0.0300", "0.0450")

    # one call at a time: 0 + 0 (nothing known yet), 0.015 + 0.015, 0.030 + 0.015 = 0.045 start; 0.045 + 0.015 =
    # 0.060 > 0.05 does not: 3 judge calls, the other 2 case runs are not judged
    assert len(fake_gemini.requests) == 3
    judged = [case.metrics[0] for case in report.cases]
    assert sorted(m.status for m in judged) == [EvalStatus.PASSED] * 3 + [EvalStatus.NOT_EVALUATED] * 2
    refused = [m for m in judged if m.status is EvalStatus.NOT_EVALUATED]
    # refused when one, two or all three had finished (calls run one at a time, but are reserved before)
    assert all(
        any(f"not judged: budget of $0.0500 reached (${spent} spent)" in (m.reason or "") for spent in spents)
        for m in refused
    )
    assert report.stopped
    assert report.error == "budget of $0.0500 reached: $0.0450 spent, 0 case runs not started"
    assert report.summary.cost is not None and report.summary.cost.judge_usd == pytest.approx(0.045)
    stored = get_run(report.run_id, get_engine(sqlite_url))
    assert (stored.status, stored.error) == ("stopped", report.error)
