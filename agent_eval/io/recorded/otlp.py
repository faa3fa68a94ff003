"""Reading OpenTelemetry spans from files, streaming: OTLP JSON lines and OTLP protobuf, plain or `.gz`.

- **JSON lines** as the OpenTelemetry Collector's `file` exporter writes them: one `ExportTraceServiceRequest` per
  line, lowerCamelCase keys (snake_case accepted), ids in hex (base64 accepted), int64 values as strings.
- **Protobuf** (`.binpb`, `.pb`, `.otlp`) as the same exporter writes with `format: proto`: each
  `ExportTraceServiceRequest` preceded by its length, 4 bytes big-endian; parsed by `opentelemetry-proto`.

A line or message that cannot be read is skipped and reported (`SkippedInput`: file, line, what is wrong), so one
truncated line in a day of production spans does not lose the day; a file in which nothing could be read is an
input error. Memory holds one line (one message) at a time.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, BinaryIO, cast

from agent_eval.errors import EvalInputError

__all__ = [
    "JSON_SUFFIXES",
    "PROTO_SUFFIXES",
    "SkippedInput",
    "Span",
    "read_spans",
]

JSON_SUFFIXES = (".jsonl", ".json", ".ndjson")
PROTO_SUFFIXES = (".binpb", ".pb", ".otlp")
_STATUS_ERROR = 2
_LENGTH_BYTES = 4


@dataclass(slots=True)
class Span:
    """One span, with what the mapping to turns needs. Times in nanoseconds since the epoch."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    error: str | None = None
    """The status message (or "error") when the span's status is ERROR, else None."""
    service: str | None = None
    source: str = ""
    """Where it was read: `FILE:LINE` (JSON) or `FILE#MESSAGE` (protobuf)."""


@dataclass(slots=True)
class SkippedInput:
    """A line, message or trace that could not be used, and why (one line for the user)."""

    source: str
    reason: str

    def one_line(self) -> str:
        """`SOURCE: REASON`."""
        return f"{self.source}: {self.reason}"


@dataclass
class _Reading:
    """What one file gave: spans were found in it or not; what was skipped."""

    path: Path
    skipped: list[SkippedInput] = field(default_factory=list)
    spans: int = 0


def read_spans(paths: Iterable[Path], on_skip: Callable[[SkippedInput], None]) -> Iterator[Span]:
    """Every span of the files, in file order; unreadable lines or messages go to `on_skip`.

    Raises:
        EvalInputError: a file holds no OTLP span at all (not OTLP, or empty).
    """
    for path in paths:
        reading = _Reading(path)
        reader = _proto_spans if _kind(path) == "proto" else _json_spans
        for span in reader(reading):
            reading.spans += 1
            yield span
        for skipped in reading.skipped:
            on_skip(skipped)
        if reading.spans == 0:
            first = f": {reading.skipped[0].reason}" if reading.skipped else ""
            raise EvalInputError(f"no OpenTelemetry spans in the file{first}", file=path)


def _kind(path: Path) -> str | None:
    name = path.name.lower().removesuffix(".gz")
    if name.endswith(JSON_SUFFIXES):
        return "json"
    if name.endswith(PROTO_SUFFIXES):
        return "proto"
    return None


def _open(path: Path) -> BinaryIO:
    if path.name.lower().endswith(".gz"):
        return cast(BinaryIO, gzip.GzipFile(path, "rb"))
    return path.open("rb")


# ------------------------------------------------------------------------------------------------ JSON lines
def _json_spans(reading: _Reading) -> Iterator[Span]:
    try:
        with _open(reading.path) as stream:
            for number, raw in enumerate(stream, start=1):
                if raw.strip():
                    yield from _json_line(raw, f"{reading.path}:{number}", reading)
    except (OSError, EOFError) as error:  # a truncated .gz, a permission error
        reading.skipped.append(SkippedInput(str(reading.path), f"unreadable: {error}"))


def _json_line(raw: bytes, source: str, reading: _Reading) -> Iterator[Span]:
    try:
        request = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        reading.skipped.append(SkippedInput(source, f"truncated or invalid JSON ({error})"))
        return
    resource_spans = _get(request, "resourceSpans") if isinstance(request, dict) else None
    if not isinstance(resource_spans, list):
        reading.skipped.append(SkippedInput(source, "not an OTLP ExportTraceServiceRequest (no resourceSpans)"))
        return
    try:
        yield from _spans_of_request(resource_spans, source)
    except (KeyError, TypeError, ValueError) as error:
        reading.skipped.append(SkippedInput(source, f"malformed OTLP span: {error}"))


def _spans_of_request(resource_spans: list[Any], source: str) -> Iterator[Span]:
    for resource_span in resource_spans:
        resource = _attributes(_get(_get(resource_span, "resource") or {}, "attributes"))
        service = resource.get("service.name")
        for scope_span in _get(resource_span, "scopeSpans") or _get(resource_span, "instrumentationLibrarySpans") or []:
            for span in _get(scope_span, "spans") or []:
                yield _json_span(span, service, source)


def _json_span(span: dict[str, Any], service: Any, source: str) -> Span:
    get = span.get
    status = get("status") or {}
    parent = get("parentSpanId") or get("parent_span_id")
    return Span(
        trace_id=_hex_id(get("traceId") or get("trace_id"), 16),
        span_id=_hex_id(get("spanId") or get("span_id"), 8),
        parent_id=_hex_id(parent, 8) if parent else None,
        name=str(get("name") or ""),
        start_ns=int(get("startTimeUnixNano") or get("start_time_unix_nano") or 0),
        end_ns=int(get("endTimeUnixNano") or get("end_time_unix_nano") or 0),
        attributes=_attributes(get("attributes")),
        error=_status_error(status.get("code"), status.get("message")) if status else None,
        service=str(service) if service is not None else None,
        source=source,
    )


def _get(data: dict[str, Any], camel: str) -> Any:
    """A key in lowerCamelCase, or its snake_case form (protobuf's JSON mapping accepts both)."""
    value = data.get(camel)
    if value is None:
        value = data.get(_SNAKE.get(camel) or "".join(f"_{c.lower()}" if c.isupper() else c for c in camel))
    return value


_SNAKE = {"resourceSpans": "resource_spans", "scopeSpans": "scope_spans", "arrayValue": "array_value"}
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def _hex_id(value: Any, size: int) -> str:
    """An id as lowercase hex: the Collector writes hex; protobuf's own JSON mapping writes base64."""
    text = str(value or "")
    if len(text) == size * 2 and _HEX_DIGITS.issuperset(text):
        return text.lower()
    try:
        raw = base64.b64decode(text, validate=True)
    except binascii.Error:
        raw = b""
    if len(raw) != size:
        raise ValueError(f"an id must be {size * 2} hex digits or {size} bytes in base64, got {text!r}")
    return raw.hex()


def _status_error(code: Any, message: Any) -> str | None:
    if code in (_STATUS_ERROR, "STATUS_CODE_ERROR", str(_STATUS_ERROR)):
        return str(message) if message else "error"
    return None


def _attributes(items: Any) -> dict[str, Any]:
    return {str(item["key"]): _any_value(item.get("value") or {}) for item in items or ()}


def _any_value(value: dict[str, Any]) -> Any:
    """An OTLP `AnyValue` (one key: its kind) as a Python value; int64 arrive as strings."""
    for kind, raw in value.items():
        convert = _SCALARS.get(kind)
        if convert is not None:
            return convert(raw)
        if kind in ("arrayValue", "array_value"):
            return [_any_value(item) for item in (raw or {}).get("values") or ()]
        if kind in ("kvlistValue", "kvlist_value"):
            return _attributes((raw or {}).get("values"))
    return None


_SCALARS: dict[str, Callable[[Any], Any]] = {
    "stringValue": str,
    "string_value": str,
    "intValue": int,
    "int_value": int,
    "doubleValue": float,
    "double_value": float,
    "boolValue": bool,
    "bool_value": bool,
    "bytesValue": str,
    "bytes_value": str,
}


# -------------------------------------------------------------------------------------------------- protobuf
def _proto_spans(reading: _Reading) -> Iterator[Span]:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    try:
        with _open(reading.path) as stream:
            for number, message in enumerate(_length_prefixed(stream), start=1):
                source = f"{reading.path}#{number}"
                try:
                    request = ExportTraceServiceRequest.FromString(message)
                except Exception as error:  # protobuf's DecodeError, and anything a corrupt message raises
                    reading.skipped.append(SkippedInput(source, f"not an OTLP ExportTraceServiceRequest ({error})"))
                    continue
                yield from _proto_request_spans(request, source)
    except (OSError, EOFError, ValueError) as error:
        reading.skipped.append(SkippedInput(str(reading.path), f"unreadable: {error}"))


def _length_prefixed(stream: IO[bytes]) -> Iterator[bytes]:
    """The messages of a file written as (4-byte big-endian length, message) pairs.

    Raises:
        ValueError: the file ends inside a message.
    """
    while header := stream.read(_LENGTH_BYTES):
        if len(header) < _LENGTH_BYTES:
            raise ValueError("the file ends inside a length prefix (truncated)")
        size = int.from_bytes(header, "big")
        message = stream.read(size)
        if len(message) < size:
            raise ValueError(f"the file ends inside a message of {size} bytes (truncated)")
        yield message


def _proto_request_spans(request: Any, source: str) -> Iterator[Span]:
    for resource_span in request.resource_spans:
        resource = {kv.key: _proto_value(kv.value) for kv in resource_span.resource.attributes}
        service = resource.get("service.name")
        for scope_span in resource_span.scope_spans:
            for span in scope_span.spans:
                yield Span(
                    trace_id=span.trace_id.hex(),
                    span_id=span.span_id.hex(),
                    parent_id=span.parent_span_id.hex() or None,
                    name=span.name,
                    start_ns=span.start_time_unix_nano,
                    end_ns=span.end_time_unix_nano,
                    attributes={kv.key: _proto_value(kv.value) for kv in span.attributes},
                    error=_status_error(span.status.code, span.status.message),
                    service=str(service) if service is not None else None,
                    source=source,
                )


def _proto_value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_proto_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _proto_value(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":  # as OTLP JSON carries bytes: base64
        return base64.b64encode(value.bytes_value).decode("ascii")
    return getattr(value, kind) if kind else None
