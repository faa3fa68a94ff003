"""Recorded turns, whatever they were read from, and the eval cases they become (one per session).

A recorded case holds what the agent did (`actual_conversation`) and no agent is called: it is scored as it is.
It has expected invocations only where an eval set with the same case id gives them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from agent_eval.schema import EvalCase, Invocation, InvocationEvent, InvocationEvents, RecordedOrigin

__all__ = [
    "CONTENT_SETTING",
    "RecordedTurn",
    "TurnFilter",
    "case_of_session",
]

CONTENT_SETTING = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY"
"""The setting that makes ADK (and the GenAI instrumentations) record message text and tool arguments."""


@dataclass(slots=True)
class RecordedTurn:
    """One turn (one ADK invocation, one trace) as it was recorded."""

    session_id: str
    invocation: Invocation
    source: str
    """Where it was read: `FILE:LINE` of its first span, or the session's URL."""
    started_ns: int = 0
    service: str | None = None
    agent_name: str | None = None
    app_name: str | None = None
    user_id: str | None = None
    error: str | None = None
    """Why the turn failed (a span or an event with an error), else None."""
    content_captured: bool = True
    state: dict[str, object] = field(default_factory=dict)
    continues: bool = False
    """The turn goes on from the previous one of its session (plain GenAI spans: one trace per model call, and
    this call's input ends with tool responses): joined into it."""


@dataclass(frozen=True, slots=True)
class TurnFilter:
    """Which recorded turns to score: by start time (ns since the epoch, `until` excluded), service, agent and
    app (sessions). Applied to whole turns, so the turns left out are counted."""

    since_ns: int | None = None
    until_ns: int | None = None
    services: frozenset[str] = frozenset()
    agent_names: frozenset[str] = frozenset()
    app_names: frozenset[str] = frozenset()

    def keeps(self, turn: RecordedTurn) -> bool:
        """Whether `turn` passes every given condition."""
        if self.since_ns is not None and turn.started_ns < self.since_ns:
            return False
        if self.until_ns is not None and turn.started_ns >= self.until_ns:
            return False
        if self.services and turn.service not in self.services:
            return False
        if self.app_names and turn.app_name not in self.app_names:
            return False
        return not self.agent_names or turn.agent_name in self.agent_names


def case_of_session(session_id: str, turns: list[RecordedTurn]) -> EvalCase:
    """The recorded case of one session from its turns in order (start time, then reading order; each turn
    once): each continuing turn joined into the one before it."""
    return _case(session_id, _joined(turns))


def _joined(turns: list[RecordedTurn]) -> list[RecordedTurn]:
    """The turns with each continuing one joined into the turn before it (its events appended, its answer
    the turn's answer, the times summed)."""
    joined: list[RecordedTurn] = []
    for turn in turns:
        if turn.continues and joined:
            joined[-1] = _join(joined[-1], turn)
        else:
            joined.append(turn)
    return joined


def _join(first: RecordedTurn, then: RecordedTurn) -> RecordedTurn:
    before, after = first.invocation, then.invocation
    events = [*_events_of(before), *_events_of(after)]
    invocation = before.model_copy(
        update={
            "final_response": after.final_response,
            "intermediate_data": InvocationEvents(invocation_events=events),
            "duration": _span(first, then),
            "model_duration": _sum(before.model_duration, after.model_duration),
            "tool_duration": _sum(before.tool_duration, after.tool_duration),
        }
    )
    return replace(
        first,
        invocation=invocation,
        error=first.error or then.error,
        content_captured=first.content_captured and then.content_captured,
    )


def _span(first: RecordedTurn, then: RecordedTurn) -> float | None:
    """Seconds from the first turn's start to the end of the one that continues it."""
    if then.invocation.duration is None:
        return None
    return round((then.started_ns - first.started_ns) / 1e9 + then.invocation.duration, 6)


def _events_of(invocation: Invocation) -> list[InvocationEvent]:
    data = invocation.intermediate_data
    return list(data.invocation_events) if isinstance(data, InvocationEvents) else []


def _sum(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round(a + b, 6)


def _case(session_id: str, turns: list[RecordedTurn]) -> EvalCase:
    first = turns[0]
    failed = [turn for turn in turns if turn.error]
    origin = RecordedOrigin(
        sources=list(dict.fromkeys(turn.source for turn in turns)),  # each file and line once, in order
        content_captured=all(turn.content_captured for turn in turns),
        service=first.service,
        agent_name=first.agent_name,
        app_name=first.app_name,
        user_id=first.user_id,
        error=f"turn {turns.index(failed[0]) + 1}: {failed[0].error}" if failed else None,
        state=dict(first.state),
    )
    return EvalCase(eval_id=session_id, actual_conversation=[turn.invocation for turn in turns], recorded=origin)
