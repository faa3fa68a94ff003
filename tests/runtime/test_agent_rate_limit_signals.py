"""An agent's rate limits (`runtime.ratelimit.rate_limit_of`, `agents.errors`): the errors real clients raise
against real local servers (google-genai against the fake Gemini server, httpx and our HTTP agent against a
server answering 429 with `Retry-After`), the same errors wrapped (`raise ... from`, an exception group, an error
raised while handling one), what is no rate limit (503, OpenAI's `insufficient_quota`), and `AgentRun.retry_after`
(set by `fail_run`, never serialized, kept by pickle)."""

from __future__ import annotations

import asyncio
import functools
import pickle
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

import httpx
import pytest
from google.genai import errors as genai_errors
from google.genai import types

from agent_eval.agents.base import TransientAgentError
from agent_eval.agents.errors import error_kind_of, fail_run, note_rate_limit
from agent_eval.agents.genai_agent import generate
from agent_eval.agents.http_agent import HttpAgent
from agent_eval.agents.running import run_agent_case
from agent_eval.plan.eval_plan import CaseRunKey
from agent_eval.runtime.ratelimit import ProviderSignal, rate_limit_of
from agent_eval.schema import AgentRun, EvalCase
from agent_eval.tasks import INVOKE_RETRIES, run_of_outcome
from tests.fakes.gemini_server import FakeGeminiServer, FakeReply
from tests.fakes.limited_gemini import RETRY_INFO, overloaded_reply, rate_limited_reply
from tests.fakes.listening import FakeHTTPServer, send_reply

MODEL = "gemini-2.5-flash"
NO_CREDIT = {
    "error": {
        "message": "You exceeded your current quota, please check your plan and billing details.",
        "type": "insufficient_quota",
        "param": None,
        "code": "insufficient_quota",
    }
}
"""OpenAI's 429 when the account has no credit left: waiting does not help."""


def make_case(eval_id: str = "case") -> EvalCase:
    conversation = [{"user_content": {"role": "user", "parts": [{"text": "hello"}]}}]
    return EvalCase.model_validate({"eval_id": eval_id, "conversation": conversation})


def make_key(eval_id: str = "case") -> CaseRunKey:
    return CaseRunKey(eval_set_id="set", case=make_case(eval_id), run_index=0)


def genai_error(server: FakeGeminiServer, reply: FakeReply) -> genai_errors.APIError:
    """The error google-genai raises for `reply`, sent by the fake Gemini server over HTTP."""
    server.script(reply)

    async def call() -> None:
        await server.client().aio.models.generate_content(model=MODEL, contents="hello")

    with pytest.raises(genai_errors.APIError) as raised:
        asyncio.run(call())
    return raised.value


def genai_agent_error(server: FakeGeminiServer, reply: FakeReply) -> TransientAgentError:
    """What the genai agent's model call (`genai_agent.generate`) raises for `reply`."""
    server.script(reply)
    config = types.GenerateContentConfig()
    contents = [types.Content(role="user", parts=[types.Part(text="hello")])]
    with pytest.raises(TransientAgentError) as raised:
        asyncio.run(generate(server.client(), MODEL, contents, config))
    return raised.value


@dataclass(frozen=True)
class Answer:
    """What the local server answers to every request: a status, a JSON body, headers."""

    status: int
    body: Any
    headers: tuple[tuple[str, str], ...] = ()


@contextmanager
def answering(answer: Answer) -> Iterator[str]:
    """A real HTTP server on 127.0.0.1 answering `answer` to every GET and POST; yields its URL."""

    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            send_reply(self, answer.status, answer.body, answer.headers)

        do_GET = do_POST = _serve  # noqa: N815 (the names http.server dispatches to)

        def log_message(self, format: str, *args: Any) -> None:
            del format, args

    server = FakeHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=functools.partial(server.serve_forever, poll_interval=0.02), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/agent"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def http_agent_error(url: str) -> TransientAgentError:
    """What our HTTP agent raises on a case run against `url` (a transient error is raised as it is)."""
    with pytest.raises(TransientAgentError) as raised:
        asyncio.run(run_agent_case(HttpAgent(url), make_case(), "set", 0))
    return raised.value


def httpx_error(url: str) -> httpx.HTTPStatusError:
    """What `raise_for_status` raises for the answer of `url` (an in-process agent's own httpx call)."""
    with pytest.raises(httpx.HTTPStatusError) as raised:
        httpx.post(url, json={"prompt": "hello"}).raise_for_status()
    return raised.value


# ----------------------------------------------------------------------------------------- (a) google-genai
@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (rate_limited_reply(13), ProviderSignal("rate limited", 13.0)),  # RetryInfo in the error's details
        (rate_limited_reply(retry_after=7), ProviderSignal("rate limited", 7.0)),  # the response's Retry-After
        (rate_limited_reply(), ProviderSignal("rate limited", None)),  # no delay given
        (overloaded_reply(), None),  # 503: no rate limit for an agent
        (overloaded_reply(4), None),
    ],
    ids=["retry-info", "retry-after", "no-delay", "503", "503-with-delay"],
)
def test_a_genai_api_error_from_the_server(
    fake_gemini: FakeGeminiServer, reply: FakeReply, expected: ProviderSignal | None
) -> None:
    error = genai_error(fake_gemini, reply)

    assert error.code == reply.status
    assert rate_limit_of(error) == expected
    assert error_kind_of(error) == ("rate_limit" if expected else "transport")


# ---------------------------------------------------------------------------------------- (b) wrapped
def test_the_delay_is_found_behind_a_wrapper_raised_from_the_genai_error(fake_gemini: FakeGeminiServer) -> None:
    cause = genai_error(fake_gemini, rate_limited_reply(13))
    try:
        raise TransientAgentError(f"{MODEL}: {cause}", status_code=429) from cause
    except TransientAgentError as raised:
        wrapper = raised

    assert wrapper.retry_after is None  # the wrapper gives no delay: the one behind it is used
    assert rate_limit_of(wrapper) == ProviderSignal("rate limited", 13.0)
    assert error_kind_of(wrapper) == "rate_limit"


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (rate_limited_reply(13), ProviderSignal("rate limited", 13.0)),
        (rate_limited_reply(), ProviderSignal("rate limited", None)),
        (overloaded_reply(13), None),
    ],
    ids=["429-retry-info", "429-no-delay", "503"],
)
def test_the_genai_agents_model_call(
    fake_gemini: FakeGeminiServer, reply: FakeReply, expected: ProviderSignal | None
) -> None:
    error = genai_agent_error(fake_gemini, reply)

    assert (error.status_code, error.retry_after) == (reply.status, None)
    assert isinstance(error.__cause__, genai_errors.APIError)
    assert rate_limit_of(error) == expected
    assert error_kind_of(error) == ("rate_limit" if expected else "transport")


# ------------------------------------------------------------------------------------------ (c) HTTP agent
def test_the_http_agent_answered_429_with_retry_after() -> None:
    with answering(Answer(429, {"error": "slow down"}, (("Retry-After", "2"),))) as url:
        error = http_agent_error(url)

    assert (error.status_code, error.retry_after) == (429, 2.0)
    assert rate_limit_of(error) == ProviderSignal("rate limited", 2.0)
    assert error_kind_of(error) == "rate_limit"
    run = run_of_outcome(error, make_key())  # what the invoke stage records
    assert (run.error_kind, run.attempts, run.retry_after) == ("rate_limit", 1, 2.0)


def test_the_http_agent_answered_429_with_gemini_retry_info() -> None:
    body = {
        "error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "details": [{"@type": RETRY_INFO, "retryDelay": "13s"}]}
    }
    with answering(Answer(429, body)) as url:
        error = http_agent_error(url)

    assert (error.status_code, error.retry_after) == (429, 13.0)
    assert rate_limit_of(error) == ProviderSignal("rate limited", 13.0)


def test_the_http_agent_answered_429_without_a_delay() -> None:
    with answering(Answer(429, {"error": "slow down"})) as url:
        error = http_agent_error(url)

    assert (error.status_code, error.retry_after) == (429, None)
    assert rate_limit_of(error) == ProviderSignal("rate limited", None)
    run = run_of_outcome(error, make_key())
    assert (run.error_kind, run.attempts, run.retry_after) == ("rate_limit", 1, None)


def test_the_http_agent_answered_503_is_a_transport_failure() -> None:
    with answering(Answer(503, {"error": "overloaded"}, (("Retry-After", "3"),))) as url:
        error = http_agent_error(url)

    assert error.status_code == 503
    assert rate_limit_of(error) is None
    assert error_kind_of(error) == "transport"
    run = run_of_outcome(error, make_key())
    assert (run.error_kind, run.attempts, run.retry_after) == ("transport", INVOKE_RETRIES + 1, None)


# ----------------------------------------------------------------------------------------------- (d) httpx
@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ((("Retry-After", "5"),), 5.0),
        ((("retry-after-ms", "1500"), ("Retry-After", "5")), 1.5),  # OpenAI's milliseconds first
        ((), None),
    ],
    ids=["retry-after", "retry-after-ms", "none"],
)
def test_an_httpx_status_error_of_a_429(headers: tuple[tuple[str, str], ...], expected: float | None) -> None:
    body = {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}
    with answering(Answer(429, body, headers)) as url:
        error = httpx_error(url)

    assert rate_limit_of(error) == ProviderSignal("rate limited", expected)
    assert error_kind_of(error) == "rate_limit"


def test_an_httpx_status_error_of_a_503_is_no_rate_limit() -> None:
    with answering(Answer(503, {"error": "overloaded"}, (("Retry-After", "5"),))) as url:
        error = httpx_error(url)

    assert rate_limit_of(error) is None
    assert error_kind_of(error) == "transport"


# ------------------------------------------------------------------------------ (e) OpenAI's no credit left
def test_openais_insufficient_quota_in_an_errors_json_is_no_rate_limit(fake_gemini: FakeGeminiServer) -> None:
    error = genai_error(fake_gemini, FakeReply(status=429, body=NO_CREDIT))  # the body read into `details`

    assert error.code == 429 and error.details == NO_CREDIT
    assert rate_limit_of(error) is None
    assert error_kind_of(error) == "transport"


def test_openais_insufficient_quota_in_an_httpx_error_is_no_rate_limit() -> None:
    with answering(Answer(429, NO_CREDIT)) as url:
        error = httpx_error(url)

    assert rate_limit_of(error) is None
    assert error_kind_of(error) == "transport"


def test_openais_insufficient_quota_from_the_http_agent_is_no_rate_limit() -> None:
    with answering(Answer(429, NO_CREDIT)) as url:
        error = http_agent_error(url)

    assert rate_limit_of(error) is None
    assert error_kind_of(error) == "transport"


# ------------------------------------------------------------------------------------- (f) exception groups
def test_an_exception_group_holding_a_rate_limited_error(fake_gemini: FakeGeminiServer) -> None:
    limited = genai_error(fake_gemini, rate_limited_reply(13))
    group = ExceptionGroup("tools failed", [ValueError("bad argument"), limited])

    assert rate_limit_of(group) == ProviderSignal("rate limited", 13.0)
    assert error_kind_of(group) == "rate_limit"


def test_in_a_group_the_first_delay_wins_over_an_earlier_error_without_one() -> None:
    no_delay = TransientAgentError("HTTP 429", status_code=429)
    first = TransientAgentError("HTTP 429", status_code=429, retry_after=4)
    second = TransientAgentError("HTTP 429", status_code=429, retry_after=9)
    nested = ExceptionGroup("outer", [no_delay, ExceptionGroup("inner", [first]), second])

    assert rate_limit_of(nested) == ProviderSignal("rate limited", 4.0)  # depth first: inner's member before `second`
    assert rate_limit_of(ExceptionGroup("none given", [no_delay])) == ProviderSignal("rate limited", None)


def test_a_group_without_a_rate_limit() -> None:
    group = ExceptionGroup("failed", [ValueError("bad"), TransientAgentError("HTTP 503", status_code=503)])

    assert rate_limit_of(group) is None
    assert error_kind_of(group) == "agent"  # kinds differ: the agent's


def test_an_error_raised_while_handling_a_rate_limit_is_the_agents_own() -> None:
    """Only an explicit cause (`raise ... from`) counts: an agent that handled a 429 and then failed otherwise
    must not be retried for 10 minutes."""
    try:
        try:
            raise TransientAgentError("HTTP 429", status_code=429, retry_after=6)
        except TransientAgentError:
            raise RuntimeError("cleanup failed")  # noqa: B904 (implicit chaining is the point)
    except RuntimeError as raised:
        error = raised

    assert error.__cause__ is None and isinstance(error.__context__, TransientAgentError)
    assert rate_limit_of(error) is None
    assert error_kind_of(error) == "agent"


def test_a_grpc_resource_exhausted_status_name() -> None:
    class GrpcError(Exception):
        status = "RESOURCE_EXHAUSTED"

    assert rate_limit_of(GrpcError("quota")) == ProviderSignal("rate limited", None)
    assert error_kind_of(GrpcError("quota")) == "rate_limit"


# ------------------------------------------------------------------------------------ (g) AgentRun.retry_after
def failed_run() -> AgentRun:
    return AgentRun(eval_set_id="set", eval_id="case", run_index=0)


def test_fail_run_records_the_delay_that_is_never_serialized() -> None:
    run = failed_run()

    failure = fail_run(run, TransientAgentError("HTTP 429", status_code=429, retry_after=2.5))

    assert failure.run is run
    assert (run.error, run.error_kind, run.retry_after) == ("TransientAgentError: HTTP 429", "rate_limit", 2.5)
    assert "retry_after" not in run.model_dump() and "retry_after" not in run.model_dump_json()
    assert AgentRun.model_validate_json(run.model_dump_json()).retry_after is None
    copied = pickle.loads(pickle.dumps(run))
    assert (copied.retry_after, copied.error_kind) == (2.5, "rate_limit")
    assert run.model_copy(update={"attempts": 3}).retry_after == 2.5  # the flow sums attempts on a copy


def test_fail_run_clears_the_delay_for_other_errors() -> None:
    run = failed_run()
    earlier: float | None = 9.0  # what an earlier failure of the run left
    run.retry_after = earlier

    fail_run(run, TransientAgentError("HTTP 503", status_code=503, retry_after=3))

    assert (run.error_kind, run.retry_after) == ("transport", None)


def test_note_rate_limit_reads_the_delay_only_of_a_rate_limited_run() -> None:
    error = TransientAgentError("HTTP 429", status_code=429, retry_after=5)
    run = failed_run()
    run.error_kind = "agent"  # e.g. a user's AgentFailure recorded its own kind

    note_rate_limit(run, error)
    assert run.retry_after is None

    run.error_kind = "rate_limit"
    note_rate_limit(run, error)
    assert run.retry_after == 5.0
