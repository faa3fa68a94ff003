"""How agent errors are classified: which are retried, and what kind of failure a case run records.

Retried (`is_transient`), whatever the client library raised them (checked by kind and status, never by
importing the library, so `requests` or `aiohttp` need not be installed):
- `TransientAgentError` (an adapter's or the user's own "worth another try"), and our turn timeout;
- timeouts and lost or refused connections: `TimeoutError`, `ConnectionError`, an `OSError` whose errno says
  the network failed (refused, reset, unreachable, timed out), DNS failures (`socket.gaierror`), and the
  clients' classes of the same meaning, recognised by name anywhere in their MRO (httpx / httpcore
  `TimeoutException`, `NetworkError`, `RemoteProtocolError`, `ProxyError`; requests `ConnectionError`,
  `Timeout`, `ChunkedEncodingError`; urllib3 `NewConnectionError`, `MaxRetryError`, `ProtocolError`;
  aiohttp `ClientConnectionError`, `ServerTimeoutError`, `ClientPayloadError`; http.client `IncompleteRead`);
- an HTTP status 408, 429 or 5xx, read from the error's `status_code`, `code` or `status`, or from its
  `response.status_code` / `response.status` (httpx `HTTPStatusError`, requests `HTTPError`,
  `google.genai.errors.APIError`, `google.api_core` errors, aiohttp `ClientResponseError`, urllib's
  `HTTPError`), or a gRPC status name `UNAVAILABLE`, `RESOURCE_EXHAUSTED`, `DEADLINE_EXCEEDED`.
Never retried: any other status (400, 404, 422, 401, 403, ...), a programming error (`ValueError`, `TypeError`,
`LookupError`, `AttributeError`, ... even when it carries a status), a `BaseException` that is not an
`Exception` (`SystemExit`, `KeyboardInterrupt`), and anything else.

Kinds (`error_kind_of`, stored as `AgentRun.error_kind`):
- `"timeout"`: our own turn timeout (`TurnTimeoutError`, the `--turn-timeout` interruption);
- `"rate_limit"`: HTTP 429 or `RESOURCE_EXHAUSTED` on the error or behind it (`agent_eval.runtime.ratelimit`):
  the agent's server or its own model call asked for fewer calls; the flow retries such a case run after the
  delay asked for, however many times, until a deadline, and lowers the case concurrency
  (`agent_eval.flows.case_limit`), instead of spending the task's retries;
- `"transport"`: the agent could not be reached or talked to: everything `is_transient` retries (after the
  retries ran out), and TLS errors, DNS failures and HTTP 401 / 403 (or gRPC `UNAUTHENTICATED` /
  `PERMISSION_DENIED`), on the error or on its explicit cause (`raise ... from error`);
- `"agent"`: everything else: the agent's own exception, an HTTP 400 / 404 / 422, a malformed answer.
"""

from __future__ import annotations

import errno
import socket
import traceback
from collections.abc import Iterator

from agent_eval.agents.base import TransientAgentError
from agent_eval.runtime.ratelimit import rate_limit_of
from agent_eval.schema import AgentRun, ErrorKind

__all__ = [
    "AgentFailure",
    "TurnTimeoutError",
    "describe_error",
    "error_kind_of",
    "fail_run",
    "format_traceback",
    "is_transient",
    "note_rate_limit",
    "status_of",
]

MAX_TRACEBACK_CHARS = 20_000
"""A longer traceback keeps its last characters (where the error was raised)."""

_TRANSIENT_STATUS = frozenset({408, 429})
_AUTH_STATUS = frozenset({401, 403})
_TRANSIENT_STATUS_NAMES = frozenset({"UNAVAILABLE", "RESOURCE_EXHAUSTED", "DEADLINE_EXCEEDED"})
_AUTH_STATUS_NAMES = frozenset({"UNAUTHENTICATED", "PERMISSION_DENIED"})
_TRANSIENT_CLASS_NAMES = frozenset(
    {
        "TimeoutError",
        "ConnectionError",
        "gaierror",
        "TimeoutException",
        "NetworkError",
        "RemoteProtocolError",
        "ProxyError",
        "Timeout",
        "ChunkedEncodingError",
        "NewConnectionError",
        "MaxRetryError",
        "ProtocolError",
        "ReadTimeoutError",
        "ConnectTimeoutError",
        "ClientConnectionError",
        "ServerTimeoutError",
        "ClientPayloadError",
        "IncompleteRead",
    }
)
"""Client errors that mean "the network failed this time", by class name (httpx, requests, urllib3, aiohttp)."""
_NEVER_TRANSIENT_CLASS_NAMES = frozenset({"LocalProtocolError", "UnsupportedProtocol", "InvalidURL"})
"""Subclasses of the names above that are our own mistakes (a malformed request or URL)."""
_TLS_CLASS_NAMES = frozenset({"SSLError", "SSLCertVerificationError", "CertificateError", "ClientSSLError"})
_NETWORK_ERRNOS = frozenset(
    {
        errno.ECONNREFUSED,
        errno.ECONNRESET,
        errno.ECONNABORTED,
        errno.ENETUNREACH,
        errno.ENETDOWN,
        errno.EHOSTUNREACH,
        errno.EHOSTDOWN,
        errno.ETIMEDOUT,
        errno.EPIPE,
    }
)
_BUGS = (
    ValueError,
    TypeError,
    LookupError,
    AttributeError,
    NameError,
    AssertionError,
    ArithmeticError,
    NotImplementedError,
    RecursionError,
    ImportError,
    SyntaxError,
)


class TurnTimeoutError(TimeoutError):
    """A turn ran past the turn timeout (`--turn-timeout`): retried, then recorded with kind `"timeout"`."""


class AgentFailure(Exception):
    """The agent failed for good on a case run; `run` holds what it did before, with `run.error` set."""

    def __init__(self, run: AgentRun) -> None:
        super().__init__(run.error)
        self.run = run


def is_transient(error: BaseException) -> bool:
    """Whether the error is worth another attempt (rules in the module docstring)."""
    if isinstance(error, BaseExceptionGroup):
        return all(is_transient(inner) for inner in error.exceptions)
    if not isinstance(error, Exception) or isinstance(error, (*_BUGS, AgentFailure)):
        return False
    names = _class_names(error)
    if names & _NEVER_TRANSIENT_CLASS_NAMES:
        return False
    network_errno = isinstance(error, OSError) and error.errno in _NETWORK_ERRNOS
    if isinstance(error, TransientAgentError) or names & _TRANSIENT_CLASS_NAMES or network_errno:
        return True
    return _is_transient_status(status_of(error))


def _is_transient_status(status: int | str | None) -> bool:
    if isinstance(status, str):
        return status in _TRANSIENT_STATUS_NAMES
    return status is not None and (status in _TRANSIENT_STATUS or 500 <= status <= 599)


def error_kind_of(error: BaseException) -> ErrorKind:
    """What kind of failure the error is: `"timeout"`, `"transport"` or `"agent"` (module docstring).

    An `AgentFailure` keeps the kind its run recorded; an exception group is `"transport"` when all of its
    exceptions are.
    """
    if isinstance(error, AgentFailure):
        return error.run.error_kind or "agent"
    if isinstance(error, TurnTimeoutError):
        return "timeout"
    if rate_limit_of(error) is not None:
        return "rate_limit"
    if isinstance(error, BaseExceptionGroup):
        kinds = {error_kind_of(inner) for inner in error.exceptions}
        return kinds.pop() if len(kinds) == 1 else "agent"
    if is_transient(error) or _is_auth_or_tls_error(error):
        return "transport"
    return "agent"


def status_of(error: BaseException) -> int | str | None:
    """The HTTP status (an int) or gRPC status name (a str) an error carries, else None.

    Looked up on `status_code`, `code`, `status`, then on `response.status_code` and `response.status`.
    """
    response = getattr(error, "response", None)
    candidates = (
        getattr(error, "status_code", None),
        getattr(error, "code", None),
        getattr(error, "status", None),
        getattr(response, "status_code", None),
        getattr(response, "status", None),
    )
    for value in candidates:
        if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
            return value
    names = _TRANSIENT_STATUS_NAMES | _AUTH_STATUS_NAMES
    return next((value for value in candidates if isinstance(value, str) and value in names), None)


def describe_error(error: BaseException, *, turn: int | None = None) -> str:
    """One line: `turn N: ExcType: message`; a `BaseException` that is not an `Exception` (`SystemExit`,
    `KeyboardInterrupt`) says it was raised by the agent, since it is not a signal we received."""
    message = str(error)
    text = f"{type(error).__name__}: {message}" if message else type(error).__name__
    if not isinstance(error, Exception):
        text += " raised by the agent"
    return text if turn is None else f"turn {turn}: {text}"


def format_traceback(error: BaseException) -> str:
    """The formatted traceback of `error` (with its causes), its last `MAX_TRACEBACK_CHARS` characters."""
    text = "".join(traceback.format_exception(error))
    return text if len(text) <= MAX_TRACEBACK_CHARS else "…" + text[-MAX_TRACEBACK_CHARS:]


def fail_run(run: AgentRun, error: BaseException, *, turn: int | None = None) -> AgentFailure:
    """Record `error` on `run` (one-line message, kind, traceback) and return the `AgentFailure` to raise."""
    run.error = describe_error(error, turn=turn)
    run.error_kind = error_kind_of(error)
    run.error_traceback = format_traceback(error)
    note_rate_limit(run, error)
    return AgentFailure(run)


def note_rate_limit(run: AgentRun, error: BaseException) -> None:
    """For a run that failed with a rate-limited `error`, the delay its provider asked for (`run.retry_after`)."""
    signal = rate_limit_of(error) if run.error_kind == "rate_limit" else None
    run.retry_after = signal.retry_after if signal is not None else None


def _class_names(error: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(error).__mro__}


def _is_auth_or_tls_error(error: BaseException) -> bool:
    """401 / 403 (not retried, but the agent could not be used) or a TLS failure, here or in its causes."""
    for link in _chain(error):
        status = status_of(link)
        if status in _AUTH_STATUS or status in _AUTH_STATUS_NAMES or _class_names(link) & _TLS_CLASS_NAMES:
            return True
        if isinstance(link, socket.gaierror):
            return True
    return False


def _chain(error: BaseException) -> Iterator[BaseException]:
    """The error and its explicit causes (`raise ... from ...`), at most 10 deep."""
    link: BaseException | None = error
    for _ in range(10):
        if link is None:
            return
        yield link
        link = link.__cause__
