"""Agents under test: one protocol, adapters selected by a reference string.

Internal: the public API is `agent_eval`'s; this package's `__all__` serves extension work
(a new agent adapter) and may change between releases.

Names are imported on first use (`agent_eval.lazy`), so importing the package is cheap."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_eval.lazy import lazy_exports

if TYPE_CHECKING:
    from agent_eval.agents.adk_agent import AdkAgent
    from agent_eval.agents.base import Agent, AgentSession, AgentTurn, ToolCallRecord, TransientAgentError
    from agent_eval.agents.callable import CallableAgent, to_agent_turn
    from agent_eval.agents.conversation import TurnAgent, UserSimulator, fresh_session, turn_invocation
    from agent_eval.agents.errors import (
        AgentFailure,
        TurnTimeoutError,
        describe_error,
        error_kind_of,
        format_traceback,
        is_transient,
    )
    from agent_eval.agents.genai_agent import GenaiAgent, MaxStepsReached
    from agent_eval.agents.http_agent import (
        AGENT_VERSION_ENV,
        KEEP_SESSIONS_ENV,
        SERVER_SESSION_KEY,
        AdkApiAgent,
        AgentHttpError,
        HttpAgent,
        server_session_of,
    )
    from agent_eval.agents.references import AGENT_REFERENCE_FORMS
    from agent_eval.agents.replay import REPLAY_REFERENCE, ReplayAgent
    from agent_eval.agents.resolve import find_default_agent, resolve_agent
    from agent_eval.agents.running import DEFAULT_PREFLIGHT_TIMEOUT, preflight_agent, run_agent_case
    from agent_eval.agents.simulator import LlmUserSimulator, ScriptedUserSimulator

_EXPORTS = {
    "agent_eval.agents.adk_agent": ("AdkAgent",),
    "agent_eval.agents.base": ("Agent", "AgentSession", "AgentTurn", "ToolCallRecord", "TransientAgentError"),
    "agent_eval.agents.callable": ("CallableAgent", "to_agent_turn"),
    "agent_eval.agents.conversation": ("TurnAgent", "UserSimulator", "fresh_session", "turn_invocation"),
    "agent_eval.agents.errors": (
        "AgentFailure",
        "TurnTimeoutError",
        "describe_error",
        "error_kind_of",
        "format_traceback",
        "is_transient",
    ),
    "agent_eval.agents.genai_agent": ("GenaiAgent", "MaxStepsReached"),
    "agent_eval.agents.http_agent": (
        "AGENT_VERSION_ENV",
        "KEEP_SESSIONS_ENV",
        "SERVER_SESSION_KEY",
        "AdkApiAgent",
        "AgentHttpError",
        "HttpAgent",
        "server_session_of",
    ),
    "agent_eval.agents.replay": ("REPLAY_REFERENCE", "ReplayAgent"),
    "agent_eval.agents.references": ("AGENT_REFERENCE_FORMS",),
    "agent_eval.agents.resolve": ("find_default_agent", "resolve_agent"),
    "agent_eval.agents.running": ("DEFAULT_PREFLIGHT_TIMEOUT", "preflight_agent", "run_agent_case"),
    "agent_eval.agents.simulator": ("LlmUserSimulator", "ScriptedUserSimulator"),
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "AGENT_REFERENCE_FORMS",
    "AGENT_VERSION_ENV",
    "DEFAULT_PREFLIGHT_TIMEOUT",
    "KEEP_SESSIONS_ENV",
    "REPLAY_REFERENCE",
    "SERVER_SESSION_KEY",
    "AdkAgent",
    "AdkApiAgent",
    "Agent",
    "AgentFailure",
    "AgentHttpError",
    "AgentSession",
    "AgentTurn",
    "CallableAgent",
    "GenaiAgent",
    "HttpAgent",
    "LlmUserSimulator",
    "MaxStepsReached",
    "ReplayAgent",
    "ScriptedUserSimulator",
    "ToolCallRecord",
    "TransientAgentError",
    "TurnAgent",
    "TurnTimeoutError",
    "UserSimulator",
    "describe_error",
    "error_kind_of",
    "find_default_agent",
    "format_traceback",
    "fresh_session",
    "is_transient",
    "preflight_agent",
    "resolve_agent",
    "run_agent_case",
    "server_session_of",
    "to_agent_turn",
    "turn_invocation",
]
