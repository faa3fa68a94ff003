"""Flows over a stored run: `agent-eval-rerun` (its cases again, the finished invocations from the cache)
and `agent-eval-rescore` (its recorded invocations, scored with a new config; the agent is not called)."""

from __future__ import annotations

from typing import Any

from prefect import flow

from agent_eval.flows.evaluate import run_plan
from agent_eval.flows.lifecycle import on_cancelled, on_crashed
from agent_eval.plan.eval_plan import handed_over
from agent_eval.plan.stored import RerunRequest, RescoreRequest, plan_rerun, plan_rescore

__all__ = ["rerun_flow", "rescore_flow"]


@flow(name="agent-eval-rerun", log_prints=False, on_cancellation=[on_cancelled], on_crashed=[on_crashed])
async def rerun_flow(request: RerunRequest) -> Any:
    """Evaluate a stored run's cases (all, or only the failed / errored ones) again with the same agent and
    config; invocations already cached are reused unless `refresh`. Stored as a new run linked to the source."""
    return await run_plan(handed_over(request) or plan_rerun(request), source_run_id=request.run_id)


@flow(name="agent-eval-rescore", log_prints=False, on_cancellation=[on_cancelled], on_crashed=[on_crashed])
async def rescore_flow(request: RescoreRequest) -> Any:
    """Score a stored run's recorded invocations with a new or changed config, without invoking the agent.
    Stored as a new run linked to the source."""
    return await run_plan(handed_over(request) or plan_rescore(request), source_run_id=request.run_id)
