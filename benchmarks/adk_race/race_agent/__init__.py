"""The race agent of `benchmarks/bench_vs_adk.py`: an ADK agent folder that `adk eval` and `agent-eval run` both
accept (this `__init__` imports `agent`, whose `root_agent` is the agent). It imports only google-adk and the
standard library, so that it runs unchanged in ADK's own virtual environment."""

from . import agent

__all__ = ["agent"]
