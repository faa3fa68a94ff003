"""Prefect flows: `agent-eval` (evaluate), `agent-eval-rerun`, `agent-eval-rescore`, `agent-eval-traces`
(recorded traffic since the last run, on a schedule).

Internal: the public API is `agent_eval`'s (deployments name these flows by entrypoint); this package's names may
change between releases.
"""

from agent_eval.flows.evaluate import agent_eval_flow, run_plan
from agent_eval.flows.stored import rerun_flow, rescore_flow
from agent_eval.flows.traces import TracesRequest, traces_flow

__all__ = ["TracesRequest", "agent_eval_flow", "rerun_flow", "rescore_flow", "run_plan", "traces_flow"]
