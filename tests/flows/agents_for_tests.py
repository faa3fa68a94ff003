"""Agents for the flow tests: they count their calls so tests can assert what was (not) invoked."""

from __future__ import annotations

import asyncio
import os
from collections import Counter

from agent_eval.agents import AgentSession, AgentTurn, CallableAgent, ToolCallRecord, TransientAgentError

CALLS: Counter[str] = Counter()
"""Calls per user message, across the test session; tests use unique messages."""


def echo_agent(message: str, session: AgentSession) -> AgentTurn:
    """Calls `lookup(query=message)` and answers `answer: <message>`."""
    CALLS[message] += 1
    return AgentTurn(
        response=f"answer: {message}",
        tool_calls=[ToolCallRecord(name="lookup", args={"query": message}, response={"ok": True})],
    )


def raising_agent(message: str, session: AgentSession) -> AgentTurn:
    """Like `echo_agent`, but raises a (non-transient) ValueError on messages containing 'boom'."""
    if "boom" in message:
        CALLS[message] += 1
        raise ValueError(f"cannot handle {message!r}")
    return echo_agent(message, session)


def flaky_agent(message: str, session: AgentSession) -> AgentTurn:
    """Fails twice with a transient error for each message, then answers like `echo_agent`."""
    CALLS["flaky:" + message] += 1
    if CALLS["flaky:" + message] <= 2:
        raise TransientAgentError("503 from upstream model")
    return echo_agent(message, session)


def always_transient_agent(message: str, session: AgentSession) -> AgentTurn:
    """Never succeeds: every call is a transient failure."""
    CALLS["transient:" + message] += 1
    raise TransientAgentError("429 rate limited")


async def hanging_agent(message: str, session: AgentSession) -> AgentTurn:
    """Never answers messages containing 'hang'; answers others like `echo_agent`."""
    if "hang" in message:
        CALLS["hang:" + message] += 1
        await asyncio.sleep(3600)
    return echo_agent(message, session)


CALL_LOG_ENV = "AGENT_EVAL_TEST_CALL_LOG"


async def logged_slow_agent(message: str, session: AgentSession) -> AgentTurn:
    """`echo_agent` after 0.2 s, appending each message to the file `$AGENT_EVAL_TEST_CALL_LOG` first, so a test
    counts the calls of every process (workers included)."""
    with open(os.environ[CALL_LOG_ENV], "a", encoding="utf-8") as log:
        log.write(message + "\n")
    await asyncio.sleep(0.2)
    return echo_agent(message, session)


async def pid_logged_agent(message: str, session: AgentSession) -> AgentTurn:
    """`echo_agent` after 0.1 s, appending `PID MESSAGE` to `$AGENT_EVAL_TEST_CALL_LOG` first, so a test sees
    which process (a Dask worker, say) ran each call."""
    with open(os.environ[CALL_LOG_ENV], "a", encoding="utf-8") as log:
        log.write(f"{os.getpid()} {message}\n")
    await asyncio.sleep(0.1)
    return echo_agent(message, session)


class _PreflightCountingAgent(CallableAgent):
    """`echo_agent` whose check before the run counts itself in `CALLS["preflight"]`."""

    async def preflight(self) -> None:
        CALLS["preflight"] += 1


preflight_counting_agent = _PreflightCountingAgent(
    echo_agent, "tests.flows.agents_for_tests:preflight_counting_agent", fingerprint="preflight-counting"
)
