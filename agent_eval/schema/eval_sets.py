"""Eval sets as ADK writes them: cases, conversations (invocations), rubrics, session input, tool mocks, and
where a recorded case came from."""

from __future__ import annotations

from typing import Any

from google.genai import types as genai_types
from pydantic import ConfigDict, Field, model_validator

from agent_eval.schema.base import EvalBaseModel

__all__ = [
    "ConversationScenario",
    "EvalCase",
    "EvalSet",
    "IntermediateData",
    "Invocation",
    "InvocationEvent",
    "InvocationEvents",
    "RecordedOrigin",
    "Rubric",
    "RubricContent",
    "RubricScore",
    "SessionInput",
    "ToolMock",
    "content_text",
    "tool_calls_of",
]


class RubricContent(EvalBaseModel):
    """What a rubric asks the judge to check."""

    text_property: str | None = None


class Rubric(EvalBaseModel):
    """A yes/no property that a judge checks on a response or a tool use."""

    rubric_id: str
    rubric_content: RubricContent
    description: str | None = None
    type: str | None = None


class RubricScore(EvalBaseModel):
    """A judge's verdict on one rubric."""

    rubric_id: str
    rationale: str | None = None
    score: float | None = None


class IntermediateData(EvalBaseModel):
    """Reference-shaped intermediate data: tool calls, tool responses and intermediate texts."""

    tool_uses: list[genai_types.FunctionCall] = Field(default_factory=list)
    tool_responses: list[genai_types.FunctionResponse] = Field(default_factory=list)
    intermediate_responses: list[tuple[str, list[genai_types.Part]]] = Field(default_factory=list)


class InvocationEvent(EvalBaseModel):
    """One event of an actual run, as ADK records it (unknown event fields are ignored)."""

    model_config = ConfigDict(extra="ignore")

    author: str
    content: genai_types.Content | None = None
    usage_metadata: genai_types.GenerateContentResponseUsageMetadata | None = None
    model_version: str | None = None


class InvocationEvents(EvalBaseModel):
    """Event-shaped intermediate data: what ADK records for actual invocations."""

    invocation_events: list[InvocationEvent] = Field(default_factory=list)


class Invocation(EvalBaseModel):
    """One turn: the user's content, what the agent did, and its final response."""

    invocation_id: str = ""
    user_content: genai_types.Content
    final_response: genai_types.Content | None = None
    intermediate_data: IntermediateData | InvocationEvents | None = None
    creation_timestamp: float = 0.0
    duration: float | None = None
    model_duration: float | None = None
    tool_duration: float | None = None
    rubrics: list[Rubric] | None = None
    app_details: dict[str, Any] | None = None


class SessionInput(EvalBaseModel):
    """The session an eval case starts from."""

    model_config = ConfigDict(extra="allow")

    app_name: str
    user_id: str
    session_id: str | None = None
    state: dict[str, Any] = Field(default_factory=dict)


class ConversationScenario(EvalBaseModel):
    """A goal for a simulated user instead of a fixed conversation."""

    starting_prompt: str
    conversation_plan: str
    user_persona: str | dict[str, Any] | None = None


class ToolMock(EvalBaseModel):
    """agent-eval extension: a canned response for a tool, so an agent that calls live systems runs offline.

    Matches a call by tool name, and by arguments when `args` is given (every given key must be equal in the
    call; other keys are ignored).
    """

    tool_name: str
    args: dict[str, Any] | None = None
    response: Any = None


class RecordedOrigin(EvalBaseModel):
    """agent-eval extension: where a recorded case (a session of production traffic) came from."""

    sources: list[str] = Field(default_factory=list, description="`FILE:LINE` of each turn's first span, or URLs")
    content_captured: bool = Field(
        default=True, description="False: the spans carry no message text or tool arguments (ADK's default)"
    )
    service: str | None = None
    agent_name: str | None = None
    app_name: str | None = None
    user_id: str | None = None
    error: str | None = Field(default=None, description="the first failed turn's error, when one failed")
    state: dict[str, Any] = Field(default_factory=dict, description="the session's state, where recorded")


class EvalCase(EvalBaseModel):
    """One eval case: a fixed conversation or a conversation scenario, never both.

    `tags` and `description` are ADK-Rust's additions; unknown keys are kept (ADK allows extras).
    """

    model_config = ConfigDict(extra="allow")

    eval_id: str
    conversation: list[Invocation] | None = Field(default=None, min_length=1)
    conversation_scenario: ConversationScenario | None = None
    session_input: SessionInput | None = None
    creation_timestamp: float = 0.0
    rubrics: list[Rubric] | None = None
    final_session_state: dict[str, Any] | None = Field(default_factory=dict)
    description: str | None = None
    tags: list[str] = Field(default_factory=list)
    tool_mocks: list[ToolMock] = Field(
        default_factory=list,
        description="agent-eval extension: canned tool responses for this case (adapters that run tools use them).",
    )
    actual_conversation: list[Invocation] | None = Field(
        default=None,
        description="agent-eval extension: the agent's invocations, already made (a dataset with predictions). "
        "Such a case is scored as it is; no agent is called.",
    )
    recorded: RecordedOrigin | None = Field(
        default=None,
        description="agent-eval extension: set on a case read from recorded traces or sessions (where from).",
    )

    @model_validator(mode="after")
    def _one_conversation_kind(self) -> EvalCase:
        """Exactly one of `conversation` and `conversation_scenario`; a case that holds the agent's own
        invocations (`actual_conversation`, e.g. recorded traffic) may have neither: it has no reference."""
        if self.conversation is not None and self.conversation_scenario is not None:
            raise ValueError("exactly one of 'conversation' or 'conversation_scenario' must be given")
        if self.conversation is None and self.conversation_scenario is None and self.actual_conversation is None:
            raise ValueError("exactly one of 'conversation' or 'conversation_scenario' must be given")
        return self


class EvalSet(EvalBaseModel):
    """A named collection of eval cases (ADK `*.evalset.json`)."""

    eval_set_id: str
    name: str | None = None
    description: str | None = None
    eval_cases: list[EvalCase]
    creation_timestamp: float = 0.0


def content_text(content: genai_types.Content | None) -> str:
    """The text of a content: its text parts joined with a newline, as ADK does."""
    if content is None or not content.parts:
        return ""
    return "\n".join(part.text for part in content.parts if part.text)


def tool_calls_of(invocation: Invocation) -> list[genai_types.FunctionCall]:
    """Every tool call of an invocation, in order, for both intermediate-data shapes."""
    data = invocation.intermediate_data
    if data is None:
        return []
    if isinstance(data, IntermediateData):
        return list(data.tool_uses)
    return [
        part.function_call
        for event in data.invocation_events
        if event.content is not None
        for part in event.content.parts or []
        if part.function_call is not None
    ]
