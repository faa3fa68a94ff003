"""An in-process ADK agent whose own model call is rate limited (issue 32, item 3), through the real flow: ADK's
`LlmAgent` calls the fake Gemini server through google-genai (`GOOGLE_GEMINI_BASE_URL`), which holds 3 calls at
once and answers the rest 429 `RESOURCE_EXHAUSTED` with a `RetryInfo` of 50 ms. ADK does not retry (its
`retry_options` default to none): the `ClientError` reaches agent-eval, which waits the delay and runs the case
again. At `max_concurrency=16` every case run completes and every refusal is one counted retry."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("google.adk.agents")

from google.adk.agents import LlmAgent

from tests.fakes.gemini_server import FakeGeminiServer
from tests.flows.helpers import evaluate_with_a_limited_model

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_server", "quiet_cli_env")]

CASES = 16
root_agent = LlmAgent(name="limited_echo", model="gemini-2.5-flash", instruction="Answer with 'answer: ' and it.")


def test_an_adk_agent_whose_model_is_limited_completes_every_case_run(
    tmp_path: Path, sqlite_url: str, fake_gemini: FakeGeminiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    report, provider = evaluate_with_a_limited_model(
        f"{__name__}:root_agent",
        cases=CASES,
        limit=3,
        tmp_path=tmp_path,
        sqlite_url=sqlite_url,
        fake_gemini=fake_gemini,
        monkeypatch=monkeypatch,
    )

    assert provider.most_in_flight <= 3 and provider.refused > 0 and provider.answered == CASES
    assert report.summary.passed == CASES
    assert (report.summary.invocations["rate_limited"], report.summary.invocations["lost"]) == (provider.refused, 0)
    assert sum(case.agent_run.attempts for case in report.cases) == CASES + provider.refused
