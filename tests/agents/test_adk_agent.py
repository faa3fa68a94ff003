"""The ADK adapter on real ADK runners with a scripted model: tool chains, parallel calls, transfers, AgentTools,
mocks, state across turns, session input, and resolving ADK references."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("google.adk")

from google.adk.apps import App
from google.adk.plugins.base_plugin import BasePlugin
from google.genai import types as genai_types

from agent_eval.agents.adk_agent import AdkAgent, EventView, turn_from_events
from agent_eval.agents.resolve import resolve_agent
from agent_eval.errors import EvalInputError
from agent_eval.schema import AgentRun, EvalCase
from tests.agents import adk_fixtures
from tests.agents.adk_fixtures import CALLS, build_tree

EXAMPLE_DIR = Path(__file__).resolve().parents[2] / "examples" / "home_automation_adk"


@pytest.fixture(autouse=True)
def _reset_calls() -> Iterator[None]:
    CALLS.clear()
    yield


def make_case(*messages: str, **fields: Any) -> EvalCase:
    """A case sending `messages`, one per turn (no expectations: these tests read the actual invocations)."""
    conversation = [{"user_content": {"role": "user", "parts": [{"text": m}]}} for m in messages]
    return EvalCase.model_validate({"eval_id": "case", "conversation": conversation, **fields})


def run(agent: AdkAgent, case: EvalCase) -> AgentRun:
    return asyncio.run(agent.run_case(case, "set", 0))


def calls_of(run_result: AgentRun, turn: int = 0) -> list[tuple[str | None, dict[str, Any] | None]]:
    data = run_result.invocations[turn].intermediate_data
    assert data is not None and hasattr(data, "tool_uses")
    return [(call.name, call.args) for call in data.tool_uses]


def responses_of(run_result: AgentRun, turn: int = 0) -> list[dict[str, Any] | None]:
    data = run_result.invocations[turn].intermediate_data
    assert data is not None and hasattr(data, "tool_responses")
    return [response.response for response in data.tool_responses]


def final_text(run_result: AgentRun, turn: int = 0) -> str:
    final = run_result.invocations[turn].final_response
    assert final is not None and final.parts
    return final.parts[0].text or ""


def test_two_step_chain_feeds_the_first_response_into_the_second_call() -> None:
    result = run(AdkAgent(build_tree()), make_case("please chain"))

    assert calls_of(result) == [("lookup", {"key": "a"}), ("act", {"target": "alpha"})]
    assert responses_of(result) == [{"key": "a", "value": "alpha"}, {"done": "alpha"}]
    assert final_text(result) == "chained to alpha"
    data = result.invocations[0].intermediate_data
    assert data is not None and hasattr(data, "intermediate_responses")
    assert [parts[0].text for _, parts in data.intermediate_responses] == ["Let me look that up."]
    assert result.token_usage is not None
    # outputs: "Let me look that up." 5 words + a call (5), a call (5), "chained to alpha" 3 words
    assert result.token_usage.output_tokens == 18
    assert result.token_usage.input_tokens is not None and result.token_usage.input_tokens > 0
    assert CALLS == {"lookup": 1, "act": 1}


def test_parallel_calls_of_one_model_turn_keep_the_model_order() -> None:
    result = run(AdkAgent(build_tree()), make_case("parallel please"))

    assert calls_of(result) == [("lookup", {"key": "a"}), ("lookup", {"key": "b"})]
    assert responses_of(result) == [{"key": "a", "value": "alpha"}, {"key": "b", "value": "beta"}]
    assert final_text(result) == "alpha and beta"
    assert CALLS["lookup"] == 2


def test_transfer_to_a_sub_agent_records_the_transfer_and_the_sub_agents_calls() -> None:
    result = run(AdkAgent(build_tree()), make_case("delegate this"))

    assert calls_of(result) == [("transfer_to_agent", {"agent_name": "helper"}), ("act", {"target": "from-helper"})]
    assert final_text(result) == "helper did it"
    assert CALLS["act"] == 1


def test_calls_inside_an_agent_tool_are_recorded_after_the_agent_tool_call() -> None:
    result = run(AdkAgent(build_tree()), make_case("research it"))

    assert calls_of(result) == [("researcher", {"request": "dig deep"}), ("lookup", {"key": "deep"})]
    assert responses_of(result) == [{"result": "found treasure"}, {"key": "deep", "value": "treasure"}]
    assert final_text(result) == "researcher: found treasure"
    assert result.token_usage is not None
    # outputs: router call (5) + researcher call (5) + "found treasure" (2) + "researcher: found treasure" (3)
    assert result.token_usage.output_tokens == 15


def test_mocked_tool_answers_without_running_and_feeds_the_next_step() -> None:
    mocks = [{"tool_name": "lookup", "args": {"key": "a"}, "response": {"key": "a", "value": "mocked"}}]
    result = run(AdkAgent(build_tree()), make_case("chain", tool_mocks=mocks))

    assert calls_of(result) == [("lookup", {"key": "a"}), ("act", {"target": "mocked"})]
    assert responses_of(result)[0] == {"key": "a", "value": "mocked"}
    assert CALLS == {"act": 1}


def test_mocks_apply_inside_agent_tools_and_wrap_non_dict_responses() -> None:
    mocks = [{"tool_name": "lookup", "response": "canned"}]
    result = run(AdkAgent(build_tree()), make_case("research", tool_mocks=mocks))

    assert calls_of(result) == [("researcher", {"request": "dig deep"}), ("lookup", {"key": "deep"})]
    assert responses_of(result)[1] == {"result": "canned"}
    assert final_text(result) == "researcher: found canned"
    assert CALLS["lookup"] == 0


def test_state_carries_across_turns_from_the_session_input() -> None:
    case = make_case(
        "bump", "bump again", "bump once more", session_input={"app_name": "a", "user_id": "u", "state": {"count": 40}}
    )
    result = run(AdkAgent(build_tree()), case)

    assert [final_text(result, turn) for turn in range(3)] == ["count is 41", "count is 42", "count is 43"]
    assert result.final_session_state == {"count": 43}
    assert case.session_input is not None and case.session_input.state == {"count": 40}  # the case is untouched


def test_session_input_sets_app_user_and_session_id() -> None:
    session_input = {"app_name": "my_app", "user_id": "alice", "session_id": "s-1", "state": {}}
    result = run(AdkAgent(build_tree()), make_case("who am i", session_input=session_input))

    assert final_text(result) == "my_app/alice/s-1"


def test_runs_leave_the_users_agent_and_app_unchanged() -> None:
    class CountingPlugin(BasePlugin):
        seen = 0

        async def before_tool_callback(self, **kwargs: Any) -> None:
            CountingPlugin.seen += 1

    root = build_tree()
    app = App(name="router_app", root_agent=root, plugins=[CountingPlugin(name="counting")])
    result = run(AdkAgent(app), make_case("chain", tool_mocks=[{"tool_name": "act", "response": {"done": "nothing"}}]))

    assert calls_of(result) == [("lookup", {"key": "a"}), ("act", {"target": "alpha"})]
    assert final_text(result) == "chained to nothing"
    assert CountingPlugin.seen == 2  # the App's own plugin ran too
    assert [plugin.name for plugin in app.plugins] == ["counting"]
    assert root.before_tool_callback is None
    assert CALLS == {"lookup": 1}


def test_fingerprint_is_stable_and_follows_the_tree() -> None:
    first, second = AdkAgent(build_tree()), AdkAgent(build_tree())
    changed = build_tree()
    changed.sub_agents[0].description = "unchanged fingerprint: descriptions are not hashed"
    changed.tools.pop()

    assert first.fingerprint == second.fingerprint
    assert AdkAgent(changed).fingerprint != first.fingerprint
    assert first.reference == "adk:router"


def test_final_response_is_the_outer_runners_last_final_text() -> None:
    def text(value: str, **flags: Any) -> EventView:
        return EventView(parts=(genai_types.Part(text=value),), **flags)

    turn = turn_from_events(
        [
            text("thinking aloud"),
            text("inside an AgentTool", outer=False, final=True),
            text("the answer", final=True, output_tokens=4),
            text("the ans", final=True, partial=True, output_tokens=9),
        ]
    )

    assert (turn.response, turn.intermediate_responses) == ("the answer", ["thinking aloud"])
    assert (turn.input_tokens, turn.output_tokens) == (None, 4)


def test_example_folder_resolves_to_an_adk_agent() -> None:
    agent = resolve_agent(str(EXAMPLE_DIR))

    assert isinstance(agent, AdkAgent)
    assert agent.reference == str(EXAMPLE_DIR)
    result = asyncio.run(agent.run_case(make_case("What is the temperature in the Kitchen?"), "set", 0))
    assert calls_of(result) == [
        ("transfer_to_agent", {"agent_name": "climate_agent"}),
        ("get_temperature", {"location": "Kitchen"}),
    ]
    assert final_text(result) == "The temperature in the Kitchen is 24°C."


def test_an_app_in_agent_py_is_taken_like_adk_eval_does(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(
        "from google.adk.apps import App\n"
        "from tests.agents.adk_fixtures import build_tree\n"
        "app = App(name='wrapped', root_agent=build_tree())\n",
        encoding="utf-8",
    )

    agent = resolve_agent(str(tmp_path))

    assert isinstance(agent, AdkAgent)
    assert final_text(run(agent, make_case("parallel"))) == "alpha and beta"


def test_a_missing_adk_module_says_how_to_install_it(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text("import google.adk.not_installed_here\nroot_agent = None\n", encoding="utf-8")

    with pytest.raises(EvalInputError, match=r"pip install 'agent-eval\[adk\]'"):
        resolve_agent(str(tmp_path))


def test_module_attribute_reference_wraps_the_agent() -> None:
    adk_fixtures.module_root = build_tree()  # type: ignore[attr-defined]
    try:
        agent = resolve_agent("tests.agents.adk_fixtures:module_root")
    finally:
        del adk_fixtures.module_root  # type: ignore[attr-defined]

    assert isinstance(agent, AdkAgent)
    assert agent.reference == "tests.agents.adk_fixtures:module_root"
