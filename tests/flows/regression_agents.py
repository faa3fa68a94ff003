"""Agents for the regression, re-run and re-score tests: their quality is switched per message by the test.

`switchable_agent` behaves like `agents_for_tests.echo_agent` unless `MODES` says otherwise for a message:
`"wrong_tool"` calls the wrong tool (the case fails `tool_trajectory_avg_score`), `"wordy"` adds a word to the
answer (`response_match_score` drops from 1.0 to 6/7 and still passes its 0.8 threshold). Its code does not
change between runs, so a test that switches a mode must run with `refresh_cache=True`.

`stable_raising_agent` is `agents_for_tests.raising_agent`. Both have a fixed fingerprint: the invocation cache
key then does not depend on the other files of this folder (a plain function's fingerprint hashes them all),
which may change while tests run, so a test can rely on the cache across its flow runs.
"""

from __future__ import annotations

from collections import Counter

from agent_eval.agents import AgentSession, AgentTurn, CallableAgent, ToolCallRecord
from tests.flows import agents_for_tests

__all__ = ["CALLS", "MODES", "WORDY_SCORE", "stable_raising_agent", "switchable_agent"]

CALLS: Counter[str] = Counter()
"""Calls of `switchable_agent` per user message; tests use unique messages."""

MODES: dict[str, str] = {}
"""Per user message, how `switchable_agent` answers it badly: `wrong_tool` or `wordy`; absent: correctly."""

WORDY_SCORE = 2 * (3 / 4) * 1.0 / (3 / 4 + 1.0)
"""ROUGE-1 F1 of a wordy answer (4 tokens) against the reference (3 tokens: `answer`, the name, the token)."""


def _switchable(message: str, session: AgentSession) -> AgentTurn:
    """`lookup(query=message)` and `answer: <message>`, unless `MODES[message]` asks for a worse answer."""
    CALLS[message] += 1
    mode = MODES.get(message)
    tool = "delete_everything" if mode == "wrong_tool" else "lookup"
    response = f"answer: {message}" + (" indeed" if mode == "wordy" else "")
    return AgentTurn(response=response, tool_calls=[ToolCallRecord(name=tool, args={"query": message})])


switchable_agent = CallableAgent(
    _switchable, reference="tests.flows.regression_agents:switchable_agent", fingerprint="switchable-agent-v1"
)
"""The switchable agent, with a fixed fingerprint."""

stable_raising_agent = CallableAgent(
    agents_for_tests.raising_agent,
    reference="tests.flows.regression_agents:stable_raising_agent",
    fingerprint="stable-raising-agent-v1",
)
"""`raising_agent` (counts in `agents_for_tests.CALLS`; raises ValueError on messages with 'boom')."""
