"""Recorded-trace fixtures made by running the real emitters: ADK's own telemetry and the google-genai instrumentor.

`make_fixtures(out_dir)` runs one subprocess per telemetry variant (ADK and OpenTelemetry read their environment
variables when they start), one per core at a time (at least two), and writes under `out_dir`:

- `adk2-content/`, `adk2-nocontent/`, `legacy-content/`, `legacy-nocontent/`: a real `google.adk.runners.Runner`
  runs the `home_agent` `LlmAgent` (played by `ScriptedLlm`, no network) through the sessions of `SESSIONS`:
  `s-weather` (two turns, one tool call; its initial state is `{"home": "flat 3"}`), `s-devices` (two
  `set_device` calls in one model response) and `s-broken` (the tool raises: ADK records the error and
  `Runner.run_async` re-raises it). Each directory holds `traces.jsonl`, `traces.binpb`, `sessions.json` (every
  session as the api_server's `GET /apps/{app}/users/{user}/sessions/{id}` returns it) and
  `session-s-weather.json`. `adk2-content/` also holds `sessions.db`, the `DatabaseSessionService` SQLite database
  the runner used.
- `genai-instrumented/traces.jsonl` (and `.binpb`): a plain google-genai function-calling loop (the code runs the
  tools) under `GoogleGenAiSdkInstrumentor`, against the fake Gemini server of `tests.fakes.gemini_server`, for the
  conversations of `GENAI_SESSIONS`. The instrumentor has no conversation-id parameter; the loop sets
  `gen_ai.conversation.id` through the instrumentation's `GENERATE_CONTENT_EXTRA_ATTRIBUTES_CONTEXT_KEY` (the hook
  ADK uses too). Each `generate_content` call is a root span: a plain app has no parent span to group a turn.

The telemetry switches (read in google/adk/telemetry/_schema_version.py and context.py):
`ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1` selects the legacy schema (default: 2);
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY` puts content on schema-2 spans (default: none);
`ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS=false` removes it from legacy spans (default: on).

The files are what an OpenTelemetry Collector's `file` exporter writes when an SDK's BatchSpanProcessor sends it
the spans: one export request (`{"resourceSpans": [...]}`) per batch of `SPANS_PER_BATCH` spans, spans in the order
they ended (children before their parents), so one trace spreads over several batches.
- `traces.jsonl` (`format: json`): one request per line in OTLP/JSON as the Collector's pdata marshaler writes it:
  lowerCamelCase keys, ids as lowercase hex, 64-bit integers as decimal strings, enums (`kind`, `status.code`)
  as numbers, empty fields left out except `status` (`{}` when unset), span keys in the Collector's order.
- `traces.binpb` (`format: proto`): each request serialized as protobuf and preceded by its length as a 4-byte
  big-endian unsigned integer (not a protobuf varint). Source: opentelemetry-collector-contrib,
  exporter/fileexporter/file_writer.go, `exportMessageAsBuffer` ("each encoded object is preceded by 4 bytes (an
  unsigned 32 bit integer)"), used for `format: proto`; the exporter's README says the same.

Run as a script: `python -m tests.recorded.emitters OUT_DIR`.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import subprocess
import sys
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

if TYPE_CHECKING:
    from google import genai
    from google.adk.models import BaseLlm, LlmResponse
    from google.adk.runners import Runner
    from google.adk.sessions import BaseSessionService, Session
    from google.genai import types
    from google.protobuf.message import Message
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

REPO_ROOT = Path(__file__).resolve().parents[2]
MODULE = "tests.recorded.emitters"

APP_NAME = "home_app"
USER_ID = "user_1"
AGENT_NAME = "home_agent"
MODEL = "gemini-2.5-flash"
SERVICE_NAME = "home-service"
INSTRUCTION = "You are the assistant of a smart home. Use the tools to answer."
SPANS_PER_BATCH = 3
SUBPROCESS_TIMEOUT_S = 120.0

# Environment variables a variant sets from scratch: any of these inherited from the caller is dropped.
_TELEMETRY_ENV_PREFIXES = ("OTEL_", "ADK_", "GOOGLE_GENAI_", "GOOGLE_CLOUD_AGENT_ENGINE")


# --- The script ------------------------------------------------------------------------------------------------


class Call(NamedTuple):
    """A scripted function call; `id=None` is what Gemini API models send, and ADK then assigns `adk-<uuid>`."""

    name: str
    args: dict[str, Any]
    id: str | None = None


@dataclass(frozen=True)
class Reply:
    """One scripted model response: final text, or function calls (several = parallel calls), with its usage."""

    prompt_tokens: int
    output_tokens: int
    text: str | None = None
    calls: tuple[Call, ...] = ()

    @property
    def total_tokens(self) -> int:
        """`prompt_tokens + output_tokens`, the `total_token_count` reported."""
        return self.prompt_tokens + self.output_tokens


@dataclass(frozen=True)
class Turn:
    """A user message and the model responses it takes; `raises` when a tool error ends the turn."""

    user: str
    replies: tuple[Reply, ...]
    raises: bool = False


@dataclass(frozen=True)
class ScriptedSession:
    """A session (or, for google-genai, a conversation) with a fixed id, initial state and turns."""

    id: str
    turns: tuple[Turn, ...]
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def replies(self) -> tuple[Reply, ...]:
        """Every model response of the session, in order (one per model call)."""
        return tuple(reply for turn in self.turns for reply in turn.replies)


SESSIONS: tuple[ScriptedSession, ...] = (
    ScriptedSession(
        id="s-weather",
        state={"home": "flat 3"},
        turns=(
            Turn(
                "What is the weather in Paris?",
                (
                    Reply(101, 11, calls=(Call("get_weather", {"city": "Paris"}),)),
                    Reply(152, 12, text="It is sunny in Paris, 21°C."),
                ),
            ),
            Turn("Thanks!", (Reply(203, 13, text="You're welcome."),)),
        ),
    ),
    ScriptedSession(
        id="s-devices",
        turns=(
            Turn(
                "Turn on the lamp and the fan",
                (
                    Reply(
                        254,
                        24,
                        calls=(
                            Call("set_device", {"device_id": "lamp", "status": "on"}, id="call-lamp"),
                            Call("set_device", {"device_id": "fan", "status": "on"}, id="call-fan"),
                        ),
                    ),
                    Reply(305, 15, text="The lamp and the fan are on."),
                ),
            ),
        ),
    ),
    ScriptedSession(
        id="s-broken",
        turns=(
            Turn(
                "Reboot the hub, please",
                (Reply(356, 16, calls=(Call("reboot_hub", {"hub_id": "hub-1"}),)),),
                raises=True,
            ),
        ),
    ),
)
"""The ADK sessions, run in this order (user `USER_ID`, app `APP_NAME`)."""

GENAI_SESSIONS: tuple[ScriptedSession, ...] = SESSIONS[:2]
"""The google-genai conversations (their ids are the `gen_ai.conversation.id`)."""


# --- The tools -------------------------------------------------------------------------------------------------


def get_weather(city: str) -> dict[str, Any]:
    """Returns the current weather in a city.

    Args:
        city: the city's name.
    """
    return {"city": city, "sky": "sunny", "temperature_c": 21}


def set_device(device_id: str, status: str) -> dict[str, Any]:
    """Switches a home device on or off.

    Args:
        device_id: the device, e.g. "lamp".
        status: "on" or "off".
    """
    return {"device_id": device_id, "status": status, "ok": True}


def reboot_hub(hub_id: str) -> dict[str, Any]:
    """Reboots the home hub.

    Args:
        hub_id: the hub to reboot.
    """
    raise ConnectionError(f"hub {hub_id} is unreachable")


TOOLS = {tool.__name__: tool for tool in (get_weather, set_device, reboot_hub)}


# --- Variants and the fixtures' layout -------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """One telemetry configuration, emitted in its own process."""

    name: str
    emitter: Literal["adk", "genai"]
    env: Mapping[str, str]
    database: bool = False


VARIANTS: tuple[Variant, ...] = (
    Variant("adk2-content", "adk", {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}, database=True),
    Variant("adk2-nocontent", "adk", {}),
    Variant(
        "legacy-content",
        "adk",
        {"ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN": "1", "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS": "true"},
    ),
    Variant(
        "legacy-nocontent",
        "adk",
        {"ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN": "1", "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS": "false"},
    ),
    Variant("genai-instrumented", "genai", {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}),
)
_VARIANTS_BY_NAME = {variant.name: variant for variant in VARIANTS}


@dataclass(frozen=True)
class Fixtures:
    """Where `make_fixtures` wrote everything (see the module docstring), and how long it took."""

    out_dir: Path
    seconds: float = 0.0

    def dir(self, variant: str) -> Path:
        """The directory of one variant (a name from `VARIANTS`)."""
        if variant not in _VARIANTS_BY_NAME:
            raise KeyError(f"unknown variant {variant!r}; known: {sorted(_VARIANTS_BY_NAME)}")
        return self.out_dir / variant

    def traces_jsonl(self, variant: str) -> Path:
        """The variant's Collector `format: json` file."""
        return self.dir(variant) / "traces.jsonl"

    def traces_binpb(self, variant: str) -> Path:
        """The variant's Collector `format: proto` file."""
        return self.dir(variant) / "traces.binpb"

    def sessions_json(self, variant: str) -> Path:
        """The variant's sessions, as the ADK api_server returns them (ADK variants only)."""
        return self.dir(variant) / "sessions.json"

    @property
    def adk2_content(self) -> Path:
        return self.dir("adk2-content")

    @property
    def adk2_nocontent(self) -> Path:
        return self.dir("adk2-nocontent")

    @property
    def legacy_content(self) -> Path:
        return self.dir("legacy-content")

    @property
    def legacy_nocontent(self) -> Path:
        return self.dir("legacy-nocontent")

    @property
    def genai_instrumented(self) -> Path:
        return self.dir("genai-instrumented")

    @property
    def db_path(self) -> Path:
        """The `DatabaseSessionService` SQLite file of `adk2-content`."""
        return self.adk2_content / "sessions.db"

    @property
    def db_url(self) -> str:
        """`db_path` as ADK's `DatabaseSessionService` takes it."""
        return f"sqlite+aiosqlite:///{self.db_path}"


# --- The parent: one subprocess per variant --------------------------------------------------------------------


class EmitterError(RuntimeError):
    """A variant's subprocess failed; the message holds its output."""


def make_fixtures(out_dir: Path) -> Fixtures:
    """Emit every variant into `out_dir` (created if needed; files there are overwritten) and return the paths."""
    started = time.monotonic()
    out_dir = out_dir.resolve()  # the subprocesses run in the repository's root
    out_dir.mkdir(parents=True, exist_ok=True)
    workers = max(2, os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(lambda variant: _emit_in_subprocess(variant, out_dir / variant.name), VARIANTS))
    return Fixtures(out_dir=out_dir, seconds=time.monotonic() - started)


def _emit_in_subprocess(variant: Variant, directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", MODULE, "--variant", variant.name, str(directory)]
    result = subprocess.run(
        command,
        cwd=REPO_ROOT,
        env=_child_env(variant),
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT_S,
        check=False,
    )
    if result.returncode != 0:
        raise EmitterError(f"variant {variant.name} exited with {result.returncode}:\n{result.stdout}{result.stderr}")


def _child_env(variant: Variant) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(_TELEMETRY_ENV_PREFIXES)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return env | dict(variant.env)


# --- The child: one variant in this process --------------------------------------------------------------------


def emit_variant(name: str, directory: Path) -> None:
    """Run one variant in this process and write its files; the variant's env vars must already be set."""
    variant = _VARIANTS_BY_NAME[name]
    exporter = _install_tracer_provider()
    if variant.emitter == "adk":
        asyncio.run(_run_adk_sessions(directory, database=variant.database))
    else:
        _run_genai_sessions()
    spans = sorted(exporter.get_finished_spans(), key=lambda span: span.end_time or 0)
    if not spans:
        raise EmitterError(f"variant {name} recorded no span: the emitter did not use the global tracer provider")
    _write_traces(spans, directory)


def _install_tracer_provider() -> InMemorySpanExporter:
    """Installs the global tracer provider (before any emitter asks for a tracer); every span ends in the exporter."""
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE_NAME}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return exporter


# --- ADK -------------------------------------------------------------------------------------------------------


async def _run_adk_sessions(directory: Path, *, database: bool) -> None:
    from google.adk.agents import LlmAgent
    from google.adk.runners import Runner
    from google.adk.sessions import DatabaseSessionService, InMemorySessionService

    db_path = directory / "sessions.db"
    db_path.unlink(missing_ok=True)
    sessions: BaseSessionService = (
        DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{db_path}") if database else InMemorySessionService()
    )
    responses: deque[LlmResponse] = deque()
    agent = LlmAgent(
        name=AGENT_NAME,
        model=_scripted_llm(responses),
        description="Answers weather questions and switches home devices.",
        instruction=INSTRUCTION,
        tools=list(TOOLS.values()),
    )
    runner = Runner(agent=agent, app_name=APP_NAME, session_service=sessions)
    try:
        for scripted in SESSIONS:
            await _run_adk_session(runner, scripted, responses)
        _write_sessions(directory, [await _get_session(sessions, scripted.id) for scripted in SESSIONS])
    finally:
        await runner.close()
        if isinstance(sessions, DatabaseSessionService):
            await sessions.close()


async def _run_adk_session(runner: Runner, scripted: ScriptedSession, responses: deque[LlmResponse]) -> None:
    await runner.session_service.create_session(
        app_name=APP_NAME, user_id=USER_ID, session_id=scripted.id, state=scripted.state or None
    )
    for turn in scripted.turns:
        responses.extend(_llm_response(reply) for reply in turn.replies)
        await _run_adk_turn(runner, scripted.id, turn)
        if responses:
            raise EmitterError(f"{scripted.id}: {len(responses)} scripted model response(s) left unused")


async def _run_adk_turn(runner: Runner, session_id: str, turn: Turn) -> None:
    """One `Runner.run_async`; a turn scripted to raise must raise the tool's error, which is kept out of the way."""
    from google.genai import types

    message = types.Content(role="user", parts=[types.Part(text=turn.user)])
    try:
        async for _event in runner.run_async(user_id=USER_ID, session_id=session_id, new_message=message):
            pass
    except ConnectionError:
        if not turn.raises:
            raise
        return
    if turn.raises:
        raise EmitterError(f"{session_id}: the turn {turn.user!r} was scripted to raise, and ADK did not")


def _scripted_llm(responses: deque[LlmResponse]) -> BaseLlm:
    """A model answering each call with the next of `responses` (filled turn by turn)."""
    from google.adk.models import BaseLlm

    class ScriptedLlm(BaseLlm):
        async def generate_content_async(self, llm_request: Any, stream: bool = False) -> Any:
            del llm_request, stream
            if not responses:
                raise EmitterError("the model was called more often than scripted")
            yield responses.popleft()

    return ScriptedLlm(model=MODEL)


def _llm_response(reply: Reply) -> LlmResponse:
    """The `LlmResponse` ADK's Gemini model would make of this reply."""
    from google.adk.models import LlmResponse
    from google.genai import types

    return LlmResponse(
        content=types.Content(role="model", parts=_model_parts(reply)),
        usage_metadata=types.GenerateContentResponseUsageMetadata(
            prompt_token_count=reply.prompt_tokens,
            candidates_token_count=reply.output_tokens,
            total_token_count=reply.total_tokens,
        ),
        finish_reason=types.FinishReason.STOP,
        model_version=MODEL,
    )


def _model_parts(reply: Reply) -> list[types.Part]:
    from google.genai import types

    parts = [types.Part(text=reply.text)] if reply.text is not None else []
    calls = [types.FunctionCall(id=call.id, name=call.name, args=call.args) for call in reply.calls]
    return parts + [types.Part(function_call=call) for call in calls]


async def _get_session(sessions: BaseSessionService, session_id: str) -> Session:
    session = await sessions.get_session(app_name=APP_NAME, user_id=USER_ID, session_id=session_id)
    if session is None:
        raise EmitterError(f"session {session_id} was not stored")
    return session


def _write_sessions(directory: Path, sessions: Sequence[Session]) -> None:
    documents = [_api_server_json(session) for session in sessions]
    _write_json(directory / "sessions.json", documents)
    for document in documents:
        _write_json(directory / f"session-{document['id']}.json", document)


def _api_server_json(session: Session) -> dict[str, Any]:
    """The session as `GET /apps/{app}/users/{user}/sessions/{id}` answers (google/adk/cli/api_server.py,
    `_redacted_session_response`): internal metadata removed, credentials redacted, camelCase, no nulls."""
    from google.adk.auth.auth_credential import _redact_credential_secrets
    from google.adk.events._internal_metadata import public_session

    document = public_session(session).model_dump(exclude_none=True, by_alias=True, mode="json")
    redacted: dict[str, Any] = _redact_credential_secrets(document)
    return redacted


def _write_json(path: Path, document: Any) -> None:
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


# --- google-genai under the OpenTelemetry instrumentor -----------------------------------------------------------


def _run_genai_sessions() -> None:
    from google import genai
    from google.genai import types
    from opentelemetry.instrumentation.google_genai import GoogleGenAiSdkInstrumentor

    from tests.fakes.gemini_server import FakeGeminiServer

    GoogleGenAiSdkInstrumentor().instrument()
    with FakeGeminiServer() as server:
        client = genai.Client(api_key="fake", http_options=types.HttpOptions(base_url=server.base_url))
        for scripted in GENAI_SESSIONS:
            server.script(*(_fake_gemini_reply(reply) for reply in scripted.replies))
            with _conversation_id(scripted.id):
                history: list[types.Content] = []
                for turn in scripted.turns:
                    _genai_turn(client, history, turn.user)
        if server.unscripted or len(server.requests) != sum(len(s.replies) for s in GENAI_SESSIONS):
            raise EmitterError(f"the fake Gemini server got {len(server.requests)} requests, not the scripted ones")


@contextmanager
def _conversation_id(conversation_id: str) -> Iterator[None]:
    """Sets `gen_ai.conversation.id` on the instrumentor's spans through its extra-attributes context key."""
    from opentelemetry import context
    from opentelemetry.instrumentation.google_genai import GENERATE_CONTENT_EXTRA_ATTRIBUTES_CONTEXT_KEY

    extra = {"gen_ai.conversation.id": conversation_id}
    token = context.attach(context.set_value(GENERATE_CONTENT_EXTRA_ATTRIBUTES_CONTEXT_KEY, extra))
    try:
        yield
    finally:
        context.detach(token)


def _fake_gemini_reply(reply: Reply) -> dict[str, Any]:
    from tests.fakes.gemini_server import call_reply, text_reply

    usage = {"prompt_tokens": reply.prompt_tokens, "output_tokens": reply.output_tokens}
    if reply.calls:
        return call_reply(*((call.name, call.args) for call in reply.calls), text=reply.text, **usage)
    return text_reply(reply.text or "", **usage)


def _genai_turn(client: genai.Client, history: list[types.Content], user_text: str) -> None:
    """One user turn of a hand-written tool loop: call the model until it answers without a function call."""
    from google.genai import types

    history.append(types.Content(role="user", parts=[types.Part(text=user_text)]))
    while True:
        response = client.models.generate_content(model=MODEL, contents=history, config=_genai_config())
        if not response.candidates or response.candidates[0].content is None:
            raise EmitterError("the model answered no candidate")
        history.append(response.candidates[0].content)
        calls = response.function_calls or []
        if not calls:
            return
        history.append(types.Content(role="user", parts=[_run_tool(call) for call in calls]))


def _genai_config() -> types.GenerateContentConfig:
    """A new config per call: the instrumentor wraps the callables of the config it is given, in place."""
    from google.genai import types

    return types.GenerateContentConfig(
        system_instruction=INSTRUCTION,
        tools=list(TOOLS.values()),
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )


def _run_tool(call: types.FunctionCall) -> types.Part:
    from google.genai import types

    name = call.name or ""
    result = TOOLS[name](**(call.args or {}))
    return types.Part(function_response=types.FunctionResponse(id=call.id, name=name, response=result))


# --- OTLP files as the Collector's file exporter writes them -------------------------------------------------------

# pdata's JSON marshaler writes a span's fields in this order (field numbers, except `flags` after the parent id).
_SPAN_KEY_ORDER = (
    "traceId",
    "spanId",
    "traceState",
    "parentSpanId",
    "flags",
    "name",
    "kind",
    "startTimeUnixNano",
    "endTimeUnixNano",
    "attributes",
    "droppedAttributesCount",
    "events",
    "droppedEventsCount",
    "links",
    "droppedLinksCount",
    "status",
)
_ID_KEYS = ("traceId", "spanId", "parentSpanId")


def _write_traces(spans: Sequence[ReadableSpan], directory: Path) -> None:
    """`traces.jsonl` and `traces.binpb`: the same export requests, `SPANS_PER_BATCH` spans each."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    requests = [encode_spans(batch) for batch in _batches(spans, SPANS_PER_BATCH)]
    with (directory / "traces.jsonl").open("w", encoding="utf-8") as lines:
        for request in requests:
            lines.write(json.dumps(collector_json(request), ensure_ascii=False, separators=(",", ":")) + "\n")
    with (directory / "traces.binpb").open("wb") as frames:
        for request in requests:
            payload = request.SerializeToString()
            frames.write(len(payload).to_bytes(4, "big") + payload)


def _batches(spans: Sequence[ReadableSpan], size: int) -> Iterator[Sequence[ReadableSpan]]:
    for start in range(0, len(spans), size):
        yield spans[start : start + size]


def collector_json(request: Message) -> dict[str, Any]:
    """An `ExportTraceServiceRequest` as the Collector's `file` exporter writes it with `format: json`."""
    from google.protobuf.json_format import MessageToDict

    document: dict[str, Any] = MessageToDict(request, use_integers_for_enums=True)
    for resource_spans in document.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            scope_spans["spans"] = [_collector_span(span) for span in scope_spans.get("spans", [])]
    return document


def _collector_span(span: dict[str, Any]) -> dict[str, Any]:
    """Ids from base64 (protobuf's JSON mapping of bytes) to hex (OTLP/JSON's), keys in the Collector's order."""
    for item in [span, *span.get("links", [])]:
        for key in _ID_KEYS:
            if key in item:
                item[key] = base64.b64decode(item[key]).hex()
    ordered = {key: span[key] for key in _SPAN_KEY_ORDER if key in span}
    return ordered | {key: value for key, value in span.items() if key not in ordered}


# --- Command line ---------------------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m tests.recorded.emitters OUT_DIR` makes every fixture; `--variant NAME` runs one, in-process."""
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}", description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path, help="where to write (with --variant: that variant's directory)")
    parser.add_argument("--variant", choices=sorted(_VARIANTS_BY_NAME), help="emit this variant in this process")
    args = parser.parse_args(argv)
    if args.variant:
        args.out_dir.mkdir(parents=True, exist_ok=True)
        emit_variant(args.variant, args.out_dir)
        return 0
    fixtures = make_fixtures(args.out_dir)
    print(f"wrote {len(VARIANTS)} variants under {fixtures.out_dir} in {fixtures.seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
