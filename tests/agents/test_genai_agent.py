"""GenaiAgent against the fake Gemini server: the function-calling loop, mocks, history, errors, timeouts."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any

import pytest

from agent_eval.agents import AgentFailure, AgentSession, CallableAgent, TransientAgentError, is_transient
from agent_eval.agents.conversation import MAX_RESPONSE_CHARS
from agent_eval.agents.genai_agent import GenaiAgent, missing_credentials
from agent_eval.errors import EvalInputError
from agent_eval.schema import AgentRun, EvalCase, content_text
from tests.fakes.gemini_server import (
    FakeGeminiServer,
    FakeReply,
    call_reply,
    error_reply,
    slow,
    text_reply,
)

CALLS: Counter[str] = Counter()


def get_user_preferences(user_id: str) -> dict[str, Any]:
    """The user's saved preferences."""
    CALLS["get_user_preferences"] += 1
    return {"user_id": user_id, "temperature": 23}


async def set_temperature(location: str, temperature: int) -> str:
    """Set the thermostat of a room."""
    CALLS["set_temperature"] += 1
    return f"{location} set to {temperature}"


def make_agent(server: FakeGeminiServer, **options: Any) -> GenaiAgent:
    return GenaiAgent(
        model="gemini-2.5-flash",
        instruction="You control the home.",
        tools=[get_user_preferences, set_temperature],
        client=server.client,  # a factory: one client per event loop
        **options,
    )


def make_case(*messages: str, **extra: Any) -> EvalCase:
    turns = [{"user_content": {"role": "user", "parts": [{"text": m}]}} for m in messages]
    return EvalCase.model_validate({"eval_id": "case", "conversation": turns, **extra})


def run(agent: Any, case: EvalCase) -> AgentRun:
    result: AgentRun = asyncio.run(agent.run_case(case, "set", 0))
    return result


@pytest.fixture(autouse=True)
def _reset_calls() -> None:
    CALLS.clear()


def test_two_step_tool_chain_is_recorded_in_order(fake_gemini: FakeGeminiServer) -> None:
    fake_gemini.script(
        call_reply(("get_user_preferences", {"user_id": "ann"}), text="Looking up your preferences."),
        call_reply(("set_temperature", {"location": "living room", "temperature": 23})),
        text_reply("The living room is set to 23 degrees."),
    )

    result = run(make_agent(fake_gemini), make_case("Set the living room to my usual temperature."))

    invocation = result.invocations[0]
    assert content_text(invocation.final_response) == "The living room is set to 23 degrees."
    data = invocation.intermediate_data
    assert [(c.name, c.args, c.id) for c in data.tool_uses] == [  # type: ignore[union-attr]
        ("get_user_preferences", {"user_id": "ann"}, "call-get_user_preferences-0"),
        ("set_temperature", {"location": "living room", "temperature": 23}, "call-set_temperature-0"),
    ]
    assert [r.response for r in data.tool_responses] == [  # type: ignore[union-attr]
        {"user_id": "ann", "temperature": 23},
        {"result": "living room set to 23"},
    ]
    assert [p[1][0].text for p in data.intermediate_responses] == ["Looking up your preferences."]  # type: ignore[union-attr]
    assert CALLS == {"get_user_preferences": 1, "set_temperature": 1}
    assert len(fake_gemini.requests) == 3 and not fake_gemini.unscripted


def test_requests_carry_instruction_tools_and_function_responses(fake_gemini: FakeGeminiServer) -> None:
    fake_gemini.script(call_reply(("get_user_preferences", {"user_id": "ann"})), text_reply("23 degrees."))

    run(make_agent(fake_gemini), make_case("What is my usual temperature?"))

    first, second = fake_gemini.requests
    assert first.path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert first.system_instruction == "You control the home."
    declared = [d["name"] for d in first.body["tools"][0]["functionDeclarations"]]
    assert declared == ["get_user_preferences", "set_temperature"]
    assert [c["role"] for c in second.contents] == ["user", "model", "user"]
    response = second.contents[2]["parts"][0]["functionResponse"]
    assert response == {
        "id": "call-get_user_preferences-0",
        "name": "get_user_preferences",
        "response": {"user_id": "ann", "temperature": 23},
    }


def test_parallel_calls_in_one_answer_run_in_order_and_answer_together(fake_gemini: FakeGeminiServer) -> None:
    fake_gemini.script(
        call_reply(
            ("set_temperature", {"location": "kitchen", "temperature": 20}),
            ("set_temperature", {"location": "office", "temperature": 22}),
        ),
        text_reply("Both rooms are set."),
    )

    result = run(make_agent(fake_gemini), make_case("Kitchen 20, office 22."))

    calls = result.invocations[0].intermediate_data.tool_uses  # type: ignore[union-attr]
    assert [c.args["location"] for c in calls] == ["kitchen", "office"]  # type: ignore[index]
    parts = fake_gemini.requests[1].contents[-1]["parts"]
    assert [p["functionResponse"]["response"]["result"] for p in parts] == ["kitchen set to 20", "office set to 22"]
    assert CALLS["set_temperature"] == 2


def test_a_mocked_tool_is_not_executed(fake_gemini: FakeGeminiServer) -> None:
    fake_gemini.script(
        call_reply(("get_user_preferences", {"user_id": "bob"})),
        call_reply(("set_temperature", {"location": "hall", "temperature": 19})),
        text_reply("Done."),
    )
    mocks = [
        {"tool_name": "get_user_preferences", "response": {"temperature": 19}},
        {"tool_name": "set_temperature", "args": {"location": "hall"}, "response": "mocked ok"},
    ]

    result = run(make_agent(fake_gemini), make_case("Usual temperature in the hall.", tool_mocks=mocks))

    assert CALLS == {}
    responses = result.invocations[0].intermediate_data.tool_responses  # type: ignore[union-attr]
    assert [r.response for r in responses] == [{"temperature": 19}, {"result": "mocked ok"}]
    assert fake_gemini.requests[1].contents[-1]["parts"][0]["functionResponse"]["response"] == {"temperature": 19}


def test_second_turn_sends_the_first_turn_as_history(fake_gemini: FakeGeminiServer) -> None:
    fake_gemini.script(
        call_reply(("get_user_preferences", {"user_id": "ann"})),
        text_reply("Your usual is 23."),
        text_reply("Set to 23 in the office."),
    )

    result = run(make_agent(fake_gemini), make_case("What is my usual?", "Use it in the office."))

    assert [content_text(i.final_response) for i in result.invocations] == [
        "Your usual is 23.",
        "Set to 23 in the office.",
    ]
    turn_two = fake_gemini.requests[2].contents
    assert [c["role"] for c in turn_two] == ["user", "model", "user", "model", "user"]
    assert turn_two[0]["parts"][0]["text"] == "What is my usual?"
    assert turn_two[1]["parts"][0]["functionCall"]["name"] == "get_user_preferences"
    assert turn_two[3]["parts"][0]["text"] == "Your usual is 23."
    assert turn_two[4]["parts"][0]["text"] == "Use it in the office."


def test_token_usage_is_summed_over_the_model_calls(fake_gemini: FakeGeminiServer) -> None:
    fake_gemini.script(
        call_reply(("get_user_preferences", {"user_id": "ann"}), prompt_tokens=100, output_tokens=7),
        text_reply("23.", prompt_tokens=130, output_tokens=3),
        text_reply("Bye.", prompt_tokens=150, output_tokens=2),
    )

    result = run(make_agent(fake_gemini), make_case("My usual?", "Thanks."))

    assert result.token_usage is not None
    assert (result.token_usage.input_tokens, result.token_usage.output_tokens) == (380, 12)
    assert result.token_usage.total_tokens == 392


def test_rate_limits_and_server_errors_are_transient(fake_gemini: FakeGeminiServer) -> None:
    fake_gemini.script(error_reply(429, "slow down"), error_reply(503, "busy"))
    agent, case = make_agent(fake_gemini), make_case("hi")

    for expected in ("429", "503"):
        with pytest.raises(TransientAgentError, match=expected) as raised:
            run(agent, case)
        assert is_transient(raised.value) and not isinstance(raised.value, AgentFailure)
    assert len(fake_gemini.requests) == 2


def test_a_bad_request_is_the_agents_failure(fake_gemini: FakeGeminiServer) -> None:
    fake_gemini.script(error_reply(400, "function declaration is invalid"))

    with pytest.raises(AgentFailure) as raised:
        run(make_agent(fake_gemini), make_case("hi"))

    assert raised.value.run.error is not None
    assert raised.value.run.error.startswith("turn 1: ClientError: 400 INVALID_ARGUMENT")
    assert "function declaration is invalid" in raised.value.run.error
    assert len(fake_gemini.requests) == 1


def test_a_malformed_answer_is_a_recorded_failure(fake_gemini: FakeGeminiServer) -> None:
    fake_gemini.script(FakeReply(body="{not json"), FakeReply(body={"candidates": []}))
    agent, case = make_agent(fake_gemini), make_case("hi")

    with pytest.raises(AgentFailure, match="turn 1: JSONDecodeError"):
        run(agent, case)
    with pytest.raises(AgentFailure, match="no candidate"):
        run(agent, case)


def test_a_slow_answer_is_interrupted_by_the_turn_timeout(fake_gemini: FakeGeminiServer) -> None:
    fake_gemini.script(slow(text_reply("too late"), 30))
    started = time.perf_counter()

    with pytest.raises(TimeoutError):
        run(make_agent(fake_gemini, turn_timeout=0.5), make_case("hi"))

    assert time.perf_counter() - started < 5
    assert len(fake_gemini.requests) == 1


def test_a_lost_connection_is_transient(fake_gemini: FakeGeminiServer) -> None:
    agent = make_agent(fake_gemini)
    fake_gemini.stop()

    with pytest.raises(TransientAgentError, match="ConnectError"):
        run(agent, make_case("hi"))


def test_max_steps_ends_a_tool_loop_as_a_failure(fake_gemini: FakeGeminiServer) -> None:
    fake_gemini.respond_with(lambda _request: call_reply(("get_user_preferences", {"user_id": "ann"})))

    with pytest.raises(AgentFailure) as raised:
        run(make_agent(fake_gemini, max_steps=3), make_case("loop forever"))

    assert raised.value.run.error == "turn 1: MaxStepsReached: max_steps reached: 3 model calls without a final answer"
    assert len(fake_gemini.requests) == 3
    assert CALLS["get_user_preferences"] == 3


def test_tool_errors_and_unknown_tools_are_told_to_the_model(fake_gemini: FakeGeminiServer) -> None:
    fake_gemini.script(
        call_reply(("set_temperature", {"location": "hall"}), ("open_window", {})),
        text_reply("Sorry, I could not do that."),
    )

    result = run(make_agent(fake_gemini), make_case("Warm the hall and open a window."))

    responses = [r.response for r in result.invocations[0].intermediate_data.tool_responses]  # type: ignore[union-attr]
    assert responses[0] == {
        "error": "TypeError: set_temperature() missing 1 required positional argument: 'temperature'"
    }
    assert responses[1] == {
        "error": "unknown tool 'open_window'; the tools are ['get_user_preferences', 'set_temperature']"
    }


def test_fingerprint_follows_model_instruction_tools_and_steps(fake_gemini: FakeGeminiServer) -> None:
    base = make_agent(fake_gemini)
    assert base.fingerprint == make_agent(fake_gemini).fingerprint
    assert base.fingerprint != make_agent(fake_gemini, max_steps=4).fingerprint
    other_tools = GenaiAgent(model="gemini-2.5-flash", instruction="You control the home.", tools=[set_temperature])
    assert base.fingerprint != other_tools.fingerprint
    assert base.reference == "genai:gemini-2.5-flash"


def test_bad_tools_are_rejected_when_the_agent_is_defined() -> None:
    with pytest.raises(ValueError, match="two tools are named 'set_temperature'"):
        GenaiAgent(model="m", tools=[set_temperature, set_temperature])
    with pytest.raises(TypeError, match="named Python function"):
        GenaiAgent(model="m", tools=["set_temperature"])  # type: ignore[list-item]


def test_missing_credentials_are_an_input_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE"):
        monkeypatch.delenv(name, raising=False)
    assert missing_credentials()
    with pytest.raises(EvalInputError, match="GOOGLE_API_KEY or GEMINI_API_KEY, or GOOGLE_GENAI_USE_VERTEXAI=true"):
        GenaiAgent(model="gemini-2.5-flash").check_credentials()

    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "p")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-central1")
    assert not missing_credentials()
    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "false")
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    assert not missing_credentials()


def test_a_given_client_needs_no_environment(monkeypatch: pytest.MonkeyPatch, fake_gemini: FakeGeminiServer) -> None:
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    make_agent(fake_gemini).check_credentials()


def huge_answer(message: str, session: AgentSession) -> str:
    return "x" * 10_000_000


def test_a_10_mb_answer_is_cut_to_a_readable_size() -> None:
    agent = CallableAgent(huge_answer, reference="huge", fingerprint="huge")

    result = run(agent, make_case("say a lot"))

    text = content_text(result.invocations[0].final_response)
    assert text == "x" * MAX_RESPONSE_CHARS + f"… [truncated {10_000_000 - MAX_RESPONSE_CHARS} characters]"
