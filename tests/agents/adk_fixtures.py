"""A small ADK agent tree for the adapter tests, played by `ScriptedLlm`; its tools count their real calls.

- `router` (root): "chain" → `lookup` then `act` with what `lookup` found (a two-step chain); "parallel" →
  two `lookup`s in one model turn; "delegate" → `transfer_to_agent(helper)`; "research" → the `researcher`
  `AgentTool`; "bump" → `bump` (a counter in the session state); "who" → `whoami`.
- `helper` (sub-agent, reached by transfer): calls `act(target="from-helper")` and answers.
- `researcher` (behind `AgentTool`): calls `lookup(key="deep")` and answers with what it found.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

pytest.importorskip("google.adk")

from google.adk.agents import LlmAgent
from google.adk.tools.agent_tool import AgentTool
from google.adk.tools.tool_context import ToolContext

from examples.home_automation_adk.scripted_model import Rule, ScriptedLlm, call

CALLS: Counter[str] = Counter()
"""Real executions per tool name (mocked calls do not count)."""

DIRECTORY = {"a": "alpha", "b": "beta", "deep": "treasure"}


def lookup(key: str, tool_context: ToolContext) -> dict[str, Any]:
    """Look a key up in the directory (the session state's `directory` first).

    Args:
        key: what to look up.
    """
    CALLS["lookup"] += 1
    directory = DIRECTORY | dict(tool_context.state.get("directory", {}))
    return {"key": key, "value": directory.get(key, "unknown")}


def act(target: str) -> dict[str, Any]:
    """Act on a target.

    Args:
        target: what to act on.
    """
    CALLS["act"] += 1
    return {"done": target}


def bump(tool_context: ToolContext) -> dict[str, Any]:
    """Add one to the session state's counter."""
    CALLS["bump"] += 1
    tool_context.state["count"] = int(tool_context.state.get("count", 0)) + 1
    return {"count": tool_context.state["count"]}


def whoami(tool_context: ToolContext) -> dict[str, Any]:
    """The app, user and session the tool runs in."""
    CALLS["whoami"] += 1
    session = tool_context.session
    return {"app": session.app_name, "user": tool_context.user_id, "session": session.id}


def build_tree() -> LlmAgent:
    """A fresh `router` tree (new agent objects each time: an ADK agent has one parent)."""
    researcher = LlmAgent(
        name="researcher",
        model=ScriptedLlm(
            rules=[
                Rule(
                    ".",
                    [
                        [call("lookup", key="deep")],
                        lambda ctx: f"found {ctx.last.get('value', ctx.last.get('result'))}",
                    ],
                )
            ]
        ),
        description="Researches things.",
        tools=[lookup],
    )
    helper = LlmAgent(
        name="helper",
        model=ScriptedLlm(rules=[Rule(".", [[call("act", target="from-helper")], "helper did it"])]),
        description="Helps.",
        tools=[act],
    )
    return LlmAgent(
        name="router",
        model=ScriptedLlm(rules=ROUTER_RULES),
        tools=[lookup, act, bump, whoami, AgentTool(researcher)],
        sub_agents=[helper],
    )


ROUTER_RULES = [
    Rule(
        r"\bchain\b",
        [
            ["Let me look that up.", call("lookup", key="a")],
            lambda ctx: [call("act", target=ctx.last["value"])],
            lambda ctx: f"chained to {ctx.last['done']}",
        ],
    ),
    Rule(
        r"\bparallel\b",
        [
            [call("lookup", key="a"), call("lookup", key="b")],
            lambda ctx: " and ".join(response["value"] for _, response in ctx.responses),
        ],
    ),
    Rule(r"\bdelegate\b", [[call("transfer_to_agent", agent_name="helper")]]),
    Rule(r"\bresearch\b", [[call("researcher", request="dig deep")], lambda ctx: f"researcher: {ctx.last['result']}"]),
    Rule(r"\bbump\b", [[call("bump")], lambda ctx: f"count is {ctx.last['count']}"]),
    Rule(r"\bwho\b", [[call("whoami")], lambda ctx: "{app}/{user}/{session}".format(**ctx.last)]),
]
