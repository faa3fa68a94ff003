"""Prefect flows: `agent-eval` (evaluate), `agent-eval-rerun`, `agent-eval-rescore`."""

from agent_eval.flows.evaluate import agent_eval_flow, run_plan
from agent_eval.flows.stored import rerun_flow, rescore_flow

__all__ = ["agent_eval_flow", "rerun_flow", "rescore_flow", "run_plan"]
