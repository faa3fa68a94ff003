"""An in-process ADK agent whose own model call is rate limited (issue 32, item 3), through the real flow: ADK's
`LlmAgent` calls the fake Gemini server through google-genai (`GOOGLE_GEMINI_BASE_URL`), which holds 3 calls at
once and answers the rest 429 `RESOURCE_EXHAUSTED` with a `RetryInfo` of 50 ms. ADK does not retry (its
`retry_options` default to none): the `ClientError` reaches agent-eval, which waits the delay and runs the case
again. At `max_concurrency=16` every case run completes and every refusal is one counted retry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("google.adk.agents")

from google.adk.agents import LlmAgent

from agent_eval import evaluate
from tests.fakes.gemini_server import FAKE_API_KEY, FakeGeminiServer, text_reply
from tests.fakes.limited_gemini import LimitedProvider
from tests.flows.helpers import write_echo_set

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_server", "quiet_cli_env")]

CASES = 16
root_agent = LlmAgent(name="limited_echo", model="gemini-2.5-flash", instruction="Answer with 'answer: ' and it.")


def _echo_model(body: Any) -> Any:
    return text_reply(f"answer: {body['contents'][-1]['parts'][0]['text']}")


def test_an_adk_agent_whose_model_is_limited_completes_every_case_run(
    tmp_path: Path, sqlite_url: str, fake_gemini: FakeGeminiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", FAKE_API_KEY)
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_gemini.base_url)
    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "false")
    provider = LimitedProvider(_echo_model, latency=0.05, max_concurrent=3, retry_delay=0.05)
    fake_gemini.respond_with(provider)
    eval_file, _ = write_echo_set(tmp_path, [f"case{i:02d}" for i in range(CASES)])
    criteria = tmp_path / "test_config.json"
    criteria.write_text('{"criteria": {"response_match_score": 0.8}}')

    try:
        report = evaluate(
            eval_file, agent=f"{__name__}:root_agent", db_url=sqlite_url, max_concurrency=16, config=criteria
        )
    finally:
        provider.stop()

    assert provider.most_in_flight <= 3 and provider.refused > 0 and provider.answered == CASES
    assert report.summary.passed == CASES
    assert (report.summary.invocations["rate_limited"], report.summary.invocations["lost"]) == (provider.refused, 0)
    assert sum(case.agent_run.attempts for case in report.cases) == CASES + provider.refused
