"""Agents under test: one protocol, adapters selected by a reference string."""

from agent_eval.agents.adk_agent import AdkAgent
from agent_eval.agents.base import Agent, AgentSession, AgentTurn, ToolCallRecord, TransientAgentError
from agent_eval.agents.callable import CallableAgent, to_agent_turn
from agent_eval.agents.conversation import TurnAgent, UserSimulator, fresh_session, turn_invocation
from agent_eval.agents.errors import AgentFailure, is_transient
from agent_eval.agents.genai_agent import GenaiAgent, MaxStepsReached
from agent_eval.agents.http_agent import AGENT_VERSION_ENV, AdkApiAgent, HttpAgent
from agent_eval.agents.replay import REPLAY_REFERENCE, ReplayAgent
from agent_eval.agents.resolve import find_default_agent, resolve_agent
from agent_eval.agents.simulator import LlmUserSimulator, ScriptedUserSimulator

__all__ = [
    "AGENT_VERSION_ENV",
    "REPLAY_REFERENCE",
    "AdkAgent",
    "AdkApiAgent",
    "Agent",
    "AgentFailure",
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
    "UserSimulator",
    "find_default_agent",
    "fresh_session",
    "is_transient",
    "resolve_agent",
    "to_agent_turn",
    "turn_invocation",
]
