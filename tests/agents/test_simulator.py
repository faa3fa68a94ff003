"""User simulators: scripted and LLM-backed (against the fake Gemini server), and their wiring in the plan."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from agent_eval.agents import AgentFailure, AgentSession, CallableAgent, TransientAgentError
from agent_eval.agents.genai_agent import GenaiAgent
from agent_eval.agents.simulator import (
    PERSONAS,
    LlmUserSimulator,
    ScriptedUserSimulator,
    describe_persona,
    simulator_from_config,
)
from agent_eval.errors import EvalInputError
from agent_eval.plan.eval_plan import EvalRequest, prepare
from agent_eval.schema import AgentRun, EvalCase, ModelUsage, content_text
from tests.fakes.gemini_server import (
    FakeGeminiServer,
    error_reply,
    text_reply,
)

PLAN = "Ask for 21 degrees in the kitchen. If asked, your name is Ann."
SCENARIO = {"starting_prompt": "Hi, it is cold.", "conversation_plan": PLAN, "user_persona": "NOVICE"}


def echo(message: str, session: AgentSession) -> str:
    """Answers every message with `ok: <message>`."""
    return f"ok: {message}"


echo_agent = echo
unready_genai_agent = GenaiAgent(model="gemini-2.5-flash")
ready_genai_agent = GenaiAgent(model="gemini-2.5-flash", client=lambda: pytest.fail("no client expected"))


def scenario_case(**scenario: Any) -> EvalCase:
    return EvalCase.model_validate({"eval_id": "warm", "conversation_scenario": {**SCENARIO, **scenario}})


def simulate(simulator: Any, case: EvalCase | None = None, max_turns: int = 20) -> AgentRun:
    agent = CallableAgent(echo, reference="echo", fingerprint="echo")
    agent.simulator = simulator
    agent.max_simulated_turns = max_turns
    result: AgentRun = asyncio.run(agent.run_case(case or scenario_case(), "set", 0))
    return result


def user_texts(result: AgentRun) -> list[str]:
    return [content_text(i.user_content) for i in result.invocations]


def test_scripted_simulator_sends_its_messages_then_stops() -> None:
    result = simulate(ScriptedUserSimulator(["Kitchen, please.", "21 degrees."]))

    assert user_texts(result) == ["Hi, it is cold.", "Kitchen, please.", "21 degrees."]
    assert [content_text(i.final_response) for i in result.invocations][-1] == "ok: 21 degrees."


def test_llm_simulator_plays_the_plan_and_stops_on_the_signal(fake_gemini: FakeGeminiServer) -> None:
    fake_gemini.script(text_reply("Could you set the kitchen to 21 degrees?"), text_reply("Thanks! </finished>"))
    simulator = LlmUserSimulator("sim-model", client=fake_gemini.client)

    result = simulate(simulator)

    assert user_texts(result) == ["Hi, it is cold.", "Could you set the kitchen to 21 degrees?"]
    first, second = fake_gemini.requests
    assert first.model == second.model == "sim-model"
    assert PLAN in first.system_instruction and PERSONAS["NOVICE"] in first.system_instruction
    assert "reply with exactly </finished>" in first.system_instruction
    transcript = second.contents[0]["parts"][0]["text"]
    assert transcript.startswith(
        "# Conversation so far\nUSER: Hi, it is cold.\nAGENT: ok: Hi, it is cold.\n"
        "USER: Could you set the kitchen to 21 degrees?\nAGENT: ok: Could you set the kitchen to 21 degrees?\n"
    )


def test_the_llm_simulators_tokens_count_in_the_case_run_apart_from_the_agents(
    fake_gemini: FakeGeminiServer,
) -> None:
    fake_gemini.script(
        text_reply("Kitchen, 21 degrees.", prompt_tokens=120, output_tokens=9),
        text_reply("</finished>", prompt_tokens=150, output_tokens=3),
    )

    result = simulate(LlmUserSimulator("sim-model", client=fake_gemini.client))

    usage = result.token_usage
    assert usage is not None
    expected = {"fake-gemini": ModelUsage(calls=2, input_tokens=270, output_tokens=12)}
    assert (usage.user_simulator, usage.by_model, usage.input_tokens) == (expected, {}, None)  # the echo agent: none
    assert usage.spent == expected
    assert usage.stored() == {"user_simulator": {"fake-gemini": {"calls": 2, "input_tokens": 270, "output_tokens": 12}}}


def test_max_simulated_turns_caps_a_user_who_never_finishes(fake_gemini: FakeGeminiServer) -> None:
    fake_gemini.respond_with(lambda _request: text_reply("And another thing..."))

    result = simulate(LlmUserSimulator(client=fake_gemini.client), max_turns=3)

    assert len(result.invocations) == 3
    assert len(fake_gemini.requests) == 2  # the starting prompt needs no model call, the 4th message is not asked


def test_a_rate_limited_simulator_is_transient(fake_gemini: FakeGeminiServer) -> None:
    fake_gemini.script(error_reply(429))

    with pytest.raises(TransientAgentError, match="429"):
        simulate(LlmUserSimulator(client=fake_gemini.client))


def test_a_scenario_without_simulator_is_a_recorded_failure() -> None:
    with pytest.raises(AgentFailure, match="need a user simulator"):
        simulate(None)


def test_personas_prebuilt_free_text_dict_and_default() -> None:
    assert describe_persona("expert") == PERSONAS["EXPERT"]
    assert describe_persona("A retired sailor who types in capitals.") == "A retired sailor who types in capitals."
    persona = {"id": "busy_parent", "description": "In a hurry.", "behaviors": ["short messages", "no small talk"]}
    assert (
        describe_persona(persona)
        == "- id: busy_parent\n- description: In a hurry.\n- behaviors: short messages; no small talk"
    )
    assert describe_persona(None) == "An ordinary user of this agent."
    simulator = LlmUserSimulator(persona="EVALUATOR")
    assert PERSONAS["EVALUATOR"] in simulator.system_instruction(scenario_case(user_persona=None).conversation_scenario)  # type: ignore[arg-type]


def test_fingerprints_follow_the_script_and_the_model() -> None:
    assert ScriptedUserSimulator(["a"]).fingerprint == ScriptedUserSimulator(["a"]).fingerprint
    assert ScriptedUserSimulator(["a"]).fingerprint != ScriptedUserSimulator(["b"]).fingerprint
    assert LlmUserSimulator("m1").fingerprint != LlmUserSimulator("m2").fingerprint
    agent = CallableAgent(echo, reference="echo", fingerprint="code")
    agent.simulator = ScriptedUserSimulator(["a"])
    assert agent.fingerprint == f"code+{agent.simulator.fingerprint}"


def test_config_llm_backed_defaults_and_camel_case_keys() -> None:
    simulator, turns = simulator_from_config(None)
    assert isinstance(simulator, LlmUserSimulator) and simulator.model == "gemini-2.5-flash" and turns == 20

    simulator, turns = simulator_from_config(
        {
            "type": "llm_backed",
            "model": "gemini-2.5-pro",
            "maxAllowedInvocations": 4,
            "customInstructions": "Be {persona}",
        }
    )
    assert isinstance(simulator, LlmUserSimulator) and (simulator.model, turns) == ("gemini-2.5-pro", 4)
    assert simulator.system_instruction(scenario_case().conversation_scenario) == f"Be {PERSONAS['NOVICE']}"  # type: ignore[arg-type]


def test_config_scripted() -> None:
    simulator, turns = simulator_from_config({"type": "scripted", "messages": ["x"], "max_allowed_invocations": 2})
    assert isinstance(simulator, ScriptedUserSimulator) and simulator.messages == ["x"] and turns == 2


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"type": "human"},
            "field 'user_simulator_config.type': unknown type 'human'; choose 'llm_backed' or 'scripted'",
        ),
        ({"modle": "x"}, "field 'user_simulator_config.modle': unknown key; the keys of a 'llm_backed' simulator are"),
        ({"max_allowed_invocations": 0}, "field 'user_simulator_config.max_allowed_invocations': Input should be"),
        ({"type": "scripted"}, "field 'user_simulator_config.messages': Field required"),
    ],
)
def test_bad_configs_name_the_field(config: dict[str, Any], message: str) -> None:
    with pytest.raises(EvalInputError) as raised:
        simulator_from_config(config)
    assert str(raised.value).startswith(message)


def write_scenario_set(folder: Path) -> str:
    eval_set = {"eval_set_id": "sim", "eval_cases": [{"eval_id": "warm", "conversation_scenario": SCENARIO}]}
    path = folder / "sim.evalset.json"
    path.write_text(json.dumps(eval_set), encoding="utf-8")
    return str(path)


def request(folder: Path, agent: str, simulator_config: dict[str, Any] | None) -> EvalRequest:
    config: dict[str, Any] = {"criteria": {"tool_trajectory_avg_score": 1.0}}
    if simulator_config is not None:
        config["user_simulator_config"] = simulator_config
    return EvalRequest(paths=[write_scenario_set(folder)], agent=agent, config=config)


def test_plan_wires_the_configured_simulator_on_a_copy(tmp_path: Path) -> None:
    config = {"type": "scripted", "messages": ["more"], "max_allowed_invocations": 3}
    plan = prepare(request(tmp_path, "tests.agents.test_simulator:ready_genai_agent", config))

    assert isinstance(plan.agent, GenaiAgent) and plan.agent is not ready_genai_agent
    assert isinstance(plan.agent.simulator, ScriptedUserSimulator) and plan.agent.max_simulated_turns == 3
    assert ready_genai_agent.simulator is None and ready_genai_agent.max_simulated_turns == 20


def test_plan_without_credentials_for_a_configured_llm_simulator_fails_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE"):
        monkeypatch.delenv(name, raising=False)

    with pytest.raises(EvalInputError) as raised:
        prepare(request(tmp_path, "tests.agents.test_simulator:echo_agent", {"model": "gemini-2.5-pro"}))
    assert str(raised.value) == (
        "field 'user_simulator_config': the user simulator of conversation_scenario cases needs Gemini credentials: "
        "set GOOGLE_API_KEY or GEMINI_API_KEY, or GOOGLE_GENAI_USE_VERTEXAI=true with GOOGLE_CLOUD_PROJECT "
        "and GOOGLE_CLOUD_LOCATION"
    )
    unready = prepare(
        request(tmp_path, "tests.agents.test_simulator:unready_genai_agent", {"type": "scripted", "messages": []})
    )
    with pytest.raises(EvalInputError, match=r"agent 'genai:gemini-2\.5-flash' needs Gemini credentials"):
        asyncio.run(unready.checked_agent())  # the agent's own check is its preflight, run once per run

    plan = prepare(request(tmp_path, "tests.agents.test_simulator:echo_agent", {"type": "scripted", "messages": []}))
    assert isinstance(plan.agent, CallableAgent) and isinstance(plan.agent.simulator, ScriptedUserSimulator)


def test_without_config_the_default_llm_simulator_needs_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE"):
        monkeypatch.delenv(name, raising=False)
    unready = prepare(request(tmp_path, "tests.agents.test_simulator:echo_agent", None))
    assert isinstance(unready.agent, CallableAgent) and unready.agent.simulator is None

    with pytest.raises(
        AgentFailure, match="set user_simulator_config, and for the default LLM-backed one GOOGLE_API_KEY"
    ):
        asyncio.run(unready.agent.run_case(scenario_case(), "sim", 0))

    monkeypatch.setenv("GEMINI_API_KEY", "k")
    ready = prepare(request(tmp_path, "tests.agents.test_simulator:echo_agent", None))
    assert isinstance(ready.agent, CallableAgent) and isinstance(ready.agent.simulator, LlmUserSimulator)
    assert ready.agent.simulator.model == "gemini-2.5-flash" and ready.agent.max_simulated_turns == 20
