"""Agents under test: one protocol, adapters selected by a reference string."""

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
from agent_eval.agents.replay import REPLAY_REFERENCE, ReplayAgent
from agent_eval.agents.resolve import AGENT_REFERENCE_FORMS, find_default_agent, resolve_agent
from agent_eval.agents.running import DEFAULT_PREFLIGHT_TIMEOUT, preflight_agent, run_agent_case
from agent_eval.agents.simulator import LlmUserSimulator, ScriptedUserSimulator

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
