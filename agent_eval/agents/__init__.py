"""Agents under test: one protocol, adapters selected by a reference string.

Internal: the public API is `agent_eval`'s; this package's `__all__` serves extension work
(a new agent adapter) and may change between releases.

Names are imported on first use (`agent_eval.lazy`), so importing the package is cheap."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_eval.lazy import lazy_exports

if TYPE_CHECKING:
    from agent_eval.agents.adk_agent import AdkAgent as AdkAgent
    from agent_eval.agents.base import Agent as Agent
    from agent_eval.agents.base import AgentSession as AgentSession
    from agent_eval.agents.base import AgentTurn as AgentTurn
    from agent_eval.agents.base import Preflighted as Preflighted
    from agent_eval.agents.base import ToolCallRecord as ToolCallRecord
    from agent_eval.agents.base import TransientAgentError as TransientAgentError
    from agent_eval.agents.callable import CallableAgent as CallableAgent
    from agent_eval.agents.callable import to_agent_turn as to_agent_turn
    from agent_eval.agents.conversation import TurnAgent as TurnAgent
    from agent_eval.agents.conversation import UserSimulator as UserSimulator
    from agent_eval.agents.conversation import fresh_session as fresh_session
    from agent_eval.agents.conversation import turn_invocation as turn_invocation
    from agent_eval.agents.errors import AgentFailure as AgentFailure
    from agent_eval.agents.errors import TurnTimeoutError as TurnTimeoutError
    from agent_eval.agents.errors import describe_error as describe_error
    from agent_eval.agents.errors import error_kind_of as error_kind_of
    from agent_eval.agents.errors import format_traceback as format_traceback
    from agent_eval.agents.errors import is_transient as is_transient
    from agent_eval.agents.errors import note_rate_limit as note_rate_limit
    from agent_eval.agents.genai_agent import GenaiAgent as GenaiAgent
    from agent_eval.agents.genai_agent import MaxStepsReached as MaxStepsReached
    from agent_eval.agents.http_agent import AGENT_VERSION_ENV as AGENT_VERSION_ENV
    from agent_eval.agents.http_agent import KEEP_SESSIONS_ENV as KEEP_SESSIONS_ENV
    from agent_eval.agents.http_agent import SERVER_SESSION_KEY as SERVER_SESSION_KEY
    from agent_eval.agents.http_agent import AdkApiAgent as AdkApiAgent
    from agent_eval.agents.http_agent import AgentHttpError as AgentHttpError
    from agent_eval.agents.http_agent import HttpAgent as HttpAgent
    from agent_eval.agents.http_agent import server_session_of as server_session_of
    from agent_eval.agents.references import AGENT_REFERENCE_FORMS as AGENT_REFERENCE_FORMS
    from agent_eval.agents.replay import REPLAY_REFERENCE as REPLAY_REFERENCE
    from agent_eval.agents.replay import ReplayAgent as ReplayAgent
    from agent_eval.agents.resolve import find_default_agent as find_default_agent
    from agent_eval.agents.resolve import resolve_agent as resolve_agent
    from agent_eval.agents.running import DEFAULT_PREFLIGHT_TIMEOUT as DEFAULT_PREFLIGHT_TIMEOUT
    from agent_eval.agents.running import preflight_agent as preflight_agent
    from agent_eval.agents.running import run_agent_case as run_agent_case
    from agent_eval.agents.simulator import LlmUserSimulator as LlmUserSimulator
    from agent_eval.agents.simulator import ScriptedUserSimulator as ScriptedUserSimulator


__getattr__, __dir__, __all__ = lazy_exports(__name__, __file__)
