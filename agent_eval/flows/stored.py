"""Flows over a stored run: `agent-eval-rerun` (its cases again, the finished invocations from the cache)
and `agent-eval-rescore` (its recorded invocations, scored with a new config; the agent is not called)."""

from __future__ import annotations

from typing import Any, TypeVar

from prefect import flow

from agent_eval.flows.evaluate import run_plan
from agent_eval.flows.lifecycle import on_cancelled, on_crashed
from agent_eval.plan.eval_plan import handed_over
from agent_eval.plan.stored import RerunRequest, RescoreRequest, plan_rerun, plan_rescore
from agent_eval.store import get_engine
from agent_eval.store.queries import resolve_run_id

__all__ = ["rerun_flow", "rescore_flow"]


@flow(name="agent-eval-rerun", log_prints=False, on_cancellation=[on_cancelled], on_crashed=[on_crashed])
async def rerun_flow(request: RerunRequest) -> Any:
    """Evaluate a stored run's cases (all, or only the failed / errored ones) again with the same agent and
    config; invocations already cached are reused unless `refresh`. Stored as a new run linked to the source."""
    plan = handed_over(request)
    if plan is None:  # a deployment's run: its source run may be named by a prefix
        request = _by_whole_id(request)
        plan = plan_rerun(request)
    return await run_plan(plan, source_run_id=request.run_id)


@flow(name="agent-eval-rescore", log_prints=False, on_cancellation=[on_cancelled], on_crashed=[on_crashed])
async def rescore_flow(request: RescoreRequest) -> Any:
    """Score a stored run's recorded invocations with a new or changed config, without invoking the agent.
    Stored as a new run linked to the source."""
    plan = handed_over(request)
    if plan is None:
        request = _by_whole_id(request)
        plan = plan_rescore(request)
    return await run_plan(plan, source_run_id=request.run_id)


StoredRunRequest = TypeVar("StoredRunRequest", RerunRequest, RescoreRequest)


def _by_whole_id(request: StoredRunRequest) -> StoredRunRequest:
    """The request with its run named by its whole id (`resolve_run_id`: a unique prefix of 6 characters or more
    names one run), as the API passes it; a flow run started from a deployment or the UI may give a prefix.

    Raises:
        RunNotFoundError: no such run; EvalInputError: an ambiguous or too short prefix.
    """
    return request.model_copy(update={"run_id": resolve_run_id(request.run_id, get_engine(request.db_url))})
