"""Agents for the failure flow tests (importable as `tests.agents.failing_agents:NAME` from the repository root).

Each answers like `tests.flows.agents_for_tests.echo_agent` (so `tests.flows.helpers.write_echo_set` cases pass)
unless its message asks for trouble.
"""

from __future__ import annotations

import sys
import time

import httpx

from agent_eval.agents import AgentSession, AgentTurn, ToolCallRecord

UPSTREAM = {"url": ""}
"""The backend `http_backed_agent` calls (set by the test before the run)."""


def echo(message: str) -> AgentTurn:
    """`answer: <message>` after `lookup(query=message)`: what the echo eval sets expect."""
    return AgentTurn(
        response=f"answer: {message}",
        tool_calls=[ToolCallRecord(name="lookup", args={"query": message}, response={"ok": True})],
    )


def exit_or_interrupt(message: str, session: AgentSession) -> AgentTurn:
    """`sys.exit(3)` on messages starting with 'exit', KeyboardInterrupt on 'interrupt', else echoes."""
    if message.startswith("exit"):
        sys.exit(3)
    if message.startswith("interrupt"):
        raise KeyboardInterrupt
    return echo(message)


def hangs(message: str, session: AgentSession) -> AgentTurn:
    """Never answers (a sync agent stuck for an hour)."""
    time.sleep(3600)
    return echo(message)


def http_backed_agent(message: str, session: AgentSession) -> AgentTurn:
    """Calls its backend (`UPSTREAM["url"]`) with httpx, raising what httpx raises, then echoes."""
    httpx.get(UPSTREAM["url"], timeout=5).raise_for_status()
    return echo(message)
