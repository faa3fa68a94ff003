"""User simulators for `conversation_scenario` cases: an LLM playing the user (ADK's `llm_backed`), or a script.

The conversation starts with the scenario's `starting_prompt`; after each agent turn the simulator writes the
next user message, until it says the stop signal `</finished>` (the conversation is over) or the agent has
answered `max_allowed_invocations` messages.

`EvalConfig.user_simulator_config` (snake or camel keys) selects one:
- `{"type": "llm_backed", "model": "gemini-2.5-flash", "max_allowed_invocations": 20,
  "model_configuration": {...GenerateContentConfig...}, "custom_instructions": "..."}` (ADK's; every key
  optional). `custom_instructions` replaces the default instruction; `{conversation_plan}`, `{persona}` and
  `{stop_signal}` in it are filled in.
- `{"type": "scripted", "messages": ["second message", "third message"], "max_allowed_invocations": 20}`
  (agent-eval extension, deterministic): message i is sent after the agent's i-th answer; then the user is done.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from google.genai import types
from pydantic import BaseModel, ConfigDict, Field, ValidationError, alias_generators

from agent_eval.agents.base import AgentTurn
from agent_eval.agents.conversation import DEFAULT_MAX_SIMULATED_TURNS, UserSimulator, count_simulator_usage
from agent_eval.agents.genai_agent import ClientOption, GenaiClients, generate
from agent_eval.errors import EvalInputError
from agent_eval.schema import ConversationScenario, ModelUsage

__all__ = [
    "DEFAULT_SIMULATOR_MODEL",
    "PERSONAS",
    "STOP_SIGNAL",
    "LlmUserSimulator",
    "ScriptedUserSimulator",
    "simulator_from_config",
]

DEFAULT_SIMULATOR_MODEL = "gemini-2.5-flash"
STOP_SIGNAL = "</finished>"
PERSONAS = {
    "EXPERT": "An expert user: knows the domain and exactly what they want, gives precise details up front, "
    "uses the right terms and expects short, correct answers.",
    "NOVICE": "A novice user: unsure of the terms, gives incomplete information, needs guidance and asks "
    "for clarification when the agent is unclear.",
    "EVALUATOR": "A careful evaluator: checks each of the agent's answers against the plan, asks for "
    "confirmation and points out mistakes or omissions.",
}
"""ADK's prebuilt persona ids and the description the simulator is given for each."""

DEFAULT_INSTRUCTION = """You are playing the user of an AI agent, to test that agent. Write the user's next \
message, and only that message, in the user's own words.

Follow the conversation plan: it says what you want and what you know. Give details from the plan when the \
agent asks for them or when they are needed; do not invent goals outside the plan. React to what the agent \
just said: answer its questions, correct it when it misunderstood you.

When every goal of the plan is reached, or the agent cannot help you further, reply with exactly \
{stop_signal} and nothing else.

# Conversation plan
{conversation_plan}

# Who you are
{persona}"""


class ScriptedUserSimulator:
    """Deterministic user: after the agent's i-th answer it sends `messages[i - 1]`; then it is done."""

    def __init__(self, messages: Sequence[str]) -> None:
        self.messages = list(messages)

    @property
    def fingerprint(self) -> str:
        """Hash of the script."""
        return "scripted-" + hashlib.sha256(json.dumps(self.messages).encode()).hexdigest()[:12]

    async def next_message(
        self, scenario: ConversationScenario, history: list[AgentTurn], user_messages: Sequence[str]
    ) -> str | None:
        """The next scripted message (the starting prompt was the first), or `None` after the last."""
        del scenario, history
        index = len(user_messages) - 1
        return self.messages[index] if index < len(self.messages) else None


class LlmUserSimulator:
    """A Gemini model playing the user of a scenario (ADK's LLM-backed user simulator).

    Args:
        model: the model that writes the user's messages.
        persona: the user's persona when the scenario gives none (a prebuilt id, a description or a dict).
        client: see `ClientOption`.
        stop_signal: text by which the model ends the conversation.
        instruction: the system instruction template (see the module docstring).
        config: extra generation settings.
    """

    def __init__(
        self,
        model: str = DEFAULT_SIMULATOR_MODEL,
        persona: str | dict[str, Any] | None = None,
        *,
        client: ClientOption = None,
        stop_signal: str = STOP_SIGNAL,
        instruction: str = DEFAULT_INSTRUCTION,
        config: types.GenerateContentConfig | None = None,
    ) -> None:
        self.model = model
        self.persona = persona
        self.stop_signal = stop_signal
        self.instruction = instruction
        self._config = config or types.GenerateContentConfig()
        self._clients = GenaiClients(client)

    @property
    def fingerprint(self) -> str:
        """Hash of the model, persona, stop signal, instruction and generation settings."""
        parts = [self.model, self.persona, self.stop_signal, self.instruction]
        digest = hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode())
        digest.update(self._config.model_dump_json(exclude_none=True).encode())
        return "llm-user-" + digest.hexdigest()[:12]

    def check_credentials(self) -> None:
        """Raise `EvalInputError` when the client comes from an environment without credentials."""
        self._clients.check_credentials(
            "the user simulator of conversation_scenario cases", field="user_simulator_config"
        )

    async def next_message(
        self, scenario: ConversationScenario, history: list[AgentTurn], user_messages: Sequence[str]
    ) -> str | None:
        """Ask the model for the user's next message; `None` when it says the stop signal (or nothing).

        Raises:
            TransientAgentError: a retryable API or connection failure.
        """
        config = self._config.model_copy(update={"system_instruction": self.system_instruction(scenario)})
        transcript = types.Content(role="user", parts=[types.Part(text=self.transcript(history, user_messages))])
        response = await generate(self._clients.get(), self.model, [transcript], config)
        count_simulator_usage(response.model_version or self.model, ModelUsage.of_genai(response.usage_metadata))
        text = _candidate_text(response).strip()
        return None if not text or self.stop_signal in text else text

    def system_instruction(self, scenario: ConversationScenario) -> str:
        """The instruction with the scenario's plan, the persona and the stop signal filled in."""
        persona = describe_persona(scenario.user_persona if scenario.user_persona is not None else self.persona)
        filled = self.instruction.replace("{conversation_plan}", scenario.conversation_plan)
        return filled.replace("{persona}", persona).replace("{stop_signal}", self.stop_signal)

    def transcript(self, history: list[AgentTurn], user_messages: Sequence[str]) -> str:
        """The conversation so far as `USER:` / `AGENT:` lines, and the request for the next message."""
        lines = ["# Conversation so far"]
        for message, turn in zip(user_messages, history, strict=False):
            lines += [f"USER: {message}", f"AGENT: {turn.response or '(no answer)'}"]
        lines.append(f"\nWrite the user's next message, or {self.stop_signal} if the conversation is over.")
        return "\n".join(lines)


def describe_persona(persona: str | dict[str, Any] | None) -> str:
    """A prebuilt persona id's description, a free-text persona as it is, a dict persona as `key: value` lines."""
    if persona is None:
        return "An ordinary user of this agent."
    if isinstance(persona, str):
        return PERSONAS.get(persona.strip().upper(), persona)
    return "\n".join(f"- {key}: {_render(value)}" for key, value in persona.items() if value not in (None, "", []))


def _render(value: Any) -> str:
    if isinstance(value, list):
        return "; ".join(_render(item) for item in value)
    if isinstance(value, dict):
        return ", ".join(f"{key}: {_render(item)}" for key, item in value.items() if item not in (None, ""))
    return str(value)


def _candidate_text(response: types.GenerateContentResponse) -> str:
    if not response.candidates or response.candidates[0].content is None:
        return ""
    parts = response.candidates[0].content.parts or []
    return "".join(part.text for part in parts if part.text and not part.thought)


class _SimulatorConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=alias_generators.to_camel, populate_by_name=True)

    max_allowed_invocations: int = Field(default=DEFAULT_MAX_SIMULATED_TURNS, ge=1)


class _LlmConfig(_SimulatorConfig):
    type: Literal["llm_backed"] = "llm_backed"
    model: str = DEFAULT_SIMULATOR_MODEL
    model_configuration: types.GenerateContentConfig | None = None
    custom_instructions: str | None = None


class _ScriptedConfig(_SimulatorConfig):
    type: Literal["scripted"]
    messages: list[str]


def simulator_from_config(config: Mapping[str, Any] | None) -> tuple[UserSimulator, int]:
    """The simulator a `user_simulator_config` describes (module docstring) and its `max_allowed_invocations`.

    Raises:
        EvalInputError: an unknown type, an unknown key or a bad value, naming the field and the choices.
    """
    data = dict(config or {})
    kind = str(data.get("type", "llm_backed"))
    kinds: dict[str, type[_SimulatorConfig]] = {"llm_backed": _LlmConfig, "scripted": _ScriptedConfig}
    model = kinds.get(kind)
    if model is None:
        raise EvalInputError(
            f"unknown type {kind!r}; choose 'llm_backed' or 'scripted'", field="user_simulator_config.type"
        )
    try:
        parsed = model.model_validate(data)
    except ValidationError as error:
        raise _config_error(error, kind, model) from None
    if isinstance(parsed, _ScriptedConfig):
        return ScriptedUserSimulator(parsed.messages), parsed.max_allowed_invocations
    assert isinstance(parsed, _LlmConfig)
    simulator = LlmUserSimulator(
        parsed.model, instruction=parsed.custom_instructions or DEFAULT_INSTRUCTION, config=parsed.model_configuration
    )
    return simulator, parsed.max_allowed_invocations


def _config_error(error: ValidationError, kind: str, model: type[_SimulatorConfig]) -> EvalInputError:
    """Pydantic's first complaint, naming the field (and the valid keys for an unknown one)."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    message = first["msg"]
    if first["type"] == "extra_forbidden":
        message = f"unknown key; the keys of a {kind!r} simulator are {sorted(model.model_fields)}"
    return EvalInputError(message, field=f"user_simulator_config.{where}")
