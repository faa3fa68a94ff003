"""The HTTP adapters against real local servers: ADK api_server protocol, generic JSON endpoint, errors."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_eval.agents.base import TransientAgentError
from agent_eval.agents.errors import AgentFailure
from agent_eval.agents.http_agent import AGENT_VERSION_ENV, AdkApiAgent, HttpAgent, view_of_json_event
from agent_eval.agents.resolve import resolve_agent
from agent_eval.errors import EvalInputError
from agent_eval.schema import AgentRun, EvalCase, ModelUsage
from tests.agents.http_servers import FakeAdkApiServer, JsonAgentServer, Recorded, serve

REPO_ROOT = Path(__file__).resolve().parents[2]


def make_case(*messages: str, **fields: Any) -> EvalCase:
    conversation = [{"user_content": {"role": "user", "parts": [{"text": m}]}} for m in messages]
    return EvalCase.model_validate({"eval_id": "case", "conversation": conversation, **fields})


def run(agent: Any, case: EvalCase) -> AgentRun:
    result: AgentRun = asyncio.run(agent.run_case(case, "set", 0))
    return result


def tool_uses(result: AgentRun, turn: int = 0) -> list[tuple[str | None, Any]]:
    data = result.invocations[turn].intermediate_data
    assert data is not None and hasattr(data, "tool_uses")
    return [(call.name, call.args) for call in data.tool_uses]


def final_text(result: AgentRun, turn: int = 0) -> str:
    final = result.invocations[turn].final_response
    assert final is not None and final.parts
    return final.parts[0].text or ""


# ---------------------------------------------------------------------------------------------- ADK api_server
@pytest.fixture
def adk_server() -> Any:
    pytest.importorskip("google.adk")
    from examples.home_automation_adk.agent import root_agent

    fake = FakeAdkApiServer("home", root_agent)
    with serve(fake.handle) as (base_url, requests):
        yield base_url, requests


@pytest.fixture
def adk_api_run(adk_server: tuple[str, list[Recorded]]) -> tuple[AgentRun, list[Recorded]]:
    """A two-turn case (a transfer to climate_agent, then back) run on the fake api_server."""
    base_url, requests = adk_server
    case = make_case(
        "Set the Bedroom temperature to 19 degrees.",
        "Turn off device_2 in the Bedroom.",
        session_input={"app_name": "ignored", "user_id": "alice", "session_id": "s-42", "state": {"owner": "alice"}},
    )
    return run(resolve_agent(f"adk-api+{base_url}/home"), case), requests


def test_adk_api_server_turns_are_read_from_the_run_events(adk_api_run: tuple[AgentRun, list[Recorded]]) -> None:
    result, _ = adk_api_run

    assert tool_uses(result, 0) == [
        ("transfer_to_agent", {"agent_name": "climate_agent"}),
        ("set_temperature", {"location": "Bedroom", "temperature": 19}),
    ]
    assert tool_uses(result, 1) == [
        ("transfer_to_agent", {"agent_name": "home_assistant"}),
        ("set_device_info", {"location": "Bedroom", "device_id": "device_2", "status": "OFF"}),
    ]
    responses = result.invocations[0].intermediate_data.tool_responses  # type: ignore[union-attr]
    assert [r.response for r in responses] == [{"result": None}, {"location": "Bedroom", "temperature": 19}]
    assert final_text(result, 0) == "OK. I've set the Bedroom temperature to 19°C."
    assert final_text(result, 1) == "OK. I've turned off device_2 in the Bedroom."
    # outputs: per turn two calls (5 each) and an 8-word answer
    assert result.token_usage is not None and result.token_usage.output_tokens == 2 * (5 + 5 + 8)
    state = result.final_session_state or {}
    assert (state["owner"], state["temperatures"]["Bedroom"]) == ("alice", 19)


def test_adk_api_server_session_lifecycle_and_payloads(adk_api_run: tuple[AgentRun, list[Recorded]]) -> None:
    _, requests = adk_api_run

    assert [(r.method, r.path) for r in requests] == [
        ("POST", "/apps/home/users/alice/sessions"),
        ("POST", "/run"),
        ("POST", "/run"),
        ("GET", "/apps/home/users/alice/sessions/s-42"),
        ("DELETE", "/apps/home/users/alice/sessions/s-42"),
    ]
    assert requests[0].body == {"session_id": "s-42", "state": {"owner": "alice"}}
    assert requests[1].body == {
        "app_name": "home",
        "user_id": "alice",
        "session_id": "s-42",
        "new_message": {"role": "user", "parts": [{"text": "Set the Bedroom temperature to 19 degrees."}]},
    }


def test_adk_api_server_unknown_app_is_not_transient(adk_server: tuple[str, list[Any]]) -> None:
    base_url, _ = adk_server

    with pytest.raises(AgentFailure, match=r"AgentHttpError: HTTP 404 from POST .*/apps/nope/users/eval_user/sessions"):
        asyncio.run(AdkApiAgent(base_url, "nope").run_case(make_case("hi"), "set", 0))


def test_api_server_events_in_camel_case_follow_adks_final_response_rule() -> None:
    call = {"content": {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}, "id": "1"}}]}}
    skipped: dict[str, Any] = {"content": {"role": "user", "parts": [{"functionResponse": {"name": "f"}}]}}
    skipped["actions"] = {"skipSummarization": True}
    text: dict[str, Any] = {
        "content": {"parts": [{"text": "hi"}]},
        "usageMetadata": {"promptTokenCount": 7, "thoughtsTokenCount": 2},
    }

    assert [view_of_json_event(event).final for event in (call, skipped, text)] == [False, True, True]
    assert view_of_json_event({"content": {"parts": [{"text": "h"}]}, "partial": True}).final is False
    assert (view_of_json_event(text).input_tokens, view_of_json_event(text).output_tokens) == (7, 2)


# ------------------------------------------------------------------------------------------- generic JSON
def _stateful_echo(body: dict[str, Any]) -> dict[str, Any]:
    turns = int(body["state"].get("turns", 0)) + 1
    return {
        "response": f"echo: {body['prompt']}",
        "trajectory": [{"tool_name": "lookup", "tool_input": {"query": body["prompt"]}}],
        "state": {"turns": turns},
    }


def test_generic_json_endpoint_with_state_carried_by_the_client() -> None:
    server = JsonAgentServer(_stateful_echo)
    with serve(server.handle) as (base_url, requests):
        result = run(resolve_agent(f"{base_url}/agent"), make_case("one", "two"))

    assert [final_text(result, turn) for turn in (0, 1)] == ["echo: one", "echo: two"]
    assert tool_uses(result, 1) == [("lookup", {"query": "two"})]
    assert result.final_session_state == {"turns": 2}
    assert [r.path for r in requests] == ["/agent", "/agent"]
    assert requests[0].body["session_id"] == requests[1].body["session_id"]
    assert [r.body["state"] for r in requests] == [{}, {"turns": 1}]
    assert {k: requests[1].body[k] for k in ("prompt", "user_id")} == {"prompt": "two", "user_id": "eval_user"}


def test_predicted_trajectory_and_plain_string_answers() -> None:
    answers = iter([{"response": "a", "predicted_trajectory": [{"tool_name": "t", "tool_input": {"x": 1}}]}, "b"])
    server = JsonAgentServer(lambda body: next(answers))
    with serve(server.handle) as (base_url, _):
        result = run(HttpAgent(base_url), make_case("1", "2"))

    assert (tool_uses(result, 0), final_text(result, 0), final_text(result, 1)) == ([("t", {"x": 1})], "a", "b")


def test_a_generic_endpoints_reported_usage_is_the_turns_tokens_by_model() -> None:
    answers = iter(
        [
            {"response": "a", "model": "gpt-4o-mini", "usage": {"prompt_tokens": 120, "completion_tokens": 30,
             "prompt_tokens_details": {"cached_tokens": 100}, "completion_tokens_details": {"reasoning_tokens": 8}}},
            {"response": "b", "usage": {"input_tokens": 50, "output_tokens": 5, "model": "house-model"}},
            {"response": "c", "usage_metadata": {"promptTokenCount": 7, "candidatesTokenCount": 2,
                                                 "modelVersion": "gemini-2.5-flash"}},
            {"response": "d"},
        ]
    )  # fmt: skip
    server = JsonAgentServer(lambda body: next(answers))
    with serve(server.handle) as (base_url, _):
        result = run(HttpAgent(base_url), make_case("1", "2", "3", "4"))

    usage = result.token_usage
    assert usage is not None
    assert usage.by_model == {
        "gpt-4o-mini": ModelUsage(
            calls=1, input_tokens=120, output_tokens=30, cached_input_tokens=100, thinking_tokens=8
        ),
        "house-model": ModelUsage(calls=1, input_tokens=50, output_tokens=5),
        "gemini-2.5-flash": ModelUsage(calls=1, input_tokens=7, output_tokens=2),
    }  # the fourth turn reported nothing: unknown, not 0
    assert (usage.input_tokens, usage.output_tokens) == (177, 37)
    assert final_text(result, 3) == "d"


def test_503_is_transient() -> None:
    server = JsonAgentServer(_stateful_echo, failures=1)
    with serve(server.handle) as (base_url, _), pytest.raises(TransientAgentError, match="HTTP 503"):
        run(HttpAgent(base_url), make_case("hello"))


def test_timeout_is_transient() -> None:
    server = JsonAgentServer(_stateful_echo, delay=1.0)
    with serve(server.handle) as (base_url, _), pytest.raises(TransientAgentError, match="timed out"):
        run(HttpAgent(base_url, request_timeout=0.2), make_case("slow"))


def test_connection_refused_is_transient() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(TransientAgentError, match="ConnectError"):
        run(HttpAgent(f"http://127.0.0.1:{port}/"), make_case("anyone?"))


def test_client_errors_and_unreadable_answers_fail_the_case() -> None:
    bad_request = serve(lambda method, path, body: (400, {"detail": "bad prompt"}))
    with bad_request as (base_url, _), pytest.raises(AgentFailure, match=r"HTTP 400.*bad prompt"):
        run(HttpAgent(base_url), make_case("x"))
    not_a_turn = serve(lambda method, path, body: (200, [1, 2]))
    with not_a_turn as (base_url, _), pytest.raises(AgentFailure, match="unreadable turn"):
        run(HttpAgent(base_url), make_case("x"))


# ------------------------------------------------------------------------------------------------ references
def test_references_and_fingerprints(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(AGENT_VERSION_ENV, raising=False)
    generic = resolve_agent("https://agents.example.com/v1/chat")
    again = resolve_agent("https://agents.example.com/v1/chat")
    adk = resolve_agent("adk-api+http://127.0.0.1:8000/prefix/my_app")
    monkeypatch.setenv(AGENT_VERSION_ENV, "2")
    bumped = resolve_agent("https://agents.example.com/v1/chat")

    assert isinstance(generic, HttpAgent) and generic.url == "https://agents.example.com/v1/chat"
    assert isinstance(adk, AdkApiAgent) and (adk.base_url, adk.app_name) == ("http://127.0.0.1:8000/prefix", "my_app")
    assert adk.reference == "adk-api+http://127.0.0.1:8000/prefix/my_app"
    assert generic.fingerprint == again.fingerprint != bumped.fingerprint


@pytest.mark.parametrize("reference", ["adk-api+http://127.0.0.1:8000", "adk-api+http://127.0.0.1:8000/", "http://"])
def test_bad_http_references_are_input_errors(reference: str) -> None:
    with pytest.raises(EvalInputError, match="agent"):
        resolve_agent(reference)


def test_without_google_adk_http_agents_resolve_and_adk_agents_say_how_to_install(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text("from google.adk.agents import LlmAgent\nroot_agent = None\n", encoding="utf-8")
    script = (
        "import sys\n"
        "sys.modules['google.adk'] = None  # as if google-adk were not installed\n"
        "from agent_eval.agents.adk_agent import AdkAgent\n"
        "from agent_eval.agents.resolve import resolve_agent\n"
        "from agent_eval.errors import EvalInputError\n"
        "print(type(resolve_agent('adk-api+http://127.0.0.1:9/app')).__name__)\n"
        "for attempt in (lambda: resolve_agent(sys.argv[1]), lambda: AdkAgent(object())):\n"
        "    try:\n"
        "        attempt()\n"
        "    except EvalInputError as error:\n"
        "        print(error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, check=True, cwd=REPO_ROOT
    )

    lines = done.stdout.splitlines()
    assert lines[0] == "AdkApiAgent"
    assert lines[1].endswith("google-adk is not installed: pip install 'agent-eval[adk]'") and "agent.py" in lines[1]
    assert lines[2] == "field 'agent': google-adk is not installed: pip install 'agent-eval[adk]'"
