"""The agent's tokens per model (issue 31, item 1): ADK events (in-process and `adk api_server` JSON), GenaiAgent
through the real google-genai client and the fake Gemini server, ADK agents whose scripted model reports usage and
a model version, and recorded sessions."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import pytest
from google.genai import types as genai_types

from agent_eval.agents.adk_agent import EventView, turn_from_events
from agent_eval.agents.errors import AgentFailure
from agent_eval.agents.genai_agent import GenaiAgent
from agent_eval.agents.http_agent import AdkApiAgent, view_of_json_event
from agent_eval.agents.replay import recorded_token_usage
from agent_eval.schema import UNKNOWN_MODEL, AgentRun, EvalCase, Invocation, ModelUsage, TokenUsage
from tests.agents.http_servers import FakeAdkApiServer, serve
from tests.fakes.gemini_server import FakeGeminiServer, call_reply, error_reply, text_reply


def make_case(*messages: str) -> EvalCase:
    turns = [{"user_content": {"role": "user", "parts": [{"text": m}]}} for m in messages]
    return EvalCase.model_validate({"eval_id": "case", "conversation": turns})


def run(agent: Any, case: EvalCase) -> AgentRun:
    result: AgentRun = asyncio.run(agent.run_case(case, "set", 0))
    return result


def with_usage(reply: dict[str, Any], model_version: str | None = None, **usage: int) -> dict[str, Any]:
    """A fake server reply with more `usageMetadata` fields (camelCase) and another `modelVersion` (None: none)."""
    changed = {**reply, "usageMetadata": {**reply["usageMetadata"], **usage}}
    if model_version is None:
        del changed["modelVersion"]
    else:
        changed["modelVersion"] = model_version
    return changed


# ------------------------------------------------------------------------------------------- ADK events
def test_turn_from_events_counts_each_models_calls_apart() -> None:
    def answer(model: str | None, usage: ModelUsage | None, **flags: Any) -> EventView:
        return EventView(parts=(genai_types.Part(text="x"),), model=model, usage=usage, **flags)

    turn = turn_from_events(
        [
            answer("gemini-2.5-pro", ModelUsage(calls=1, input_tokens=100, output_tokens=10, thinking_tokens=7)),
            answer("gemini-2.5-flash", ModelUsage(calls=1, input_tokens=50, cached_input_tokens=20), outer=False),
            answer("gemini-2.5-pro", ModelUsage(calls=1, input_tokens=120, output_tokens=30)),
            answer("gemini-2.5-pro", ModelUsage(calls=1, input_tokens=999), partial=True),  # a fragment: not counted
            answer(None, ModelUsage(calls=1, output_tokens=4)),
            answer("gemini-2.5-flash", None),  # no usage: no model answer to count
            answer("gemini-2.5-flash", ModelUsage(calls=1, output_tokens=6), final=True),
        ]
    )

    assert turn.model_usage == {
        "gemini-2.5-pro": ModelUsage(calls=2, input_tokens=220, output_tokens=40, thinking_tokens=7),
        "gemini-2.5-flash": ModelUsage(calls=2, input_tokens=50, output_tokens=6, cached_input_tokens=20),
        UNKNOWN_MODEL: ModelUsage(calls=1, output_tokens=4),
    }


def test_turn_from_events_without_usage_has_no_model_usage() -> None:
    turn = turn_from_events([EventView(parts=(genai_types.Part(text="hi"),), final=True, model="gemini-2.5-flash")])

    assert turn.model_usage == {}


def test_api_server_camel_case_event_gives_its_model_and_usage() -> None:
    event = {
        "content": {"role": "model", "parts": [{"text": "done"}]},
        "modelVersion": "gemini-2.5-flash-001",
        "usageMetadata": {
            "promptTokenCount": 70,
            "toolUsePromptTokenCount": 5,
            "candidatesTokenCount": 12,
            "cachedContentTokenCount": 30,
            "thoughtsTokenCount": 9,
            "totalTokenCount": 96,
        },
    }
    snake = {
        "content": {"role": "model", "parts": [{"text": "done"}]},
        "model_version": "gemini-2.5-pro",
        "usage_metadata": {"prompt_token_count": 8},
    }

    view = view_of_json_event(event)

    assert (view.model, view.usage) == (
        "gemini-2.5-flash-001",
        ModelUsage(calls=1, input_tokens=75, output_tokens=12, cached_input_tokens=30, thinking_tokens=9),
    )
    assert (view.input_tokens, view.output_tokens) == (75, 21)  # the turn's totals keep counting thoughts as output
    assert (view_of_json_event(snake).model, view_of_json_event(snake).usage) == (
        "gemini-2.5-pro",
        ModelUsage(calls=1, input_tokens=8),
    )
    no_usage = view_of_json_event({"content": {"parts": [{"text": "hi"}]}, "modelVersion": "gemini-2.5-pro"})
    assert no_usage.usage is None and no_usage.model == "gemini-2.5-pro"
    no_model = view_of_json_event({"content": {"parts": [{"text": "hi"}]}, "usageMetadata": {"promptTokenCount": 1}})
    assert (no_model.model, no_model.usage) == (None, ModelUsage(calls=1, input_tokens=1))


# ------------------------------------------------------------------------------------------------ GenaiAgent
def note(text: str) -> str:
    """Write a note."""
    return f"noted: {text}"


def genai_agent(server: FakeGeminiServer) -> GenaiAgent:
    return GenaiAgent(model="gemini-2.5-flash", instruction="Take notes.", tools=[note], client=server.client)


def test_genai_agent_counts_each_call_under_the_model_the_server_names(fake_gemini: FakeGeminiServer) -> None:
    fake_gemini.script(
        call_reply(("note", {"text": "milk"}), prompt_tokens=40, output_tokens=6),
        text_reply("Noted: milk.", prompt_tokens=55, output_tokens=4),
    )

    result = run(genai_agent(fake_gemini), make_case("Note milk."))

    assert len(fake_gemini.requests) == 2 and not fake_gemini.unscripted
    assert result.token_usage == TokenUsage(
        input_tokens=95,
        output_tokens=10,
        total_tokens=105,
        by_model={"fake-gemini": ModelUsage(calls=2, input_tokens=95, output_tokens=10)},
    )


def test_genai_agent_falls_back_to_the_model_asked_and_keeps_cached_and_thinking(
    fake_gemini: FakeGeminiServer,
) -> None:
    fake_gemini.script(
        with_usage(
            call_reply(("note", {"text": "eggs"}), prompt_tokens=40, output_tokens=6),
            "gemini-2.5-flash-preview-09",
            cachedContentTokenCount=32,
            thoughtsTokenCount=11,
        ),
        with_usage(text_reply("Noted.", prompt_tokens=50, output_tokens=2), None, toolUsePromptTokenCount=3),
        text_reply("Hello.", prompt_tokens=7, output_tokens=1),  # the second turn
    )

    result = run(genai_agent(fake_gemini), make_case("Note eggs.", "Hi."))

    assert result.token_usage is not None
    assert result.token_usage.by_model == {
        "gemini-2.5-flash-preview-09": ModelUsage(
            calls=1, input_tokens=40, output_tokens=6, cached_input_tokens=32, thinking_tokens=11
        ),
        "gemini-2.5-flash": ModelUsage(calls=1, input_tokens=53, output_tokens=2),  # no modelVersion: the one asked
        "fake-gemini": ModelUsage(calls=1, input_tokens=7, output_tokens=1),
    }


def test_genai_agent_call_without_usage_counts_with_unknown_tokens(fake_gemini: FakeGeminiServer) -> None:
    silent = text_reply("Hi.")
    del silent["usageMetadata"]
    fake_gemini.script(silent)

    result = run(genai_agent(fake_gemini), make_case("Hi."))

    assert result.token_usage == TokenUsage(by_model={"fake-gemini": ModelUsage(calls=1)})


def test_a_case_run_failing_in_its_second_turn_keeps_the_first_turns_tokens(fake_gemini: FakeGeminiServer) -> None:
    fake_gemini.script(text_reply("Hi.", prompt_tokens=20, output_tokens=2), error_reply(400, "bad request"))

    with pytest.raises(AgentFailure) as failed:
        run(genai_agent(fake_gemini), make_case("Hi.", "And now?"))

    assert len(failed.value.run.invocations) == 1  # the first turn is kept
    assert failed.value.run.token_usage == TokenUsage(
        input_tokens=20,
        output_tokens=2,
        total_tokens=22,
        by_model={"fake-gemini": ModelUsage(calls=1, input_tokens=20, output_tokens=2)},
    )


# ---------------------------------------------------------------------------------------------- ADK agents
ADK_CALL_USAGE = genai_types.GenerateContentResponseUsageMetadata(
    prompt_token_count=100, candidates_token_count=10, cached_content_token_count=40, thoughts_token_count=3
)
ADK_TEXT_USAGE = genai_types.GenerateContentResponseUsageMetadata(
    prompt_token_count=120, tool_use_prompt_token_count=6, candidates_token_count=20
)


def adk_tree() -> Any:
    """An ADK agent whose scripted model answers a turn in two calls: a `note` call reported by
    `scripted-pro-001`, then a text reported by `scripted-flash-002`, each with its usage."""
    pytest.importorskip("google.adk")
    from google.adk.agents import LlmAgent
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse

    class UsageLlm(BaseLlm):
        model: str = "scripted-usage"

        async def generate_content_async(
            self, llm_request: LlmRequest, stream: bool = False
        ) -> AsyncGenerator[LlmResponse, None]:
            last = llm_request.contents[-1].parts or []
            if any(part.function_response for part in last):
                yield LlmResponse(
                    content=genai_types.Content(role="model", parts=[genai_types.Part(text="Noted.")]),
                    usage_metadata=ADK_TEXT_USAGE,
                    model_version="scripted-flash-002",
                )
                return
            call = genai_types.FunctionCall(name="note", args={"text": "milk"})
            yield LlmResponse(
                content=genai_types.Content(role="model", parts=[genai_types.Part(function_call=call)]),
                usage_metadata=ADK_CALL_USAGE,
                model_version="scripted-pro-001",
            )

    return LlmAgent(name="notes", model=UsageLlm(), instruction="Take notes.", tools=[note])


ADK_BY_MODEL_TWO_TURNS = {
    "scripted-pro-001": ModelUsage(
        calls=2, input_tokens=200, output_tokens=20, cached_input_tokens=80, thinking_tokens=6
    ),
    "scripted-flash-002": ModelUsage(calls=2, input_tokens=252, output_tokens=40),
}


def test_in_process_adk_agent_reports_tokens_per_model_version() -> None:
    pytest.importorskip("google.adk")
    from agent_eval.agents.adk_agent import AdkAgent

    result = run(AdkAgent(adk_tree()), make_case("Note milk.", "Note milk again."))

    assert result.error is None
    assert result.token_usage is not None
    assert result.token_usage.by_model == ADK_BY_MODEL_TWO_TURNS
    # the totals: input = prompt + tool-use prompt, output = candidates + thoughts (as before)
    assert (result.token_usage.input_tokens, result.token_usage.output_tokens) == (452, 66)


def test_adk_api_server_agent_reports_the_same_tokens_per_model_version() -> None:
    fake = FakeAdkApiServer("notes", adk_tree())
    with serve(fake.handle) as (base_url, _):
        result = run(AdkApiAgent(base_url, "notes"), make_case("Note milk.", "Note milk again."))

    assert result.error is None
    assert result.token_usage is not None
    assert result.token_usage.by_model == ADK_BY_MODEL_TWO_TURNS


# ------------------------------------------------------------------------------------------ recorded runs
def test_recorded_token_usage_adds_the_events_usage_per_model_version() -> None:
    def invocation(*events: dict[str, Any]) -> Invocation:
        return Invocation.model_validate(
            {
                "user_content": {"role": "user", "parts": [{"text": "q"}]},
                "intermediate_data": {"invocation_events": list(events)},
            }
        )

    first = invocation(
        {
            "author": "agent",
            "model_version": "gemini-2.5-pro",
            "usage_metadata": {"prompt_token_count": 100, "candidates_token_count": 10, "thoughts_token_count": 5},
        },
        {"author": "user", "content": {"role": "user", "parts": [{"function_response": {"name": "f"}}]}},
        {
            "author": "agent",
            "model_version": "gemini-2.5-flash",
            "usage_metadata": {"prompt_token_count": 30, "cached_content_token_count": 12},
        },
    )
    second = invocation(
        {
            "author": "agent",
            "model_version": "gemini-2.5-pro",
            "usage_metadata": {"prompt_token_count": 50, "tool_use_prompt_token_count": 2, "candidates_token_count": 4},
        },
        {"author": "agent", "usage_metadata": {"candidates_token_count": 3}},
    )
    plain = Invocation.model_validate({"user_content": {"role": "user", "parts": [{"text": "q"}]}})

    usage = recorded_token_usage([first, plain, second])

    assert usage == TokenUsage(
        input_tokens=180,
        output_tokens=17,
        total_tokens=197,
        by_model={
            "gemini-2.5-pro": ModelUsage(calls=2, input_tokens=152, output_tokens=14, thinking_tokens=5),
            "gemini-2.5-flash": ModelUsage(calls=1, input_tokens=30, cached_input_tokens=12),
            UNKNOWN_MODEL: ModelUsage(calls=1, output_tokens=3),
        },
    )
    assert recorded_token_usage([plain]) is None
