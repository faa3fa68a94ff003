"""The `agent-eval` flow: load → start the run in the store → invoke (one task per case run, each case run
stored as it finishes) → score (one task per criterion) → aggregate → complete the run → summary artifact.

The run row is `running` from the start and `completed` only when the final transaction has written every
metric result; a flow that fails or is cancelled on the way marks it `crashed` (see `agent_eval.store`).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable
from datetime import UTC, datetime
from typing import Any, cast

from prefect import flow, get_run_logger
from prefect.artifacts import acreate_markdown_artifact, acreate_table_artifact
from prefect.client.schemas.objects import State
from prefect.context import FlowRunContext
from prefect.states import Completed, Failed

from agent_eval.agents import AgentFailure
from agent_eval.flows.regression import compare_with_baseline
from agent_eval.judge import close_judge_clients
from agent_eval.plan import CaseRunKey, EvalPlan, EvalRequest, prepare
from agent_eval.report.aggregate import build_report
from agent_eval.report.console import format_summary, summary_table_rows
from agent_eval.report.models import MetricResult, RunReport
from agent_eval.schema import AgentRun, EvalCase
from agent_eval.store import RunCreate, get_engine, mark_run_crashed, record_case_run
from agent_eval.store.provenance import agent_folder, deployment_name, git_commit
from agent_eval.tasks import INVOKE_RETRIES, invoke_case, persist_report, record_run_start, score_metric

__all__ = ["agent_eval_flow", "run_plan"]


@flow(name="agent-eval", log_prints=False)
async def agent_eval_flow(request: EvalRequest) -> Any:
    """Evaluate an agent on eval sets and persist the run as it goes; returns the `RunReport`.

    A case whose agent fails (after retries for transient errors) is recorded with failure=1 and its error;
    the other cases are still scored and everything is persisted. The run is then compared with its
    baseline (`request.baseline_run_id`, else the latest comparable run); on a regression the flow run ends
    Completed with a message saying so, or Failed when the config's `regression.fail_on_regression` is set,
    its data being the report either way.
    """
    return await run_plan(prepare(request), baseline_run_id=request.baseline_run_id)


async def run_plan(plan: EvalPlan, *, baseline_run_id: str | None = None, source_run_id: str | None = None) -> Any:
    """Run a checked plan: the store's run row, invocations, scores, the comparison, artifacts, final state."""
    run = _new_run(plan, source_run_id)
    record_run_start(run, plan.eval_sets, plan.request.db_url)
    try:
        report = await _evaluate(plan, run)
    except BaseException:
        _mark_crashed(run.id, plan.request.db_url)
        raise
    report = compare_with_baseline(plan, report, baseline_run_id, _flow_run_url())
    await _publish(report)
    return _final_state(plan, report)


def _final_state(plan: EvalPlan, report: RunReport) -> Any:
    """The report itself, or on a regression a Completed (or Failed, if asked) state that says so."""
    if not report.regressed:
        return report
    regressed = ", ".join((report.regression or {}).get("regressed_metrics") or []) or "cases flipped to failing"
    message = f"regression against run {(report.regression or {}).get('baseline_run_id')}: {regressed}"
    settings = plan.config.regression
    if settings is not None and settings.fail_on_regression:
        return Failed(message=message, data=report)
    return Completed(message=message, data=report)


def _mark_crashed(run_id: str, db_url: str | None) -> None:
    """Best effort: the error that stopped the flow matters more than one that stops this write."""
    try:
        mark_run_crashed(run_id, get_engine(db_url))
    except Exception as error:
        get_run_logger().warning("could not mark run %s crashed: %s", run_id, error)


async def _evaluate(plan: EvalPlan, run: RunCreate) -> RunReport:
    """Invoke, score, aggregate, and complete the run in the store."""
    runs = await _invoke_all(plan, run.id)
    metric_results = await _score_all(plan, runs)
    report = build_report(
        run_id=run.id,
        runs=runs,
        metric_results=metric_results,
        config=plan.config,
        eval_set_ids=run.eval_set_ids,
        agent_reference=run.agent_reference,
        agent_fingerprint=run.agent_fingerprint,
        num_runs=run.num_runs,
        started_at=run.started_at,
        completed_at=datetime.now(UTC),
        flow_run_id=run.flow_run_id,
        source_run_id=run.source_run_id,
    )
    persist_report(report, plan.request.db_url)
    return report


def _new_run(plan: EvalPlan, source_run_id: str | None) -> RunCreate:
    """The run row as the flow starts it: what is evaluated, with what, from where."""
    started_at = datetime.now(UTC)
    return RunCreate(
        id=uuid.uuid4().hex,
        flow_run_id=_flow_run_id(),
        deployment_name=deployment_name(),
        agent_reference=plan.agent.reference,
        agent_fingerprint=plan.agent.fingerprint,
        git_commit=git_commit(agent_folder(plan.agent.reference)),
        config=plan.config.model_dump(mode="json", exclude_none=True),
        config_hash=plan.config.fingerprint(),
        eval_set_ids=[s.eval_set_id for s in plan.eval_sets],
        num_runs=plan.request.num_runs,
        started_at=started_at,
        updated_at=started_at,
        tags=plan.request.tags,
        source_run_id=source_run_id,
    )


async def _invoke_all(plan: EvalPlan, run_id: str) -> list[tuple[EvalCase, AgentRun]]:
    """Every case run, at most `max_concurrency` at once, in plan order; each stored as soon as it is done."""
    limit = asyncio.Semaphore(plan.request.max_concurrency)
    invoke = invoke_case.with_options(refresh_cache=True) if plan.request.refresh_cache else invoke_case
    engine = get_engine(plan.request.db_url)

    async def one(key: CaseRunKey) -> tuple[EvalCase, AgentRun]:
        async with limit:
            # An async task called with return_state=True gives a coroutine of its final state.
            call = invoke(plan.agent, key.case, key.eval_set_id, key.run_index, return_state=True)
            state = await cast(Awaitable[State[AgentRun]], call)
        run = await _run_from_state(state, key)
        await asyncio.to_thread(record_case_run, run_id, run, engine)
        return key.case, run

    return list(await asyncio.gather(*(one(key) for key in plan.case_runs())))


async def _run_from_state(state: State[AgentRun], key: CaseRunKey) -> AgentRun:
    """The task's `AgentRun`, or a failed one carrying the error when the task failed."""
    outcome = await state.aresult(raise_on_failure=False)
    if isinstance(outcome, AgentRun):
        return outcome
    if isinstance(outcome, AgentFailure):
        return outcome.run
    error = f"{type(outcome).__name__}: {outcome}" if isinstance(outcome, BaseException) else str(outcome)
    attempts = INVOKE_RETRIES + 1  # a task that fails with anything but AgentFailure used all its retries
    return AgentRun(
        eval_set_id=key.eval_set_id, eval_id=key.case.eval_id, run_index=key.run_index, error=error, attempts=attempts
    )


async def _score_all(plan: EvalPlan, runs: list[tuple[EvalCase, AgentRun]]) -> list[MetricResult]:
    """One scoring task per criterion, all criteria at once."""
    try:
        batches = await asyncio.gather(*(score_metric(spec, metric, runs) for metric, spec in plan.metrics))
    finally:
        await close_judge_clients()  # judges share connections per event loop: release them with the run
    return [result for batch in batches for result in batch]


async def _publish(report: RunReport) -> None:
    """The summary to the flow's log, a markdown artifact and a per-case table artifact."""
    summary = format_summary(report)
    get_run_logger().info("%s", summary)
    key = "agent-eval-" + "-".join(report.eval_set_ids)[:40].lower().replace("_", "-").replace(".", "-")
    await acreate_markdown_artifact(
        markdown=f"```\n{summary}\n```", key=_artifact_key(key), description="agent-eval run summary"
    )
    rows: list[dict[str, Any]] = summary_table_rows(report)
    await acreate_table_artifact(table=rows, key=_artifact_key(key + "-cases"), description="agent-eval cases")


def _artifact_key(raw: str) -> str:
    """Artifact keys allow lowercase letters, digits and dashes only."""
    return "".join(ch if ch.isalnum() or ch == "-" else "-" for ch in raw.lower()).strip("-")[:60]


def _flow_run_url() -> str | None:
    """The flow run's page in the Prefect UI, when there is a UI."""
    from prefect.runtime import flow_run

    url = flow_run.ui_url
    return str(url) if url else None


def _flow_run_id() -> str | None:
    context = FlowRunContext.get()
    return str(context.flow_run.id) if context and context.flow_run else None
