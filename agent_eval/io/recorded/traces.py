"""Traces as recorded turns: the span conventions of ADK 2.x, ADK's legacy schema, and plain GenAI spans.

The mapping (docs/recorded.md has the long form):

- one trace (one ADK invocation) is one turn; a trace is complete when its root span has been read (exporters
  write children before parents), and is then mapped and dropped, so memory holds only unfinished traces;
- turns join into a session by `gen_ai.conversation.id` (ADK 2.x) or `gcp.vertex.agent.session_id` (legacy); a
  trace with neither is a session of its own (its trace id);
- model calls are the spans whose operation is `generate_content`/`chat`/`text_completion`, or `call_llm`
  (legacy); a model call inside another (the legacy `call_llm` around the GenAI instrumentation's span) is
  the same call: only the outermost counts, so its tokens are counted once;
- the user input is the last user message with text in the first model call's input (which holds the whole
  history); the final response is the last model call's output;
- tool calls (name, arguments, id) and responses come from the tool spans (`execute_tool`), in start order; the
  ids inside `gen_ai.output.messages` are not ADK's and are never used;
- latency comes from span times: the turn from its root, model and tool seconds summed over their spans;
- a span with status ERROR marks the turn failed;
- content is "not captured" when no model call carries input or output messages (ADK's default).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from google.genai import types as genai_types
from pydantic import BaseModel

from agent_eval.io.recorded.otlp import SkippedInput, Span
from agent_eval.io.recorded.turns import RecordedTurn
from agent_eval.schema import Invocation, InvocationEvent, InvocationEvents

__all__ = ["group_traces", "turn_from_trace", "turns_from_spans"]

_MODEL_OPERATIONS = frozenset({"generate_content", "chat", "text_completion", "call_llm"})
_SESSION_KEYS = ("gen_ai.conversation.id", "gcp.vertex.agent.session_id", "session.id")
_NANOS = 1_000_000_000


def turns_from_spans(spans: Iterable[Span], on_skip: Callable[[SkippedInput], None]) -> Iterator[RecordedTurn]:
    """Every turn of the spans, as each trace completes; traces that are no turn go to `on_skip`."""
    for trace in group_traces(spans, on_skip):
        turn = turn_from_trace(trace)
        if isinstance(turn, SkippedInput):
            on_skip(turn)
        else:
            yield turn


def group_traces(spans: Iterable[Span], on_skip: Callable[[SkippedInput], None]) -> Iterator[list[Span]]:
    """The spans grouped by trace, each trace yielded when its root span arrives; spans of a trace already
    yielded, and traces whose root never came (orphans), go to `on_skip`. Memory: the spans of the traces not
    yet complete, and the ids of those that were."""
    open_traces: dict[str, list[Span]] = {}
    done: set[str] = set()
    for span in spans:
        if span.trace_id in done:
            on_skip(SkippedInput(span.source, f"span {span.name!r} of trace {span.trace_id} came after its root"))
            continue
        open_traces.setdefault(span.trace_id, []).append(span)
        if span.parent_id is None:
            done.add(span.trace_id)
            yield open_traces.pop(span.trace_id)
    for trace_id, orphans in open_traces.items():
        reason = f"trace {trace_id}: {len(orphans)} span(s) whose root span is not in the input (orphans)"
        on_skip(SkippedInput(orphans[0].source, reason))


def turn_from_trace(trace: list[Span]) -> RecordedTurn | SkippedInput:
    """The turn a complete trace records, or why it is none (no model call)."""
    root = next(span for span in trace if span.parent_id is None)
    ordered = sorted(trace, key=lambda span: (span.start_ns, span.end_ns))
    models = _outermost(ordered, _is_model_call)
    if not models:
        return SkippedInput(root.source, f"trace {root.trace_id} ({root.name!r}): no model call, not a turn")
    tools = [span for span in ordered if _is_tool_call(span)]
    agent = _agent_name(ordered)
    calls = [_ModelCall.of(span, agent, with_inputs=index == 0) for index, span in enumerate(models)]
    captured = any(call.captured for call in calls)
    continued = _tool_responses_ending(calls[0].inputs) if not tools else []
    invocation = _built(
        Invocation,
        invocation_id=str(_first(ordered, "gcp.vertex.agent.invocation_id") or root.trace_id),
        user_content=_content_model(_user_content(calls[0]) if not continued else {"role": "user", "parts": []}),
        final_response=_content_model(_with_text(calls[-1].output)),
        intermediate_data=_built(
            InvocationEvents, invocation_events=_responses_event(calls[0], continued) + _events(calls, models, tools)
        ),
        creation_timestamp=root.start_ns / _NANOS,
        duration=_seconds(root),
        model_duration=round(sum(_seconds(span) for span in models), 6),
        tool_duration=round(sum(_seconds(span) for span in tools), 6),
    )
    return RecordedTurn(
        session_id=str(_first(ordered, *_SESSION_KEYS) or root.trace_id),
        invocation=invocation,
        source=trace[0].source,
        started_ns=root.start_ns,
        service=root.service,
        agent_name=agent,
        error=_error(ordered),
        content_captured=captured,
        continues=bool(continued),
    )


# ----------------------------------------------------------------------------------------------- span kinds
def _operation(span: Span) -> str:
    return str(span.attributes.get("gen_ai.operation.name") or span.name.split(" ")[0])


def _is_model_call(span: Span) -> bool:
    return _operation(span) in _MODEL_OPERATIONS


def _is_tool_call(span: Span) -> bool:
    return _operation(span) == "execute_tool" and span.attributes.get("gen_ai.tool.name") != "(merged tools)"


def _outermost(ordered: list[Span], wanted: Callable[[Span], bool]) -> list[Span]:
    """The wanted spans that have no wanted ancestor."""
    by_id = {span.span_id: span for span in ordered}
    kept = []
    for span in ordered:
        if not wanted(span):
            continue
        parent = by_id.get(span.parent_id or "")
        while parent is not None and not wanted(parent):
            parent = by_id.get(parent.parent_id or "")
        if parent is None:
            kept.append(span)
    return kept


# ----------------------------------------------------------------------------------------------- model calls
@dataclass(slots=True)
class _ModelCall:
    """What one model call's span says: its input history, its output, its tokens."""

    span: Span
    inputs: list[dict[str, Any]]
    output: Any
    usage: dict[str, int] | None
    captured: bool
    agent_name: str | None = None
    """The trace's agent, for a call span that does not name it (ADK's legacy `call_llm`)."""

    @classmethod
    def of(cls, span: Span, agent_name: str | None = None, *, with_inputs: bool = False) -> _ModelCall:
        """The call's output and tokens; its input history too when asked (only the first call's is used)."""
        attributes = span.attributes
        inputs, output = _semconv_messages(attributes, with_inputs)
        if inputs is None and output is None:
            inputs, output = _legacy_messages(attributes, with_inputs)
        return cls(
            span=span,
            inputs=inputs or [],
            output=output,
            usage=_usage(attributes),
            captured=any(_loaded_text(attributes.get(key)) for key in _CONTENT_KEYS),
            agent_name=agent_name,
        )


_CONTENT_KEYS = (
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gcp.vertex.agent.llm_request",
    "gcp.vertex.agent.llm_response",
)


def _loaded_text(value: Any) -> bool:
    """Whether an attribute holds content: present, and not an empty JSON value (`{}` when content is off)."""
    return isinstance(value, str) and value.strip() not in ("", "{}", "[]", "null")


def _semconv_messages(attributes: dict[str, Any], with_inputs: bool) -> tuple[list[dict[str, Any]] | None, Any]:
    """`gen_ai.input.messages` / `gen_ai.output.messages` (GenAI semantic conventions) as genai contents."""
    inputs = _loaded(attributes.get("gen_ai.input.messages")) if with_inputs else None
    outputs = _loaded(attributes.get("gen_ai.output.messages"))
    names = _tool_names_by_call_id(inputs)
    contents = [_semconv_content(message, names) for message in inputs] if isinstance(inputs, list) else None
    output = _semconv_content(outputs[-1], names) if isinstance(outputs, list) and outputs else None
    return contents, output


def _tool_names_by_call_id(messages: Any) -> dict[str, str]:
    """The tool name of each call id in the messages: a response part carries only the id."""
    if not isinstance(messages, list):
        return {}
    parts = [part for message in messages for part in message.get("parts") or []]
    return {str(p.get("id")): str(p.get("name")) for p in parts if p.get("type") == "tool_call" and p.get("id")}


def _semconv_content(message: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    role = "user" if message.get("role") in ("user", "tool") else "model"
    parts = [part for part in (_semconv_part(p, names) for p in message.get("parts") or []) if part]
    return {"role": role, "parts": parts}


def _semconv_part(part: dict[str, Any], names: dict[str, str]) -> dict[str, Any] | None:
    """A message part as a genai part; call ids are left out (they are not ADK's, see the module docstring)."""
    kind = part.get("type")
    if kind == "text" and part.get("content"):
        return {"text": part["content"]}
    if kind == "tool_call":
        return {"function_call": {"name": part.get("name"), "args": _loaded(part.get("arguments")) or {}}}
    if kind == "tool_call_response":
        name = part.get("name") or names.get(str(part.get("id")), "")
        return {"function_response": {"name": name, "response": _response_dict(part)}}
    return None


def _response_dict(part: dict[str, Any]) -> dict[str, Any]:
    response = _loaded(part.get("response"))
    return response if isinstance(response, dict) else {"result": response}


def _legacy_messages(attributes: dict[str, Any], with_inputs: bool) -> tuple[list[dict[str, Any]] | None, Any]:
    """`gcp.vertex.agent.llm_request` / `llm_response` (ADK's legacy schema; `{}` when content is off)."""
    request = _loaded(attributes.get("gcp.vertex.agent.llm_request")) if with_inputs else None
    response = _loaded(attributes.get("gcp.vertex.agent.llm_response"))
    contents = request.get("contents") if isinstance(request, dict) else None
    output = response.get("content") if isinstance(response, dict) else None
    return (contents if isinstance(contents, list) else None), output


def _usage(attributes: dict[str, Any]) -> dict[str, int] | None:
    names = {
        "prompt_token_count": "gen_ai.usage.input_tokens",
        "candidates_token_count": "gen_ai.usage.output_tokens",
        "thoughts_token_count": "gen_ai.usage.reasoning.output_tokens",
    }
    usage = {key: int(attributes[name]) for key, name in names.items() if attributes.get(name) is not None}
    if "thoughts_token_count" not in usage and attributes.get("gen_ai.usage.experimental.reasoning_tokens"):
        usage["thoughts_token_count"] = int(attributes["gen_ai.usage.experimental.reasoning_tokens"])
    return usage or None


def _with_text(output: Any) -> Any:
    """A model output that has text (function calls alone, or an empty text, are no answer), else None."""
    if isinstance(output, dict) and any(part.get("text") for part in output.get("parts") or []):
        return output
    return None


def _tool_responses_ending(inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The function responses a model call's input ends with: the call continues a turn (a plain GenAI loop,
    where each model call is a trace of its own); none when the input ends with the user's message."""
    parts = inputs[-1].get("parts") or [] if inputs else []
    return [part for part in parts if part.get("function_response")]


def _user_content(call: _ModelCall) -> dict[str, Any]:
    """The last user message with text in the first model call's input."""
    for content in reversed(call.inputs):
        if (content.get("role") or "user") == "user" and any(p.get("text") for p in content.get("parts") or []):
            return {"role": "user", "parts": [p for p in content["parts"] if p.get("text")]}
    return {"role": "user", "parts": []}


# ----------------------------------------------------------------------------------------------------- events
def _events(calls: list[_ModelCall], models: list[Span], tools: list[Span]) -> list[InvocationEvent]:
    """ADK-shaped events: each model call (its tokens; its function calls, from the tool spans that follow it),
    then the tool responses; the last call's text is the final response, not repeated here. Without tool spans
    (plain GenAI spans), a call's function calls are those of its output; their responses open the next trace."""
    events = []
    for index, call in enumerate(calls):
        until = models[index + 1].start_ns if index + 1 < len(models) else None
        own = [t for t in tools if t.start_ns >= call.span.start_ns and (until is None or t.start_ns < until)]
        calls_made = [{"function_call": _function_call(t)} for t in own] or _output_calls(call, bool(tools))
        content = {"role": "model", "parts": calls_made} if calls_made else None
        events.append(_event(_author(call), content, call))  # the call itself: its tokens, its function calls
        responses = [{"function_response": _function_response(t)} for t in own if not t.error]  # raised: none
        if responses:
            events.append(_event(_author(call), {"role": "user", "parts": responses}))
    return events


def _output_calls(call: _ModelCall, has_tool_spans: bool) -> list[dict[str, Any]]:
    if has_tool_spans or not isinstance(call.output, dict):
        return []
    return [part for part in call.output.get("parts") or [] if part.get("function_call")]


def _responses_event(call: _ModelCall, responses: list[dict[str, Any]]) -> list[InvocationEvent]:
    """The tool responses a continuing call's input ends with, as the event that precedes it."""
    if not responses:
        return []
    return [_event(_author(call), {"role": "user", "parts": responses})]


def _author(call: _ModelCall) -> str:
    return str(call.span.attributes.get("gen_ai.agent.name") or call.agent_name or "agent")


def _event(author: str, content: dict[str, Any] | None, call: _ModelCall | None = None) -> InvocationEvent:
    """An event; with `call`, the model call's (its tokens and model version)."""
    attributes = call.span.attributes if call is not None else {}
    usage = call.usage if call is not None else None
    return _built(
        InvocationEvent,
        author=author,
        content=_content_model(content),
        usage_metadata=_usage_model(usage),
        model_version=attributes.get("gen_ai.response.model") or attributes.get("gen_ai.request.model"),
    )


# ------------------------------------------------------------------------------------------- genai models
# Built from values this module made (strings, ints, JSON objects) by copying an empty instance with the fields
# set (`model_copy(update=...)`), so pydantic does not check them again: validating (or `model_construct`, which
# resolves every default) google-genai's many-field models was most of the time it took to map a span.
# Every field left out keeps the empty instance's value: None or an immutable default, never a shared list.
_ModelT = TypeVar("_ModelT", bound=BaseModel)
_EMPTY: dict[type[BaseModel], BaseModel] = {
    Invocation: Invocation(user_content=genai_types.Content()),
    InvocationEvent: InvocationEvent(author=""),
}


def _built(model: type[_ModelT], **fields: Any) -> _ModelT:
    empty = _EMPTY.get(model)
    if empty is None:
        empty = _EMPTY[model] = model()
    return cast(_ModelT, empty.model_copy(update=fields))


def _content_model(content: dict[str, Any] | None) -> genai_types.Content | None:
    if content is None:
        return None
    parts = [_part_model(part) for part in content.get("parts") or ()]
    return _built(genai_types.Content, role=content.get("role"), parts=parts)


def _part_model(part: dict[str, Any]) -> genai_types.Part:
    """A part we built (text, function call, function response); any other (a legacy request's), validated."""
    if part.keys() == {"text"}:
        return _built(genai_types.Part, text=part["text"])
    if part.keys() == {"function_call"}:
        call = part["function_call"]
        fields = {"id": call.get("id"), "name": call.get("name"), "args": call.get("args")}
        return _built(genai_types.Part, function_call=_built(genai_types.FunctionCall, **fields))
    if part.keys() == {"function_response"}:
        answer = part["function_response"]
        fields = {"id": answer.get("id"), "name": answer.get("name"), "response": answer.get("response")}
        return _built(genai_types.Part, function_response=_built(genai_types.FunctionResponse, **fields))
    return genai_types.Part.model_validate(part)


def _usage_model(usage: dict[str, int] | None) -> genai_types.GenerateContentResponseUsageMetadata | None:
    return _built(genai_types.GenerateContentResponseUsageMetadata, **usage) if usage else None


def _function_call(tool: Span) -> dict[str, Any]:
    attributes = tool.attributes
    args = _loaded(attributes.get("gen_ai.tool.call.arguments") or attributes.get("gcp.vertex.agent.tool_call_args"))
    return {"id": _call_id(tool), "name": _tool_name(tool), "args": args if isinstance(args, dict) else None}


def _function_response(tool: Span) -> dict[str, Any]:
    attributes = tool.attributes
    raw = attributes.get("gen_ai.tool.call.result") or attributes.get("gcp.vertex.agent.tool_response")
    response = _loaded(raw)
    return {
        "id": _call_id(tool),
        "name": _tool_name(tool),
        "response": response if isinstance(response, dict) else ({"result": response} if response else None),
    }


def _call_id(tool: Span) -> str | None:
    """ADK's function call id (`adk-...`); ADK writes `<not specified>` on a tool that raised."""
    value = tool.attributes.get("gen_ai.tool.call.id")
    return None if not value or value == "<not specified>" else str(value)


def _tool_name(tool: Span) -> str:
    return str(tool.attributes.get("gen_ai.tool.name") or tool.name.removeprefix("execute_tool "))


# ---------------------------------------------------------------------------------------------------- helpers
def _loaded(value: Any) -> Any:
    """A JSON payload carried as a string attribute, parsed; `{}` and unparsable text count as absent."""
    if not isinstance(value, str):
        return value
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        return value
    return None if parsed in ({}, [], "") else parsed


def _first(spans: list[Span], *keys: str) -> Any:
    for span in spans:
        for key in keys:
            if span.attributes.get(key):
                return span.attributes[key]
    return None


def _agent_name(ordered: list[Span]) -> str | None:
    name = _first(ordered, "gen_ai.agent.name")
    return str(name) if name else None


def _error(ordered: list[Span]) -> str | None:
    """The error of the span where the turn failed: of the spans with status ERROR (an error propagates to
    the ancestors), the one that started last, i.e. the deepest (`execute_tool ...`, not the root)."""
    failed = [span for span in ordered if span.error]
    return f"span {failed[-1].name!r}: {failed[-1].error}" if failed else None


def _seconds(span: Span) -> float:
    return round(max(span.end_ns - span.start_ns, 0) / _NANOS, 6)
