"""Prefect flows: `agent-eval` (evaluate)."""

from agent_eval.flows.evaluate import agent_eval_flow

__all__ = ["agent_eval_flow"]
