"""Minimal ADK 2.x turns as OTLP JSON lines, with chosen sessions and start times (for schedule tests)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["SECOND", "append_traces", "trace_line"]

SECOND = 1_000_000_000


def trace_line(session: str, number: int, started_ns: int) -> str:
    """One ADK 2.x turn (root, agent, one model call with tokens) as the Collector writes it, on one line."""
    trace_id = f"{number:032x}"

    def span(span_id: int, parent: int | None, name: str, **attributes: Any) -> dict[str, Any]:
        values = [
            {"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}}
            for k, v in attributes.items()
        ]
        body: dict[str, Any] = {
            "traceId": trace_id,
            "spanId": f"{number:08x}{span_id:08x}",
            "name": name,
            "startTimeUnixNano": str(started_ns + span_id),
            "endTimeUnixNano": str(started_ns + SECOND - span_id),
            "attributes": values,
            "status": {},
        }
        if parent is not None:
            body["parentSpanId"] = f"{number:08x}{parent:08x}"
        return body

    spans = [
        span(
            3,
            2,
            "generate_content m",
            **{
                "gen_ai.operation.name": "generate_content",
                "gen_ai.usage.input_tokens": number,
                "gen_ai.usage.output_tokens": 1,
            },
        ),
        span(2, 1, "invoke_agent a", **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}),
        span(1, None, "invoke_workflow a", **{"gen_ai.conversation.id": session}),
    ]
    return json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": spans}]}]})


def append_traces(folder: Path, name: str, traces: list[tuple[str, int, int]]) -> None:
    with (folder / name).open("a", encoding="utf-8") as stream:
        for session, number, started in traces:
            stream.write(trace_line(session, number, started) + "\n")
