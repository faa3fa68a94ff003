"""HTTP adapters: an agent served by ADK's `adk api_server`, or any endpoint speaking a small JSON protocol.

References (see `resolve_http_agent`):
- `adk-api+http://host:port/APP_NAME` (or `adk-api+https://`, a path prefix before APP_NAME is kept): app
  APP_NAME of an ADK api_server (`AdkApiAgent`). Per case run it creates a session
  (`POST /apps/{app}/users/{user}/sessions` with `{"session_id", "state"}`, the case's `session_input`); per
  turn it sends `POST /run` with `{"app_name", "user_id", "session_id", "new_message"}` and reads the events
  of the answer as the in-process ADK adapter does (`turn_from_events`); at the end it reads the session's
  state (`GET .../sessions/{id}`, the final session state) and deletes the session (unless sessions are
  kept, below). The server runs AgentTools itself, so the calls made inside them are not in its events and
  cannot be seen from here.
- `http://...` / `https://...`: a generic JSON endpoint (`HttpAgent`). Each turn is
  `POST url` with `{"prompt": str, "session_id": str, "user_id": str, "state": dict}` (the session id is the
  same for every turn of a case run; `state` is the session state so far). The answer is JSON:
  `{"response": str, "trajectory" | "predicted_trajectory": [{"tool_name": str, "tool_input": dict}],
  "state": dict?, "usage": dict?}` (also accepted: a bare string, or `{"response", "tool_calls": [{name, args,
  id?, response?}]}`); a returned `state` replaces the session state, so a stateless server can carry it over,
  and a `usage` gives the turn's tokens and model (`reported_usage`: our names, OpenAI's or Gemini's).

Errors: timeouts (`request_timeout`, 120 s by default), lost connections and HTTP 408 / 429 / 5xx are
`TransientAgentError`s (with the `status_code`, and for a 429 the delay its `Retry-After` or Gemini-style
`RetryInfo` asked for), retried by the flow (a 429 as a rate limit: `agent_eval.flows.case_limit`); any other HTTP
status raises
`AgentHttpError` (with its `status_code`: a 401 / 403 is recorded as a transport failure, a 400 / 404 / 422
as the agent's), and an unreadable answer fails the case run. URLs in messages are shown without
credentials or query.

Preflight (`preflight`, once before the first case, see `agent_eval.agents.preflight_agent`): an ADK
api_server must answer `GET /list-apps` and list the app (unreachable, or 401 / 403 / 408 / 429 / 5xx:
`InfrastructureError`; the app missing, or no app list: `EvalInputError` naming the apps it has); a generic
endpoint must answer a `HEAD url` with any HTTP status (refused, DNS or TLS failure, timeout:
`InfrastructureError`).

ADK api_server sessions: the server's own id of the case run's session (the id it answers the session
creation with) is used for the turns and recorded in the run's final session state under the key
`agent_eval:server_session` (`SERVER_SESSION_KEY`), as `{"base_url", "app_name", "user_id", "session_id",
"kept"}` (read it with `server_session_of(run)`). Sessions are deleted after each case run, unless the
environment variable `AGENT_EVAL_KEEP_SESSIONS` is `1` / `true` / `yes` / `on` (or
`AdkApiAgent(keep_sessions=True)`): then they stay on the server, to open in `adk web` on the same server (app,
user and session id as recorded).

Fingerprint: the URL, plus the environment variable `AGENT_EVAL_AGENT_VERSION` when it is set. A remote agent's
code cannot be hashed: answers reused across evaluations (only with `--reuse-answers`) are those of the same
URL and version, so change the variable when the agent behind the URL changes.

Both variables are read through `agent_eval.settings.settings()` when an adapter is made: a bad `AGENT_EVAL_*`
value (e.g. `AGENT_EVAL_KEEP_SESSIONS=maybe`) raises `EvalInputError` there.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import ssl
from typing import Any

import httpx
from google.genai import types as genai_types
from pydantic import PrivateAttr

from agent_eval.agents.adk_agent import EventView, token_counts, turn_from_events
from agent_eval.agents.base import AgentSession, AgentTurn, TransientAgentError
from agent_eval.agents.callable import to_agent_turn
from agent_eval.agents.conversation import TurnAgent, fresh_session
from agent_eval.errors import EvalInputError, InfrastructureError
from agent_eval.runtime.ratelimit import provider_signal
from agent_eval.schema import SERVER_SESSION_KEY, UNKNOWN_MODEL, AgentRun, EvalCase, ModelUsage
from agent_eval.settings import settings

__all__ = [
    "ADK_API_SCHEMES",
    "AGENT_VERSION_ENV",
    "DEFAULT_REQUEST_TIMEOUT",
    "KEEP_SESSIONS_ENV",
    "SERVER_SESSION_KEY",
    "AdkApiAgent",
    "AgentHttpError",
    "HttpAgent",
    "resolve_http_agent",
    "server_session_of",
]

AGENT_VERSION_ENV = "AGENT_EVAL_AGENT_VERSION"
KEEP_SESSIONS_ENV = "AGENT_EVAL_KEEP_SESSIONS"
ADK_API_SCHEMES = ("adk-api+http://", "adk-api+https://")
DEFAULT_REQUEST_TIMEOUT = 120.0
_TRANSIENT_STATUS = frozenset({408, 429})


class AgentHttpError(RuntimeError):
    """The agent's server answered with an HTTP error status that is not worth retrying.

    Attributes:
        status_code: the HTTP status (read by `error_kind_of`: 401 / 403 are transport failures).
    """

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


def server_session_of(run: AgentRun) -> dict[str, Any] | None:
    """The ADK api_server session a case run used (`SERVER_SESSION_KEY` of its final state), if any."""
    found = (run.final_session_state or {}).get(SERVER_SESSION_KEY)
    return found if isinstance(found, dict) else None


def keep_sessions_from_environment() -> bool:
    """Whether `$AGENT_EVAL_KEEP_SESSIONS` asks to keep the api_server sessions (`1`, `true`, `yes`, `on`).

    Raises:
        EvalInputError: an `AGENT_EVAL_*` variable is not valid, e.g. this one is no boolean
            (`agent_eval.settings.settings`).
    """
    return settings().keep_sessions


def resolve_http_agent(reference: str) -> TurnAgent:
    """The HTTP agent a reference names (module docstring).

    Raises:
        EvalInputError: an `adk-api+` reference without an app name, or a URL without a host.
    """
    url = reference.removeprefix("adk-api+")
    if not httpx.URL(url).host:
        raise EvalInputError(f"agent URL {reference!r} has no host", field="agent")
    if not reference.startswith(ADK_API_SCHEMES):
        return HttpAgent(url)
    base, _, app_name = url.rstrip("/").rpartition("/")
    if not app_name or not httpx.URL(base).host:
        raise EvalInputError(
            f"ADK api_server reference {reference!r} needs the app name: adk-api+http://HOST:PORT/APP_NAME",
            field="agent",
        )
    return AdkApiAgent(base, app_name, reference=reference)


class _HttpSession(AgentSession):
    """An `AgentSession` holding the case run's HTTP client."""

    _client: httpx.AsyncClient = PrivateAttr()


class _HttpTurnAgent(TurnAgent):
    """What both HTTP adapters share: the reference, the fingerprint, one client per case run, error mapping."""

    def __init__(self, reference: str, request_timeout: float) -> None:
        self._reference = reference
        self.request_timeout = request_timeout
        version = settings().agent_version or ""
        self._fingerprint = hashlib.sha256(f"{reference}\n{version}".encode()).hexdigest()[:16]

    @property
    def reference(self) -> str:
        """The reference (URL) the agent was resolved from."""
        return self._reference

    @property
    def code_fingerprint(self) -> str:
        """Hash of the URL and `$AGENT_EVAL_AGENT_VERSION`."""
        return self._fingerprint

    async def open_session(self, case: EvalCase) -> AgentSession:
        """A fresh session (from the case's `session_input`) with its own HTTP client."""
        session = _HttpSession.model_validate(fresh_session(case).model_dump())
        session._client = _http_client(self.request_timeout)
        return session

    async def close_session(self, session: AgentSession) -> None:
        """Close the case run's HTTP client."""
        await _client(session).aclose()

    async def _post(self, session: AgentSession, url: str, payload: dict[str, Any]) -> Any:
        """POST JSON and return the decoded JSON answer.

        Raises:
            TransientAgentError: timeout, connection error, HTTP 408 / 429 / 5xx.
            RuntimeError: another HTTP error status, or an answer that is not JSON.
        """
        try:
            response = await _client(session).post(url, json=payload)
        except httpx.TimeoutException as error:
            raise TransientAgentError(f"timed out after {self.request_timeout} s: POST {_shown(url)}") from error
        except httpx.TransportError as error:
            raise TransientAgentError(f"{type(error).__name__} on POST {_shown(url)}: {error}") from error
        _check_status(response)
        try:
            return response.json()
        except ValueError as error:
            raise RuntimeError(f"POST {_shown(url)} answered with non-JSON: {response.text[:200]!r}") from error


def _http_client(timeout: float) -> httpx.AsyncClient:
    """A new HTTP client (one per case run: a session's cookies stay its own) on the process's one TLS context."""
    return httpx.AsyncClient(timeout=timeout, verify=_tls_context())


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """httpx's default TLS context (certifi's roots, or `SSL_CERT_FILE` / `SSL_CERT_DIR`), made once: making it
    loads the CA bundle, ~25 ms of CPU on the event loop for every case run and every rate-limited retry."""
    return httpx.create_ssl_context()


def _client(session: AgentSession) -> httpx.AsyncClient:
    assert isinstance(session, _HttpSession), "sessions come from the adapter's open_session"
    return session._client


def _check_status(response: httpx.Response) -> None:
    if response.is_success:
        return
    status = response.status_code
    message = f"HTTP {status} from {response.request.method} {_shown(response.url)}: {response.text[:200]}"
    if status in _TRANSIENT_STATUS or status >= 500:
        signal = provider_signal(status, _json_or_none(response), response.headers)
        if status == 429 and signal is None:  # OpenAI's insufficient_quota: no credit left, no rate limit
            raise TransientAgentError(message)
        retry_after = signal.retry_after if signal is not None else None
        raise TransientAgentError(message, status_code=status, retry_after=retry_after)
    raise AgentHttpError(message, status_code=status)


def _json_or_none(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _shown(url: str | httpx.URL) -> str:
    """The URL without credentials or query (which may hold tokens), for messages."""
    return str(httpx.URL(url).copy_with(username=None, password=None, query=None, fragment=None))


def _unreachable(what: str, url: str | httpx.URL, error: httpx.HTTPError) -> InfrastructureError:
    return InfrastructureError(f"cannot reach {what} at {_shown(url)}: {type(error).__name__}: {error}")


# -------------------------------------------------------------------------------------- generic JSON endpoint
class HttpAgent(_HttpTurnAgent):
    """An agent behind a generic JSON endpoint (protocol in the module docstring).

    Args:
        url: the endpoint; each turn is one POST to it.
        request_timeout: seconds one request may take (then a transient error, retried by the flow).
    """

    def __init__(self, url: str, *, request_timeout: float = DEFAULT_REQUEST_TIMEOUT) -> None:
        super().__init__(url, request_timeout)
        self.url = url

    async def preflight(self) -> None:
        """`HEAD url`: any HTTP answer means the agent is reachable.

        Raises:
            InfrastructureError: connection refused, DNS or TLS failure, timeout.
        """
        async with _http_client(self.request_timeout) as client:
            try:
                await client.head(self.url)
            except httpx.HTTPError as error:
                raise _unreachable("the agent", self.url, error) from None

    async def answer(self, message: str, session: AgentSession) -> AgentTurn:
        """POST the message with the session id and state; read the response and the trajectory."""
        payload = {"prompt": message, "session_id": session.session_id, "user_id": session.user_id}
        data = await self._post(session, self.url, payload | {"state": session.state})
        usage: dict[str, ModelUsage] = {}
        if isinstance(data, dict):
            if isinstance(data.get("state"), dict):
                session.state = data["state"]
            usage = reported_usage(data)
            data = {key: value for key, value in data.items() if key not in _NOT_THE_TURN}
            if "trajectory" in data:
                data["predicted_trajectory"] = data.pop("trajectory")
        try:
            turn = to_agent_turn(data)
        except TypeError as error:
            raise RuntimeError(f"{_shown(self.url)} answered with an unreadable turn: {error}") from None
        return _with_usage(turn, usage) if usage else turn


_NOT_THE_TURN = ("state", "usage", "usage_metadata", "model", "modelVersion")
_USAGE_KEYS = {
    "input_tokens": ("input_tokens", "prompt_tokens", "promptTokenCount", "prompt_token_count"),
    "output_tokens": ("output_tokens", "completion_tokens", "candidatesTokenCount", "candidates_token_count"),
    "cached_input_tokens": ("cached_input_tokens", "cachedContentTokenCount", "cached_content_token_count"),
    "thinking_tokens": ("thinking_tokens", "reasoning_tokens", "thoughtsTokenCount", "thoughts_token_count"),
}
_NESTED = {"cached_input_tokens": ("prompt_tokens_details", "cached_tokens"),
           "thinking_tokens": ("completion_tokens_details", "reasoning_tokens")}  # fmt: skip


def reported_usage(answer: dict[str, Any]) -> dict[str, ModelUsage]:
    """The tokens a generic endpoint's answer reports for its turn, per model: `usage` (or `usage_metadata`) with
    our names (`input_tokens`, `output_tokens`, `cached_input_tokens`, `thinking_tokens`), OpenAI's
    (`prompt_tokens`, `completion_tokens`, their `*_details`) or Gemini's (`promptTokenCount`, ...), and the model
    as `model` beside it or in it (`modelVersion` for Gemini's); no `usage`: nothing (unknown, not 0). A count it
    does not give stays unknown."""
    raw = answer.get("usage", answer.get("usage_metadata"))
    if not isinstance(raw, dict):
        return {}
    counts = {name: _count(raw, keys) for name, keys in _USAGE_KEYS.items()}
    for name, (outer, inner) in _NESTED.items():
        nested = raw.get(outer)
        if counts[name] is None and isinstance(nested, dict):
            counts[name] = _count(nested, (inner,))
    model = raw.get("model") or answer.get("model") or raw.get("modelVersion") or answer.get("modelVersion")
    return {str(model) if model else UNKNOWN_MODEL: ModelUsage(calls=1, **counts)}


def _count(data: dict[str, Any], keys: tuple[str, ...]) -> int | None:
    value = next((data[key] for key in keys if key in data), None)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _with_usage(turn: AgentTurn, usage: dict[str, ModelUsage]) -> AgentTurn:
    """The turn with the answer's reported tokens (its own totals kept when it gave some)."""
    [reported] = usage.values()
    return turn.model_copy(
        update={
            "model_usage": usage,
            "input_tokens": turn.input_tokens if turn.input_tokens is not None else reported.input_tokens,
            "output_tokens": turn.output_tokens if turn.output_tokens is not None else reported.output_tokens,
        }
    )


# ------------------------------------------------------------------------------------------ ADK api_server
class AdkApiAgent(_HttpTurnAgent):
    """An app of an ADK api_server (`adk api_server`), over its REST API (module docstring).

    Args:
        base_url: the server, e.g. `http://127.0.0.1:8000` (with its path prefix, if any).
        app_name: the app (agent folder) to run; it overrides the case's `session_input.app_name`.
        reference: the reference string (default: `adk-api+BASE_URL/APP_NAME`).
        request_timeout: seconds one request may take (then a transient error, retried by the flow).
        keep_sessions: leave each case run's session on the server, for `adk web` (default:
            `$AGENT_EVAL_KEEP_SESSIONS`).
    """

    def __init__(
        self,
        base_url: str,
        app_name: str,
        *,
        reference: str | None = None,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        keep_sessions: bool | None = None,
    ) -> None:
        super().__init__(reference or f"adk-api+{base_url.rstrip('/')}/{app_name}", request_timeout)
        self.base_url = base_url.rstrip("/")
        self.app_name = app_name
        self.keep_sessions = keep_sessions_from_environment() if keep_sessions is None else keep_sessions

    async def preflight(self) -> None:
        """`GET /list-apps`: the server answers and serves the app.

        Raises:
            InfrastructureError: the server cannot be reached, or answers 401 / 403 / 408 / 429 / 5xx.
            EvalInputError: the server does not serve the app, or is not an ADK api_server.
        """
        async with _http_client(self.request_timeout) as client:
            try:
                response = await client.get(f"{self.base_url}/list-apps")
            except httpx.HTTPError as error:
                raise _unreachable("the ADK api_server", self.base_url, error) from None
        apps = self._listed_apps(response)
        if self.app_name not in apps:
            close = difflib.get_close_matches(self.app_name, apps, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise EvalInputError(
                f"the ADK api_server at {_shown(self.base_url)} has no app {self.app_name!r}{hint}; "
                f"its apps are {sorted(apps)}: use adk-api+{_shown(self.base_url)}/APP_NAME",
                field="agent",
            )

    def _listed_apps(self, response: httpx.Response) -> list[str]:
        """The app names of a `/list-apps` answer (a list of names, or `{"apps": [{"name"}]}`)."""
        where = f"the ADK api_server at {_shown(self.base_url)}"
        status = response.status_code
        if status in _TRANSIENT_STATUS or status >= 500 or status in (401, 403):
            raise InfrastructureError(f"{where} answered GET /list-apps with HTTP {status}: {response.text[:200]}")
        try:
            data = response.json() if response.is_success else None
        except ValueError:
            data = None
        if isinstance(data, dict):
            data = [app.get("name") for app in data.get("apps") or [] if isinstance(app, dict)]
        if not isinstance(data, list):
            raise EvalInputError(
                f"{where} answered GET /list-apps with HTTP {status} and no app list: is it an ADK api_server "
                "(`adk api_server AGENTS_DIR`)?",
                field="agent",
            )
        return [str(name) for name in data]

    async def open_session(self, case: EvalCase) -> AgentSession:
        """Create the server-side session with the case's user, session id and state (the server's own id,
        if it answers with another one, is the one used)."""
        session = await super().open_session(case)
        session.app_name = self.app_name
        payload = {"session_id": session.session_id, "state": session.state}
        try:
            created = await self._post(session, self._sessions_url(session), payload)
        except BaseException:
            await _client(session).aclose()  # run_case closes only the sessions it got
            raise
        if isinstance(created, dict) and isinstance(created.get("id"), str) and created["id"]:
            session.session_id = created["id"]
        return session

    async def answer(self, message: str, session: AgentSession) -> AgentTurn:
        """`POST /run` with the user message; the turn is read from the returned events."""
        new_message = genai_types.Content(role="user", parts=[genai_types.Part(text=message)])
        payload = {
            "app_name": self.app_name,
            "user_id": session.user_id,
            "session_id": session.session_id,
            "new_message": new_message.model_dump(mode="json", exclude_none=True),
        }
        events = await self._post(session, f"{self.base_url}/run", payload)
        if not isinstance(events, list):
            raise RuntimeError(
                f"{_shown(self.base_url)}/run answered with {type(events).__name__}, not a list of events"
            )
        return turn_from_events([view_of_json_event(event) for event in events if isinstance(event, dict)])

    async def close_session(self, session: AgentSession) -> None:
        """Read the final session state, delete the server-side session unless it is kept (both best effort),
        record which session it was (`SERVER_SESSION_KEY`), close the client."""
        url = f"{self._sessions_url(session)}/{session.session_id}"
        try:
            response = await _client(session).get(url)
            if response.is_success and isinstance(state := response.json().get("state"), dict):
                session.state = state
            if not self.keep_sessions:
                await _client(session).delete(url)
        except (httpx.HTTPError, ValueError, AttributeError):
            pass  # the turns are recorded; a lost final state must not fail the case run
        session.state = {**session.state, SERVER_SESSION_KEY: self._session_record(session)}
        await super().close_session(session)

    def _session_record(self, session: AgentSession) -> dict[str, Any]:
        return {
            "base_url": _shown(self.base_url),
            "app_name": self.app_name,
            "user_id": session.user_id,
            "session_id": session.session_id,
            "kept": self.keep_sessions,
        }

    def _sessions_url(self, session: AgentSession) -> str:
        return f"{self.base_url}/apps/{self.app_name}/users/{session.user_id}/sessions"


def view_of_json_event(event: dict[str, Any]) -> EventView:
    """An api_server event (JSON, camelCase or snake_case keys) as an `EventView`; `final` follows ADK's
    `Event.is_final_response()`."""
    content = _field(event, "content") or {}
    parts = tuple(genai_types.Part.model_validate(part) for part in content.get("parts") or [])
    raw_usage = _field(event, "usage_metadata")
    usage = genai_types.GenerateContentResponseUsageMetadata.model_validate(raw_usage) if raw_usage else None
    input_tokens, output_tokens = token_counts(usage)
    partial = bool(_field(event, "partial"))
    actions = _field(event, "actions") or {}
    has_calls = any(part.function_call or part.function_response for part in parts)
    trailing_code_result = bool(parts) and parts[-1].code_execution_result is not None
    final = bool(_field(actions, "skip_summarization") or _field(event, "long_running_tool_ids")) or (
        not has_calls and not partial and not trailing_code_result
    )
    model = _field(event, "model_version")
    return EventView(
        parts=parts,
        final=final,
        partial=partial,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        model=str(model) if model else None,
        usage=ModelUsage.of_genai(usage) if usage is not None else None,
    )


def _field(data: dict[str, Any], snake_name: str) -> Any:
    """`data[snake_name]`, or its camelCase spelling (ADK's server writes camelCase)."""
    if snake_name in data:
        return data[snake_name]
    head, *rest = snake_name.split("_")
    return data.get(head + "".join(word.capitalize() for word in rest))
