"""ADK sessions as recorded turns: the JSON of ADK's session API, or a `DatabaseSessionService` database.

Events are grouped into turns by the rule of ADK's `convert_session_to_eval_invocations` (google-adk 2.13):

- events are grouped by `invocation_id`, in order of first appearance; one group is one turn;
- the turn's user content is the last event authored by `user` that has content (its timestamp is the turn's);
- the final response is the last event that is a final response (ADK's `Event.is_final_response`) with parts,
  except that a text-less one never replaces one with text;
- every other non-user event with a function call, a function response, text, inline data or grounding metadata
  is an intermediate event (the final response event keeps its content only when it also calls a function);
- stored events carry no timing, so a turn's durations stay unknown, as in ADK.

Beyond ADK's rule, an event with an `error_code` marks its turn failed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agent_eval.errors import EvalInputError
from agent_eval.io.files import read_json
from agent_eval.io.recorded.turns import RecordedTurn
from agent_eval.schema import Invocation, InvocationEvent, InvocationEvents
from agent_eval.secrets import SecretUnavailableError, redact_url_credentials, resolve_secret

__all__ = ["is_session_json", "read_session_db", "read_session_json", "redacted_url", "turns_from_session"]

_USER = "user"
_EVENT_KEYS = ("invocation_id", "author", "content", "actions", "timestamp", "usage_metadata", "model_version")


def is_session_json(data: Any) -> bool:
    """Whether parsed JSON looks like one ADK session or a list of them (an `id` and `events`)."""
    first = data[0] if isinstance(data, list) and data else data
    return isinstance(first, dict) and "events" in first and ("id" in first or "session_id" in first)


def read_session_json(path: Path) -> Iterator[RecordedTurn]:
    """The turns of the sessions in a JSON file: one session as ADK's session API returns it, or a list.

    Raises:
        EvalInputError: the file is not JSON or holds no session.
    """
    data = read_json(path)
    sessions = data if isinstance(data, list) else [data]
    if not sessions or not is_session_json(sessions):
        raise EvalInputError("not an ADK session (expected an object with 'id' and 'events', or a list)", file=path)
    for index, session in enumerate(sessions):
        where = f"{path}#{_session_id(session) or index}"
        yield from turns_from_session(session, where)


def turns_from_session(session: dict[str, Any], source: str) -> list[RecordedTurn]:
    """The turns of one session (its keys in camelCase, as the API writes them, or snake_case, as stored).

    Raises:
        EvalInputError: an event cannot be read.
    """
    session_id = _session_id(session) or source
    events = [_normalized(event) for event in session.get("events") or []]
    turns = []
    for invocation_id, group in _by_invocation(events).items():
        try:
            invocation, error = _invocation(invocation_id, group)
        except ValidationError as invalid:
            reason = invalid.errors()[0]["msg"] if invalid.errors() else str(invalid)
            raise EvalInputError(f"an event of invocation {invocation_id!r} is not an ADK event: {reason}") from None
        turns.append(
            RecordedTurn(
                session_id=session_id,
                invocation=invocation,
                source=source,
                started_ns=int(invocation.creation_timestamp * 1e9),
                agent_name=_agent_of(group),
                app_name=_pick(session, "app_name", "appName"),
                user_id=_pick(session, "user_id", "userId"),
                error=error,
                state=dict(session.get("state") or {}),
            )
        )
    return turns


def read_session_db(url: str) -> Iterator[RecordedTurn]:
    """The turns of every session in an ADK `DatabaseSessionService` database (its schema v1: events stored as
    `event_data` JSON), one session at a time. ADK's async URLs (`sqlite+aiosqlite`, `postgresql+asyncpg`) are
    read with the sync drivers agent-eval ships. `url` may be a reference (`env:NAME`, `prefect-secret:BLOCK`),
    as a deployment's parameters must give a URL with a password (their stored JSON has none).

    Raises:
        EvalInputError: the URL cannot be opened (malformed, a driver that is not installed, a SQLite file that
            does not exist, a server that refuses), or the database holds no ADK sessions. The password is
            never shown.
    """
    from sqlalchemy.exc import SQLAlchemyError

    try:  # `env:NAME` / `prefect-secret:BLOCK`: a URL with a password
        url = resolve_secret(url, field="sessions_db")
    except SecretUnavailableError as error:
        raise EvalInputError(str(error)) from None
    shown = redacted_url(url)
    engine = _session_engine(url, shown)
    try:
        with engine.connect() as connection:
            yield from _database_turns(connection, shown)
    except SQLAlchemyError as error:
        cause = getattr(error, "orig", None)
        reason = str(cause) if cause is not None else type(error).__name__
        raise EvalInputError(f"cannot read ADK sessions: {reason.splitlines()[0]}", file=shown) from None
    finally:
        engine.dispose()


def _session_engine(url: str, shown: str) -> Any:
    """A sync engine for the session database, refusing a SQLite file that does not exist (opening it would
    create an empty one)."""
    from sqlalchemy import create_engine
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError) as error:
        raise EvalInputError(f"cannot open the session database: {error}", file=shown) from None
    driver = _SYNC_DRIVERS.get(parsed.get_backend_name())
    if driver is not None:
        parsed = parsed.set(drivername=driver)
    database = parsed.database or ""
    if parsed.get_backend_name() == "sqlite" and database not in ("", ":memory:") and not Path(database).is_file():
        raise EvalInputError("no such session database file", file=shown)
    try:
        return create_engine(parsed)
    except (ArgumentError, ImportError) as error:  # a driver that is not installed
        raise EvalInputError(f"cannot open the session database: {error}", file=shown) from None


def _database_turns(connection: Any, shown: str) -> Iterator[RecordedTurn]:
    from sqlalchemy import text

    sessions = connection.execute(text("SELECT app_name, user_id, id, state FROM sessions ORDER BY create_time, id"))
    for app, user, session_id, state in sessions.all():
        events = connection.execute(
            text(
                "SELECT invocation_id, event_data FROM events WHERE app_name = :a AND user_id = :u "
                "AND session_id = :s ORDER BY timestamp, id"
            ),
            {"a": app, "u": user, "s": session_id},
        ).all()
        session = {
            "id": session_id,
            "app_name": app,
            "user_id": user,
            "state": _json(state),
            "events": [{**_json(data), "invocation_id": inv} for inv, data in events],
        }
        yield from turns_from_session(session, f"{shown}#{app}/{user}/{session_id}")


_SYNC_DRIVERS = {"sqlite": "sqlite", "postgresql": "postgresql+psycopg"}


# ---------------------------------------------------------------------------------------------- conversion
def _by_invocation(events: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        groups.setdefault(str(event.get("invocation_id") or ""), []).append(event)
    return groups


def _invocation(invocation_id: str, events: list[dict[str, Any]]) -> tuple[Invocation, str | None]:
    user_content: Any = {"parts": []}
    timestamp = 0.0
    final: dict[str, Any] | None = None
    kept: list[dict[str, Any]] = []
    error = None
    for event in events:
        if (event.get("author") or "agent").lower() == _USER:
            if event.get("content") is not None:
                user_content, timestamp = event["content"], float(event.get("timestamp") or 0.0)
            continue
        error = error or _event_error(event)
        parts = (event.get("content") or {}).get("parts") or []
        if parts:
            if _is_final_response(event) and (not _has_text(final) or _has_text(event)):
                final = event
            if event.get("grounding_metadata") is not None or any(_counts(part) for part in parts):
                kept.append(event)
        elif event.get("grounding_metadata") is not None:
            kept.append(event)
    intermediate = [_invocation_event(event, keep_content=event is not final or bool(_calls(event))) for event in kept]
    invocation = Invocation.model_validate(
        {
            "invocation_id": invocation_id,
            "user_content": user_content,
            "final_response": final["content"] if final else None,
            "intermediate_data": InvocationEvents(invocation_events=intermediate),
            "creation_timestamp": timestamp,
        }
    )
    return invocation, error


def _invocation_event(event: dict[str, Any], *, keep_content: bool) -> InvocationEvent:
    return InvocationEvent.model_validate(
        {
            "author": event.get("author") or "agent",
            "content": event.get("content") if keep_content else None,
            "usage_metadata": event.get("usage_metadata"),
            "model_version": event.get("model_version"),
        }
    )


def _is_final_response(event: dict[str, Any]) -> bool:
    """ADK's `Event.is_final_response`, on the stored event."""
    actions = event.get("actions") or {}
    if actions.get("skip_summarization") or event.get("long_running_tool_ids"):
        return True
    if event.get("error_code") and not event.get("partial") and not _calls(event):
        return True
    parts = (event.get("content") or {}).get("parts") or []
    trailing_code_result = bool(parts) and parts[-1].get("code_execution_result") is not None
    return not _calls(event) and not _responses(event) and not event.get("partial") and not trailing_code_result


def _calls(event: dict[str, Any]) -> list[Any]:
    return [p["function_call"] for p in (event.get("content") or {}).get("parts") or [] if p.get("function_call")]


def _responses(event: dict[str, Any]) -> list[Any]:
    parts = (event.get("content") or {}).get("parts") or []
    return [p["function_response"] for p in parts if p.get("function_response")]


def _counts(part: dict[str, Any]) -> bool:
    return any(part.get(key) for key in ("function_call", "function_response", "text", "inline_data"))


def _has_text(event: dict[str, Any] | None) -> bool:
    return event is not None and any(p.get("text") for p in (event.get("content") or {}).get("parts") or [])


def _event_error(event: dict[str, Any]) -> str | None:
    code = event.get("error_code")
    if not code:
        return None
    message = event.get("error_message")
    return f"{code}: {message}" if message else str(code)


def _agent_of(events: list[dict[str, Any]]) -> str | None:
    authors = [e.get("author") for e in events if (e.get("author") or "").lower() not in ("", _USER)]
    return authors[0] if authors else None


# ---------------------------------------------------------------------------------------------- key spelling
def _normalized(event: dict[str, Any]) -> dict[str, Any]:
    """An event with snake_case keys at every level (the API writes camelCase; the database snake_case)."""
    return {_snake_key(key): _snake_value(key, item) for key, item in event.items()}


def _snake(value: Any) -> Any:
    if isinstance(value, dict):
        return {_snake_key(key): _snake_value(key, item) for key, item in value.items()}
    if isinstance(value, list):
        return [_snake(item) for item in value]
    return value


def _snake_value(key: str, value: Any) -> Any:
    """Keys inside user data (tool arguments and responses, state deltas) are kept as they are."""
    if key in ("args", "response", "state_delta", "stateDelta", "artifact_delta", "artifactDelta"):
        return value
    return _snake(value)


def _snake_key(key: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in key)


def _session_id(session: dict[str, Any]) -> str | None:
    value = _pick(session, "id", "session_id")
    return str(value) if value is not None else None


def _pick(data: dict[str, Any], *keys: str) -> Any:
    return next((data[key] for key in keys if data.get(key) is not None), None)


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else (value or {})


def redacted_url(url: str) -> str:
    """The URL with its password masked (`***`), for messages (`agent_eval.secrets.redact_url_credentials`)."""
    return redact_url_credentials(url)
