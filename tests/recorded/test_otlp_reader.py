"""The OTLP readers: JSON lines as the Collector writes them (hex ids, int64 as strings, base64 accepted), gzip,
protobuf with 4-byte length prefixes, bad lines skipped with file and line, traces grouped as they complete."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from agent_eval.errors import EvalInputError
from agent_eval.io.recorded import recorded_files
from agent_eval.io.recorded.otlp import SkippedInput, Span, read_spans
from agent_eval.io.recorded.traces import group_traces

TRACE = "5b8efff798038103d269b633813fc60c"


def otlp_span(span_id: str, parent: str | None, name: str, start: int, **attributes: Any) -> dict[str, Any]:
    span: dict[str, Any] = {
        "traceId": TRACE,
        "spanId": span_id,
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 1_000_000),
        "attributes": [{"key": key, "value": _value(value)} for key, value in attributes.items()],
        "status": {},
    }
    if parent:
        span["parentSpanId"] = parent
    return span


def _value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_value(item) for item in value]}}
    return {"stringValue": value}


def request_line(*spans: dict[str, Any], service: str = "shop") -> str:
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]}
    return json.dumps({"resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": {}, "spans": list(spans)}]}]})


def read_all(path: Path) -> tuple[list[Span], list[SkippedInput]]:
    skipped: list[SkippedInput] = []
    return list(read_spans([file for file, _ in recorded_files(path, "otel")], skipped.append)), skipped


def test_a_collector_line_gives_typed_attributes_hex_ids_and_the_service(tmp_path: Path) -> None:
    file = tmp_path / "spans.jsonl"
    line = request_line(
        otlp_span("aaaaaaaaaaaaaaaa", None, "invoke_workflow", 10**18, tokens=12, ratio=0.5, ok=True, tags=["a", "b"])
    )
    file.write_text(line + "\n")

    (span,), skipped = read_all(file)

    assert skipped == []
    assert (span.trace_id, span.span_id, span.parent_id) == (TRACE, "aaaaaaaaaaaaaaaa", None)
    assert span.attributes == {"tokens": 12, "ratio": 0.5, "ok": True, "tags": ["a", "b"]}
    assert (span.start_ns, span.end_ns) == (10**18, 10**18 + 1_000_000)
    assert span.service == "shop" and span.source == f"{file}:1" and span.error is None


def test_base64_ids_and_snake_case_keys_are_accepted(tmp_path: Path) -> None:
    raw = {
        "resource_spans": [
            {
                "scope_spans": [
                    {
                        "spans": [
                            {
                                "trace_id": base64.b64encode(bytes.fromhex(TRACE)).decode(),
                                "span_id": base64.b64encode(bytes.fromhex("0102030405060708")).decode(),
                                "name": "x",
                                "start_time_unix_nano": "5",
                                "end_time_unix_nano": "6",
                                "status": {"code": "STATUS_CODE_ERROR", "message": "boom"},
                            }
                        ]
                    }
                ]
            }
        ]
    }
    file = tmp_path / "spans.json.gz"
    with gzip.open(file, "wt") as stream:
        stream.write(json.dumps(raw) + "\n")

    (span,), _ = read_all(file)

    assert (span.trace_id, span.span_id, span.error) == (TRACE, "0102030405060708", "boom")


def test_a_truncated_line_and_a_line_that_is_not_otlp_are_skipped_with_their_line(tmp_path: Path) -> None:
    good = request_line(otlp_span("aaaaaaaaaaaaaaaa", None, "root", 1))
    file = tmp_path / "spans.jsonl"
    file.write_text(good + "\n" + good[:40] + "\n" + json.dumps({"hello": 1}) + "\n")

    spans, skipped = read_all(file)

    assert len(spans) == 1
    assert [s.source for s in skipped] == [f"{file}:2", f"{file}:3"]
    assert skipped[0].reason.startswith("truncated or invalid JSON")
    assert skipped[1].reason == "not an OTLP ExportTraceServiceRequest (no resourceSpans)"


def test_a_file_without_any_span_is_an_input_error_naming_it(tmp_path: Path) -> None:
    file = tmp_path / "notes.jsonl"
    file.write_text('{"prompt": "hi"}\n')

    with pytest.raises(EvalInputError) as raised:
        read_all(file)

    assert raised.value.one_line() == (
        f"{file}: no OpenTelemetry spans in the file: not an OTLP ExportTraceServiceRequest (no resourceSpans)"
    )


def test_protobuf_files_are_length_prefixed_requests(tmp_path: Path) -> None:
    from google.protobuf.json_format import ParseDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    def message(span_id: str, parent: str | None) -> bytes:
        span = otlp_span(span_id, parent, "s", 7, calls=3)
        for key in ("traceId", "spanId", "parentSpanId"):  # protobuf's JSON mapping: bytes in base64
            if key in span:
                span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
        return ParseDict(json.loads(request_line(span)), ExportTraceServiceRequest()).SerializeToString()

    body = b"".join(len(m).to_bytes(4, "big") + m for m in (message("bbbbbbbbbbbbbbbb", "aaaaaaaaaaaaaaaa"),))
    file = tmp_path / "spans.binpb"
    file.write_bytes(body + b"\x00\x00\x00\x09abc")  # a truncated last message

    spans, skipped = read_all(file)

    assert [(s.span_id, s.parent_id, s.attributes, s.service) for s in spans] == [
        ("bbbbbbbbbbbbbbbb", "aaaaaaaaaaaaaaaa", {"calls": 3}, "shop")
    ]
    assert spans[0].source == f"{file}#1"
    assert [s.reason for s in skipped] == ["unreadable: the file ends inside a message of 9 bytes (truncated)"]


def test_a_trace_is_complete_when_its_root_arrives_and_orphans_are_reported(tmp_path: Path) -> None:
    child = Span(TRACE, "b" * 16, "a" * 16, "child", 2, 3, {}, source="f:1")
    root = Span(TRACE, "a" * 16, None, "root", 1, 4, {}, source="f:2")
    late = Span(TRACE, "c" * 16, "a" * 16, "late", 3, 4, {}, source="f:3")
    orphan = Span("f" * 32, "d" * 16, "e" * 16, "orphan", 1, 2, {}, source="f:4")
    skipped: list[SkippedInput] = []

    traces = list(group_traces([child, root, late, orphan], skipped.append))

    assert [[span.name for span in trace] for trace in traces] == [["child", "root"]]
    assert [s.one_line() for s in skipped] == [
        f"f:3: span 'late' of trace {TRACE} came after its root",
        f"f:4: trace {'f' * 32}: 1 span(s) whose root span is not in the input (orphans)",
    ]


def test_a_folder_is_read_in_name_order_and_must_hold_span_files(tmp_path: Path) -> None:
    (tmp_path / "b.jsonl").write_text(request_line(otlp_span("bbbbbbbbbbbbbbbb", None, "second", 2)) + "\n")
    (tmp_path / "a.jsonl").write_text(request_line(otlp_span("aaaaaaaaaaaaaaaa", None, "first", 1)) + "\n")
    (tmp_path / "README.md").write_text("not spans")

    spans, _ = read_all(tmp_path)

    assert [span.name for span in spans] == ["first", "second"]
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "rotated-just-now.jsonl").write_text("")  # an exporter's new file: not yet traffic, left out
    assert recorded_files(empty) == []


def test_several_services_in_one_input_are_named_in_a_note(tmp_path: Path) -> None:
    from agent_eval.io.recorded import RecordedSource, load_recorded

    def turn(trace: str, service: str) -> str:
        model = otlp_span(
            "bbbbbbbbbbbbbbbb", "aaaaaaaaaaaaaaaa", "generate_content m", 2, **{"gen_ai.usage.input_tokens": 3}
        )
        root = otlp_span("aaaaaaaaaaaaaaaa", None, "invoke_workflow a", 1, **{"gen_ai.conversation.id": trace})
        line = json.loads(request_line(model, root, service=service))
        for span in line["resourceSpans"][0]["scopeSpans"][0]["spans"]:
            span["traceId"] = trace * 32
        return json.dumps(line)

    file = tmp_path / "spans.jsonl"
    file.write_text(turn("1", "shop") + "\n" + turn("2", "billing") + "\n")

    notes = load_recorded(RecordedSource(paths=[str(file)])).notes()
    only_shop = load_recorded(RecordedSource(paths=[str(file)], services=["shop"]))

    assert "spans of 2 services: billing, shop (--service NAME scores one)" in notes
    assert [case.eval_id for case in only_shop.eval_set.eval_cases] == ["1"]  # its session: the conversation id
    assert only_shop.filtered_out == 1
