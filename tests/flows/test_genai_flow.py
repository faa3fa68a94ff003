"""A GenaiAgent (and an LLM user simulator) through the real `agent-eval` flow, its model the fake Gemini server.

The agent below is defined at import time with no client: like a user's agent, it builds `genai.Client()` from
the environment when a case runs, so the tests point GOOGLE_GEMINI_BASE_URL at the fake server first.
"""

from __future__ import annotations

import io
import json
import logging
import threading
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agent_eval import evaluate
from agent_eval.agents.genai_agent import GenaiAgent
from agent_eval.runtime.progress import install_progress, uninstall_progress
from agent_eval.schema import EvalStatus, content_text
from tests.fakes.gemini_server import (
    FAKE_API_KEY,
    FakeGeminiServer,
    call_reply,
    error_reply,
    text_reply,
)

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_server")]

TOOL_CALLS: Counter[str] = Counter()
AGENT = "tests.flows.test_genai_flow:agent"


def get_user_preferences(user_id: str) -> dict[str, Any]:
    """The user's saved preferences."""
    TOOL_CALLS[f"get_user_preferences:{user_id}"] += 1
    return {"temperature": 23}


def set_temperature(location: str, temperature: int) -> str:
    """Set the thermostat of a room."""
    TOOL_CALLS[f"set_temperature:{location}"] += 1
    return "ok"


agent = GenaiAgent(
    model="agent-model",
    instruction="You control the home.",
    tools=[get_user_preferences, set_temperature],
    name="home-genai",
)


class HomeModel:
    """Plays both models: the agent's (by the conversation's first message) and the simulated user's."""

    def __init__(self) -> None:
        self.attempts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Any:
        if "playing the user" in json.dumps(body.get("systemInstruction")):
            return self.user(body["contents"][0]["parts"][0]["text"])
        contents = body["contents"]
        first = contents[0]["parts"][0]["text"]
        with self._lock:
            self.attempts[first] += 1
            attempt = self.attempts[first]
        if first.startswith("bad"):
            return error_reply(400, "unsupported request")
        if first.startswith("flaky") and attempt <= 2:
            return error_reply(429, "quota")
        return self.agent(first, contents)

    def agent(self, first: str, contents: list[dict[str, Any]]) -> Any:
        last = contents[-1]["parts"][0]
        if first.startswith("usual") and len(contents) == 1:
            return call_reply(("get_user_preferences", {"user_id": first.split()[1]}))
        if "functionResponse" in last and last["functionResponse"]["name"] == "get_user_preferences":
            temperature = last["functionResponse"]["response"]["temperature"]
            return call_reply(("set_temperature", {"location": "living room", "temperature": temperature}))
        if "functionResponse" in last:
            return text_reply("Done, the temperature is set.")
        if last.get("text", "").startswith("Please set the kitchen"):
            return call_reply(("set_temperature", {"location": "kitchen", "temperature": 21}))
        return text_reply("hello there")

    def user(self, transcript: str) -> Any:
        if transcript.count("USER:") == 1:
            return text_reply("Please set the kitchen to 21 degrees.")
        return text_reply("Thank you. </finished>")


@pytest.fixture
def home_model(fake_gemini: FakeGeminiServer, monkeypatch: pytest.MonkeyPatch) -> HomeModel:
    """The fake server answering as `HomeModel`, and the environment pointing google-genai at it."""
    for name in ("GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GOOGLE_API_KEY", FAKE_API_KEY)
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_gemini.base_url)
    model = HomeModel()
    fake_gemini.respond_with(model)
    return model


def turn(message: str, response: str, tool_uses: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "user_content": {"role": "user", "parts": [{"text": message}]},
        "final_response": {"role": "model", "parts": [{"text": response}]},
        "intermediate_data": {"tool_uses": tool_uses},
    }


def write_eval_set(folder: Path, cases: list[dict[str, Any]], config: dict[str, Any]) -> Path:
    path = folder / "home.evalset.json"
    path.write_text(json.dumps({"eval_set_id": f"home_{uuid.uuid4().hex[:8]}", "eval_cases": cases}), "utf-8")
    (folder / "test_config.json").write_text(json.dumps(config), "utf-8")
    return path


def chain_case(eval_id: str, token: str, temperature: int, **extra: Any) -> dict[str, Any]:
    calls = [
        {"name": "get_user_preferences", "args": {"user_id": token}},
        {"name": "set_temperature", "args": {"location": "living room", "temperature": temperature}},
    ]
    message = f"usual {token} please"
    return {"eval_id": eval_id, "conversation": [turn(message, "Done, the temperature is set.", calls)], **extra}


def test_genai_agent_cases_through_the_flow(home_model: HomeModel, tmp_path: Path, sqlite_url: str) -> None:
    token, mocked_token = uuid.uuid4().hex[:8], uuid.uuid4().hex[:8]
    mock = {"tool_name": "get_user_preferences", "response": {"temperature": 19}}
    cases = [
        chain_case("chain", token, 23),
        chain_case("mocked", mocked_token, 19, tool_mocks=[mock]),
        {"eval_id": "flaky", "conversation": [turn(f"flaky {token}", "hello there", [])]},
        {"eval_id": "bad", "conversation": [turn(f"bad {token}", "hello there", [])]},
    ]
    config = {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}}

    report = evaluate(write_eval_set(tmp_path, cases, config), agent=AGENT, db_url=sqlite_url)

    by_id = {case.eval_id: case for case in report.cases}
    assert {eval_id for eval_id, case in by_id.items() if case.passed} == {"chain", "mocked", "flaky"}
    assert TOOL_CALLS[f"get_user_preferences:{token}"] == 1
    assert TOOL_CALLS[f"get_user_preferences:{mocked_token}"] == 0  # the mock answered
    assert home_model.attempts[f"flaky {token}"] == 3  # two 429s retried by the flow
    assert home_model.attempts[f"bad {token}"] == 1  # a 400 is not retried
    bad = by_id["bad"]
    assert bad.failure == 1 and bad.status is EvalStatus.FAILED
    assert bad.agent_run.error is not None and "400 INVALID_ARGUMENT" in bad.agent_run.error
    usage = by_id["chain"].agent_run.token_usage
    assert usage is not None and (usage.input_tokens, usage.output_tokens) == (30, 15)
    assert report.agent_reference == "home-genai"


def test_a_simulated_user_drives_a_scenario_case(home_model: HomeModel, tmp_path: Path, sqlite_url: str) -> None:
    scenario = {
        "starting_prompt": f"Hello {uuid.uuid4().hex[:8]}",
        "conversation_plan": "Get the kitchen set to 21 degrees, then say thanks.",
        "user_persona": "EXPERT",
    }
    config = {
        "criteria": {"tool_trajectory_avg_score": 1.0},
        "user_simulator_config": {"type": "llm_backed", "model": "sim-model", "max_allowed_invocations": 5},
    }
    eval_file = write_eval_set(tmp_path, [{"eval_id": "kitchen", "conversation_scenario": scenario}], config)

    report = evaluate(eval_file, agent=AGENT, db_url=sqlite_url)

    invocations = report.cases[0].agent_run.invocations
    assert [content_text(i.user_content) for i in invocations] == [
        scenario["starting_prompt"],
        "Please set the kitchen to 21 degrees.",
    ]
    assert [content_text(i.final_response) for i in invocations] == ["hello there", "Done, the temperature is set."]
    calls = invocations[1].intermediate_data.tool_uses  # type: ignore[union-attr]
    assert [(c.name, c.args) for c in calls] == [("set_temperature", {"location": "kitchen", "temperature": 21})]


def test_a_genai_run_logs_no_cache_key_errors_and_one_line_per_failed_case(
    home_model: HomeModel, tmp_path: Path, sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    token = uuid.uuid4().hex[:8]
    cases = [chain_case("chain", token, 23), {"eval_id": "bad", "conversation": [turn(f"bad {token}", "hi", [])]}]
    config = {"criteria": {"tool_trajectory_avg_score": 1.0}}

    shown = io.StringIO()
    install_progress(shown, enabled=False)  # the sink the CLI installs (`-q`: only failed case runs' lines)
    try:
        with caplog.at_level(logging.INFO):
            report = evaluate(write_eval_set(tmp_path, cases, config), agent=AGENT, db_url=sqlite_url)
    finally:
        uninstall_progress()

    assert [c.eval_id for c in report.failures()] == ["bad"]
    assert not [r.getMessage() for r in caplog.records if "cache key" in r.getMessage()]
    events = shown.getvalue().splitlines()
    assert len(events) == 1
    assert events[0].startswith(f"agent-eval: case {report.eval_set_ids[0]}/bad failed after 1 attempt(s): ")
