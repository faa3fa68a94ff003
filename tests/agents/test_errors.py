"""Which errors are retried and what kind of failure they are, on the errors real clients raise against a real
local HTTP server: 429 then 200, 503 then 200, 400 (never retried), a closed port; httpx and requests."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from google.genai import errors as genai_errors

from agent_eval.agents import AgentFailure, TransientAgentError, TurnTimeoutError, error_kind_of, is_transient
from agent_eval.agents.errors import describe_error, fail_run, status_of
from agent_eval.schema import AgentRun
from tests.agents.http_servers import serve

ATTEMPTS = 4  # the flow's invoke task: 1 try + 3 retries


def scripted(statuses: list[int]) -> Callable[[str, str, Any], tuple[int, Any]]:
    """A server answering each request with the next status (the last one repeats)."""
    answers = iter(statuses)
    last = statuses[-1]

    def handle(method: str, path: str, body: Any) -> tuple[int, Any]:
        del method, path, body
        status = next(answers, last)
        return status, {"status": status}

    return handle


def with_retries(call: Callable[[], int]) -> tuple[int | BaseException, int]:
    """Call until success or a non-transient error, at most ATTEMPTS times, as the flow's retry rule does;
    returns (the status, or the last error) and the number of attempts."""
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return call(), attempt
        except Exception as error:
            if not is_transient(error) or attempt == ATTEMPTS:
                return error, attempt
    raise AssertionError("unreachable")


def httpx_get(url: str) -> Callable[[], int]:
    def call() -> int:
        response = httpx.get(url, timeout=5)
        response.raise_for_status()
        return response.status_code

    return call


def requests_get(url: str) -> Callable[[], int]:
    requests = pytest.importorskip("requests")

    def call() -> int:
        response = requests.get(url, timeout=5)
        response.raise_for_status()
        return int(response.status_code)

    return call


CLIENTS = {"httpx": httpx_get, "requests": requests_get}


@pytest.fixture
def closed_port_url() -> Iterator[str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    yield f"http://127.0.0.1:{port}/agent"


@pytest.mark.parametrize("client", sorted(CLIENTS))
@pytest.mark.parametrize("first", [429, 503])
def test_rate_limits_and_unavailable_servers_are_retried_until_they_answer(client: str, first: int) -> None:
    with serve(scripted([first, 200])) as (base_url, requests):
        outcome, attempts = with_retries(CLIENTS[client](base_url + "/agent"))

    assert (outcome, attempts, len(requests)) == (200, 2, 2)


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_a_rate_limit_that_never_ends_is_a_rate_limit_failure(client: str) -> None:
    """Transient, whatever the client; its kind is `rate_limit` (the flow then waits and tries the case run again
    until its deadline, `agent_eval.flows.case_limit`, instead of these retries)."""
    with serve(scripted([429])) as (base_url, requests):
        outcome, attempts = with_retries(CLIENTS[client](base_url + "/agent"))

    assert (attempts, len(requests)) == (ATTEMPTS, ATTEMPTS)
    assert isinstance(outcome, BaseException)
    assert (status_of(outcome), error_kind_of(outcome)) == (429, "rate_limit")


@pytest.mark.parametrize("client", sorted(CLIENTS))
@pytest.mark.parametrize(("status", "kind"), [(400, "agent"), (404, "agent"), (422, "agent"), (401, "transport")])
def test_client_errors_are_never_retried(client: str, status: int, kind: str) -> None:
    with serve(scripted([status, 200])) as (base_url, requests):
        outcome, attempts = with_retries(CLIENTS[client](base_url + "/agent"))

    assert (attempts, len(requests)) == (1, 1)
    assert isinstance(outcome, BaseException)
    assert (is_transient(outcome), status_of(outcome), error_kind_of(outcome)) == (False, status, kind)


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_a_closed_port_is_retried_then_a_transport_failure(client: str, closed_port_url: str) -> None:
    outcome, attempts = with_retries(CLIENTS[client](closed_port_url))

    assert attempts == ATTEMPTS
    assert isinstance(outcome, BaseException)
    assert error_kind_of(outcome) == "transport"


def test_httpx_timeouts_and_protocol_errors_are_transient_transport_failures() -> None:
    request = httpx.Request("POST", "http://agent.test/run")
    errors = [
        httpx.ConnectError("refused", request=request),
        httpx.ConnectTimeout("slow connect", request=request),
        httpx.ReadTimeout("slow answer", request=request),
        httpx.RemoteProtocolError("server hung up", request=request),
    ]
    assert [(is_transient(e), error_kind_of(e)) for e in errors] == [(True, "transport")] * 4
    local = httpx.LocalProtocolError("our malformed request")
    assert (is_transient(local), error_kind_of(local)) == (False, "agent")


@pytest.mark.parametrize(
    ("code", "transient", "kind"),
    [
        (429, True, "rate_limit"),
        (503, True, "transport"),
        (500, True, "transport"),
        (400, False, "agent"),
        (403, False, "transport"),
        (404, False, "agent"),
    ],
)
def test_google_genai_api_errors_by_code(code: int, transient: bool, kind: str) -> None:
    error = genai_errors.APIError(code, {"error": {"message": "m", "status": "X"}})
    assert (is_transient(error), error_kind_of(error)) == (transient, kind)


def test_status_is_read_from_any_of_the_usual_attributes() -> None:
    class WithStatus(Exception):
        def __init__(self, **attributes: Any) -> None:
            super().__init__("upstream said no")
            self.__dict__.update(attributes)

    class Response:
        status = 503  # aiohttp's ClientResponse

    assert [
        is_transient(WithStatus(status_code=503)),
        is_transient(WithStatus(code=429)),
        is_transient(WithStatus(status=502)),
        is_transient(WithStatus(response=Response())),
        is_transient(WithStatus(status="UNAVAILABLE")),
        is_transient(WithStatus(status_code=400)),
        is_transient(WithStatus(code="ThrottlingException")),
    ] == [True, True, True, True, True, False, False]


def test_aiohttp_like_and_os_level_connection_errors_are_transient_by_name_and_errno() -> None:
    class ClientConnectionError(Exception):  # aiohttp's, recognised by its name
        pass

    class ServerDisconnectedError(ClientConnectionError):
        pass

    unreachable = OSError(101, "Network is unreachable")
    assert [is_transient(e) for e in (ServerDisconnectedError(), unreachable, ConnectionResetError())] == [True] * 3
    assert [error_kind_of(e) for e in (ServerDisconnectedError(), unreachable)] == ["transport", "transport"]
    assert (is_transient(socket.gaierror(-2, "Name or service not known")), is_transient(FileNotFoundError())) == (
        True,
        False,
    )


def test_bugs_and_base_exceptions_are_never_retried_even_with_a_status() -> None:
    class StatusValueError(ValueError):
        status_code = 503

    assert [is_transient(e) for e in (ValueError("x"), StatusValueError(), KeyError("k"), SystemExit(503))] == [
        False
    ] * 4
    assert [error_kind_of(e) for e in (ValueError("x"), SystemExit(503), KeyboardInterrupt())] == ["agent"] * 3


def test_kinds_of_our_own_errors() -> None:
    assert (is_transient(TurnTimeoutError("turn 1 took longer than 1 s")), error_kind_of(TurnTimeoutError())) == (
        True,
        "timeout",
    )
    assert error_kind_of(TimeoutError("a socket timeout in the agent")) == "transport"
    assert error_kind_of(TransientAgentError("429 rate limited")) == "transport"
    failed = AgentRun(eval_set_id="s", eval_id="c", error="x", error_kind="transport")
    assert error_kind_of(AgentFailure(failed)) == "transport"
    group = ExceptionGroup("both", [httpx.ConnectError("refused"), ConnectionResetError()])
    assert (is_transient(group), error_kind_of(group)) == (True, "transport")


def test_a_tls_failure_behind_a_wrapper_is_a_transport_failure() -> None:
    import ssl

    try:
        try:
            raise ssl.SSLCertVerificationError("certificate verify failed")
        except ssl.SSLError as tls:
            raise RuntimeError("could not call the model") from tls
    except RuntimeError as error:
        assert (is_transient(error), error_kind_of(error)) == (False, "transport")


def test_a_failed_run_records_the_message_kind_and_traceback() -> None:
    def agent_code() -> None:
        raise SystemExit(3)

    try:
        agent_code()
    except SystemExit as error:
        failure = fail_run(AgentRun(eval_set_id="s", eval_id="c"), error, turn=2)

    assert failure.run.error == "turn 2: SystemExit: 3 raised by the agent"
    assert failure.run.error_kind == "agent"
    assert "in agent_code" in (failure.run.error_traceback or "")
    assert describe_error(KeyboardInterrupt()) == "KeyboardInterrupt raised by the agent"
    assert describe_error(ValueError("bad"), turn=1) == "turn 1: ValueError: bad"
