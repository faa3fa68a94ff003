"""The agent of `bench_shards.py`: answers `answer: <message>` after `$BENCH_AGENT_LATENCY` seconds (0.2)."""

from __future__ import annotations

import asyncio
import os

from agent_eval import AgentSession, AgentTurn


async def sleeping_agent(message: str, session: AgentSession) -> AgentTurn:
    """Sleep the configured latency, then answer with the expected response."""
    await asyncio.sleep(float(os.environ.get("BENCH_AGENT_LATENCY", "0.2")))
    return AgentTurn(response=f"answer: {message}")
