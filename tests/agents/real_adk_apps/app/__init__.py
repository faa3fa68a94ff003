"""The ADK app `app` that tests/agents/test_real_adk_api_server.py serves with a real `adk api_server`."""

from . import agent

__all__ = ["agent"]
