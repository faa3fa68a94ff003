"""The check before the first case (real local servers), the `--agent` forms, and the ADK api_server sessions:
the server's session id recorded, sessions kept for `adk web` on request."""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

import pytest

from agent_eval.agents import (
    AGENT_REFERENCE_FORMS,
    KEEP_SESSIONS_ENV,
    SERVER_SESSION_KEY,
    AdkApiAgent,
    HttpAgent,
    ReplayAgent,
    preflight_agent,
    resolve_agent,
    server_session_of,
)
from agent_eval.errors import EvalInputError, InfrastructureError
from agent_eval.schema import AgentRun, EvalCase
from tests.agents.http_servers import FakeAdkApiServer, serve


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def check(agent: Any, timeout: float = 10.0) -> None:
    asyncio.run(preflight_agent(agent, timeout=timeout))


def list_apps(apps: Any, status: int = 200) -> Any:
    def handle(method: str, path: str, body: Any) -> tuple[int, Any]:
        del body
        return (status, apps) if (method, path) == ("GET", "/list-apps") else (404, {"detail": "Not Found"})

    return handle


# ------------------------------------------------------------------------------------------ ADK api_server
def test_an_api_server_serving_the_app_passes() -> None:
    with serve(list_apps(["home", "weather"])) as (base_url, requests):
        check(resolve_agent(f"adk-api+{base_url}/weather"))

    assert [(r.method, r.path) for r in requests] == [("GET", "/list-apps")]


def test_a_detailed_app_list_is_read_too() -> None:
    with serve(list_apps({"apps": [{"name": "home", "root_agent_name": "r"}]})) as (base_url, _):
        check(AdkApiAgent(base_url, "home"))


def test_a_wrong_app_name_names_the_apps_the_server_has() -> None:
    with serve(list_apps(["home_agent", "weather"])) as (base_url, _), pytest.raises(EvalInputError) as caught:
        check(resolve_agent(f"adk-api+{base_url}/home_agnet"))

    assert str(caught.value) == (
        f"field 'agent': the ADK api_server at {base_url} has no app 'home_agnet' (did you mean 'home_agent'?); "
        f"its apps are ['home_agent', 'weather']: use adk-api+{base_url}/APP_NAME"
    )


def test_an_unreachable_api_server_is_an_infrastructure_error() -> None:
    port = closed_port()
    with pytest.raises(InfrastructureError, match=r"^cannot reach the ADK api_server at http://127.0.0.1:\d+: "):
        check(resolve_agent(f"adk-api+http://127.0.0.1:{port}/home"))


def test_a_server_that_is_not_an_api_server_is_a_wrong_reference() -> None:
    not_an_api_server = serve(lambda method, path, body: (404, {"detail": "Not Found"}))
    with not_an_api_server as (base_url, _), pytest.raises(EvalInputError, match="HTTP 404 and no app list"):
        check(AdkApiAgent(base_url, "home"))


def test_an_api_server_failing_its_app_list_is_an_infrastructure_error() -> None:
    failing = serve(list_apps({"detail": "boom"}, status=503))
    with failing as (base_url, _), pytest.raises(InfrastructureError, match="answered GET /list-apps with HTTP 503"):
        check(AdkApiAgent(base_url, "home"))


def test_credentials_in_the_url_are_not_shown() -> None:
    port = closed_port()
    with pytest.raises(InfrastructureError) as caught:
        check(AdkApiAgent(f"http://user:s3cret@127.0.0.1:{port}", "home"))

    assert "s3cret" not in str(caught.value)


def test_a_check_that_hangs_is_cut_at_the_timeout() -> None:
    def slow(method: str, path: str, body: Any) -> tuple[int, Any]:
        time.sleep(3)
        return 200, ["home"]

    started = time.perf_counter()
    with serve(slow) as (base_url, _), pytest.raises(InfrastructureError, match=r"did not answer its check within"):
        check(AdkApiAgent(base_url, "home"), timeout=0.5)
    assert time.perf_counter() - started < 5


# ------------------------------------------------------------------------------------- generic endpoints
def test_any_http_answer_means_a_generic_endpoint_is_reachable() -> None:
    with serve(lambda method, path, body: (200, {})) as (base_url, requests):  # http.server answers HEAD 501
        check(HttpAgent(base_url + "/chat"))

    assert requests == []  # the stdlib server answered the HEAD itself, without calling the agent


def test_a_refused_generic_endpoint_is_an_infrastructure_error() -> None:
    port = closed_port()
    with pytest.raises(
        InfrastructureError, match=r"^cannot reach the agent at http://127.0.0.1:\d+/chat: ConnectError"
    ):
        check(resolve_agent(f"http://127.0.0.1:{port}/chat"))


def test_agents_without_a_check_pass() -> None:
    class Plain:
        reference = "tests:Plain"
        fingerprint = "plain"

        async def run_case(self, case: EvalCase, eval_set_id: str, run_index: int) -> AgentRun:
            raise NotImplementedError

    check(Plain())
    check(ReplayAgent())


def test_every_agent_reference_form_is_listed() -> None:
    for form in ("adk-api+http://HOST:PORT/APP", "http://", "agent_folder", "file.py:ATTR", "module:ATTR", "replay"):
        assert form in AGENT_REFERENCE_FORMS


# ---------------------------------------------------------------------------------------- server sessions
@pytest.fixture
def adk_server() -> Any:
    pytest.importorskip("google.adk")
    from examples.home_automation_adk.agent import root_agent

    fake = FakeAdkApiServer("home", root_agent)
    with serve(fake.handle) as (base_url, requests):
        yield base_url, requests, fake


def one_turn_case() -> EvalCase:
    return EvalCase.model_validate(
        {
            "eval_id": "case",
            "conversation": [{"user_content": {"role": "user", "parts": [{"text": "Turn off device_2 please."}]}}],
            "session_input": {"app_name": "x", "user_id": "alice", "state": {"owner": "alice"}},
        }
    )


def test_the_server_session_is_recorded_and_deleted_by_default(
    adk_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEEP_SESSIONS_ENV, raising=False)
    base_url, requests, fake = adk_server
    run: AgentRun = asyncio.run(resolve_agent(f"adk-api+{base_url}/home").run_case(one_turn_case(), "set", 0))

    session = server_session_of(run)
    assert session is not None
    created = requests[0]
    assert session == {
        "base_url": base_url,
        "app_name": "home",
        "user_id": "alice",
        "session_id": created.body["session_id"],
        "kept": False,
    }
    assert [r.method for r in requests][-1] == "DELETE"
    remaining = asyncio.run(fake.sessions.list_sessions(app_name="home", user_id="alice"))
    assert remaining.sessions == []
    assert (run.final_session_state or {})["owner"] == "alice"


def test_sessions_are_kept_for_adk_web_when_asked(adk_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEEP_SESSIONS_ENV, "1")
    base_url, requests, fake = adk_server
    run: AgentRun = asyncio.run(resolve_agent(f"adk-api+{base_url}/home").run_case(one_turn_case(), "set", 0))

    recorded = (run.final_session_state or {})[SERVER_SESSION_KEY]
    assert recorded["kept"] is True
    assert "DELETE" not in [r.method for r in requests]
    kept = asyncio.run(fake.sessions.get_session(app_name="home", user_id="alice", session_id=recorded["session_id"]))
    assert kept is not None and len(kept.events) >= 2  # the user's message and the agent's answer are there


def test_the_servers_own_session_id_wins_over_the_one_asked_for() -> None:
    def renames(method: str, path: str, body: Any) -> tuple[int, Any]:
        if path.endswith("/sessions") and method == "POST":
            return 200, {"id": "server-chosen-id", "state": {}}
        if path == "/run":
            return 200, [{"content": {"role": "model", "parts": [{"text": "hi"}]}}]
        return 200, {"state": {}}

    with serve(renames) as (base_url, requests):
        run: AgentRun = asyncio.run(AdkApiAgent(base_url, "home").run_case(one_turn_case(), "set", 0))

    assert (server_session_of(run) or {})["session_id"] == "server-chosen-id"
    assert requests[1].body["session_id"] == "server-chosen-id"
    assert requests[-1].path == "/apps/home/users/alice/sessions/server-chosen-id"
