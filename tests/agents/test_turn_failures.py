"""A turn that hangs, or that raises `SystemExit` / `KeyboardInterrupt`: the case run fails (or times out) with
the reason recorded, and nothing of it outlives the evaluation (sync turns run on daemon threads)."""

from __future__ import annotations

import asyncio
import contextvars
import sys
import threading
import time
from typing import Any

import pytest

from agent_eval.agents import (
    AgentFailure,
    AgentSession,
    CallableAgent,
    TurnTimeoutError,
    error_kind_of,
    run_agent_case,
)
from agent_eval.agents.threads import run_in_daemon_thread
from agent_eval.schema import AgentRun, EvalCase

REQUEST_ID: contextvars.ContextVar[str] = contextvars.ContextVar("REQUEST_ID", default="unset")


def make_case(*messages: str) -> EvalCase:
    conversation = [{"user_content": {"role": "user", "parts": [{"text": m}]}} for m in messages]
    return EvalCase.model_validate({"eval_id": "case", "conversation": conversation})


def run_case(agent: Any, *messages: str) -> AgentRun:
    result: AgentRun = asyncio.run(agent.run_case(make_case(*messages), "set", 0))
    return result


def failure_of(agent: Any, *messages: str) -> AgentRun:
    with pytest.raises(AgentFailure) as caught:
        run_case(agent, *messages)
    return caught.value.run


# ------------------------------------------------------------------------------------------- daemon threads
def test_a_sync_call_runs_on_a_daemon_thread_in_the_callers_context() -> None:
    def where() -> tuple[bool, str]:
        return threading.current_thread().daemon, REQUEST_ID.get()

    async def main() -> tuple[bool, str]:
        REQUEST_ID.set("case-7")
        return await run_in_daemon_thread(where)

    assert asyncio.run(main()) == (True, "case-7")


def test_a_hung_sync_call_is_abandoned_on_timeout_and_never_joined() -> None:
    release = threading.Event()

    async def main() -> float:
        started = time.perf_counter()
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.2):
                await run_in_daemon_thread(release.wait, name="hung-for-test")
        return time.perf_counter() - started

    assert asyncio.run(main()) < 2.0
    hung = [thread for thread in threading.enumerate() if thread.name == "hung-for-test"]
    assert [thread.daemon for thread in hung] == [True]
    release.set()


def test_a_hung_sync_agent_turn_times_out_as_a_turn_timeout() -> None:
    release = threading.Event()

    def hangs(message: str) -> str:
        release.wait(60)
        return "too late"

    agent = CallableAgent(hangs, reference="tests:hangs", fingerprint="hangs")
    agent.turn_timeout = 0.3
    started = time.perf_counter()
    with pytest.raises(TurnTimeoutError, match=r"^turn 1 took longer than 0.3 s$") as caught:
        run_case(agent, "hello")
    release.set()

    assert time.perf_counter() - started < 5.0
    assert error_kind_of(caught.value) == "timeout"


def test_a_sync_tool_of_a_genai_agent_runs_on_a_daemon_thread() -> None:
    from agent_eval.agents.tool_runner import run_tool

    def tool_thread() -> dict[str, Any]:
        current = threading.current_thread()
        return {"daemon": current.daemon, "main": current is threading.main_thread()}

    assert asyncio.run(run_tool({"tool_thread": tool_thread}, [], "tool_thread", {})) == {
        "daemon": True,
        "main": False,
    }


# -------------------------------------------------------------------------------- SystemExit and friends
def exits(message: str) -> str:
    sys.exit(3)


def interrupts(message: str, session: AgentSession) -> str:
    if message == "second":
        raise KeyboardInterrupt
    return "fine"


async def async_exits(message: str) -> str:
    raise SystemExit("bye")


def test_sys_exit_in_a_sync_agent_fails_the_case_run_with_the_reason() -> None:
    run = failure_of(CallableAgent(exits, reference="tests:exits", fingerprint="exits"), "hi")

    assert (run.error, run.error_kind) == ("turn 1: SystemExit: 3 raised by the agent", "agent")
    assert "sys.exit(3)" in (run.error_traceback or "")


def test_keyboard_interrupt_on_a_later_turn_keeps_the_earlier_turns() -> None:
    agent = CallableAgent(interrupts, reference="tests:interrupts", fingerprint="interrupts")
    run = failure_of(agent, "first", "second")

    assert run.error == "turn 2: KeyboardInterrupt raised by the agent"
    assert (run.error_kind, len(run.invocations)) == ("agent", 1)


def test_system_exit_in_an_async_agent_fails_the_case_run() -> None:
    run = failure_of(CallableAgent(async_exits, reference="tests:async_exits", fingerprint="ae"), "hi")

    assert (run.error, run.error_kind) == ("turn 1: SystemExit: bye raised by the agent", "agent")


def test_an_agents_own_exception_records_its_kind_and_traceback() -> None:
    def broken(message: str) -> str:
        return {"not": "a turn"}["missing"]

    run = failure_of(CallableAgent(broken, reference="tests:broken", fingerprint="broken"), "hi")

    assert (run.error, run.error_kind) == ("turn 1: KeyError: 'missing'", "agent")
    assert run.error_traceback is not None and 'return {"not": "a turn"}["missing"]' in run.error_traceback


class ExitingAgent:
    """A user's own `Agent` (not a TurnAgent) whose run_case calls sys.exit."""

    reference = "tests:ExitingAgent"
    fingerprint = "exiting"

    async def run_case(self, case: EvalCase, eval_set_id: str, run_index: int) -> AgentRun:
        sys.exit(5)


def test_run_agent_case_turns_any_agents_base_exception_into_a_failure() -> None:
    with pytest.raises(AgentFailure) as caught:
        asyncio.run(run_agent_case(ExitingAgent(), make_case("hi"), "set", 2))

    run = caught.value.run
    assert (run.eval_id, run.run_index, run.error, run.error_kind) == (
        "case",
        2,
        "SystemExit: 5 raised by the agent",
        "agent",
    )
