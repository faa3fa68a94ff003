"""The home-automation demo as a Google ADK agent (`adk eval` / `agent-eval run` this folder)."""

from . import agent

__all__ = ["agent"]
