"""The `agent-eval` flow: load → start the run in the store → invoke (one task per case run, each case run
stored as it finishes) → score (one task per criterion) → aggregate → complete the run → summary artifact.

The run row is `running` from the start and `completed` only when the final transaction has written every
metric result; a flow that fails or is cancelled on the way marks it `crashed` (see `agent_eval.store`).
"""

from __future__ import annotations

import asyncio
import os
import pickle
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import acreate_markdown_artifact, acreate_table_artifact
from prefect.context import FlowRunContext
from prefect.states import Completed, Failed

from agent_eval.flows.case_limit import CaseRunLimit
from agent_eval.flows.invoke import ReusePolicy, current_flow_run_id, invoke_all
from agent_eval.flows.lifecycle import CANCELLED_RUNS, on_cancelled, on_crashed, tracked
from agent_eval.flows.regression import alert_outage, compare_with_baseline
from agent_eval.flows.shard import check_shard_deployment, invoke_sharded
from agent_eval.judges.gate import gate_results, uncalibrated_judges
from agent_eval.metrics import MetricSpec
from agent_eval.metrics.judged import close_judge_clients
from agent_eval.metrics.judged.policy import judge_totals, start_judge_limiter_at
from agent_eval.metrics.response import STEMMING_METRICS, preload_stemmer
from agent_eval.plan.budget import check_budget, spend_of
from agent_eval.plan.estimate import estimate_plan
from agent_eval.plan.eval_plan import EvalPlan, EvalRequest, prepared
from agent_eval.render.console import format_summary, summary_table_rows
from agent_eval.render.estimate import estimate_lines
from agent_eval.results.aggregate import build_report, case_results
from agent_eval.results.budget import Spend, active_spend, spending
from agent_eval.results.estimate import CostEstimate
from agent_eval.results.model import CaseResult, MetricResult, RunReport
from agent_eval.results.outage import outage_error
from agent_eval.runtime.progress import current_progress
from agent_eval.schema import AgentRun, EvalCase, EvalMetric, JudgeConfig
from agent_eval.secrets import redact_config
from agent_eval.store import RunCreate, RunStatus, end_run, get_engine, settled_limits, this_host
from agent_eval.store.engine import default_db_url, shown_url
from agent_eval.store.provenance import agent_folder, deployment_name, git_commit
from agent_eval.tasks import persist_part, persist_report, record_run_start, score_metric, unvisited
from agent_eval.tasks.dask import check_dask, dask_address
from agent_eval.tasks.limits import RunLimits, Slot

__all__ = ["agent_eval_flow", "run_plan"]


@flow(name="agent-eval", log_prints=False, on_cancellation=[on_cancelled], on_crashed=[on_crashed])
async def agent_eval_flow(request: EvalRequest) -> Any:
    """Evaluate an agent on eval sets and persist the run as it goes; returns the `RunReport`.

    A case whose agent fails (after retries for transient errors) is recorded with failure=1 and its error;
    the other cases are still scored and everything is persisted. The run is then compared with its
    baseline (`request.baseline_run_id`, else the latest comparable run); on a regression the flow run ends
    Completed with a message saying so, or Failed when the config's `regression.fail_on_regression` is set,
    its data being the report either way. With `request.estimate` nothing is run: it returns the projected
    cost (`agent_eval.results.estimate.CostEstimate`), also logged and kept as the `cost-estimate` artifact.
    """
    if request.estimate:
        return await _estimate(prepared(request))
    return await run_plan(prepared(request), baseline_run_id=request.baseline_run_id)


async def _estimate(plan: EvalPlan) -> CostEstimate:
    """`request.estimate`: the projected cost in the log and as the `cost-estimate` artifact; nothing is run."""
    estimate = estimate_plan(plan)
    lines = estimate_lines(estimate)
    get_run_logger().info("%s", "\n".join(lines))
    await acreate_markdown_artifact(key="cost-estimate", markdown="\n".join(f"- {line}" for line in lines))
    return estimate


async def run_plan(plan: EvalPlan, *, baseline_run_id: str | None = None, source_run_id: str | None = None) -> Any:
    """Run a checked plan: the agent's preflight check, the store's run row, invocations, scores, the
    comparison, artifacts, final state. An outage (see `agent_eval.results.outage`) is stored `errored` and
    not compared; the flow run then ends Failed with the report as its data. A run its budget stopped
    (`agent_eval.results.budget`) is stored `stopped` and not compared; its flow run ends Completed, saying so."""
    plan = await plan.checked_agent()  # a wrong app name or a dead server: one line, nothing stored
    check_budget(plan)  # a dollar budget with a judge model no price covers: the same
    await check_shard_deployment(plan.request)  # a missing shard deployment or global limit: the same
    if address := dask_address(plan.request.dask_address):
        await check_dask(address)  # no prefect-dask, or a Dask scheduler that does not answer: the same
    limits = await RunLimits.of(plan)
    _preload_for_scoring(plan)
    run = _new_run(plan, source_run_id)
    record_run_start(unvisited(run), unvisited(plan.eval_sets), plan.request.db_url)
    criteria = sum(len(group.metrics) for group in plan.config_groups())
    current_progress().start(
        run_id=run.id, ui_url=_flow_run_url(), case_runs=len(plan.case_runs()), criteria=criteria, notes=plan.notes
    )
    plan = plan.without_outline()  # stored: a recorded input's parts bring their own cases
    async with tracked(run.id, plan.request.db_url, run.flow_run_id):
        try:
            worker = f"parent-{run.flow_run_id or os.getpid()}"
            with spending(spend_of(plan, run.id, worker, shared=plan.request.shards > 1)):
                report = await _evaluate(plan, run, limits)
        except BaseException as error:
            _end_unfinished(run.id, plan.request.db_url, error)
            raise
    if report.errored:
        alert_outage(unvisited(plan), unvisited(report), _flow_run_url())
        await _publish(report)
        return Failed(message=report.error, data=report)
    if report.stopped:  # never compared: what it did not start says nothing of the agent
        await _publish(report)
        return Completed(message=f"stopped: {report.error}", data=report)
    report = compare_with_baseline(unvisited(plan), unvisited(report), baseline_run_id, _flow_run_url())
    await _publish(report)
    return _final_state(plan, report)


def _preload_for_scoring(plan: EvalPlan) -> None:
    """Start loading what the scores will need (NLTK's stemmer) while the agent is invoked."""
    names = {spec.name for group in plan.config_groups() for _, spec in group.metrics}
    if names & STEMMING_METRICS:
        preload_stemmer()


_EFFICIENCY_KINDS = {"cost_regressed": "cost per case run", "latency_regressed": "latency per turn"}


def _final_state(plan: EvalPlan, report: RunReport) -> Any:
    """The report itself, or on a regression a Completed (or Failed, if asked) state that says so."""
    if not report.regressed:
        return report
    payload = report.regression or {}
    kinds = [name for key, name in _EFFICIENCY_KINDS.items() if payload.get(key)]
    regressed = ", ".join([*(payload.get("regressed_metrics") or []), *kinds])
    message = f"regression against run {payload.get('baseline_run_id')}: {regressed or 'cases flipped to failing'}"
    settings = plan.config.regression
    if settings is not None and settings.fail_on_regression:
        return Failed(message=message, data=report)
    return Completed(message=message, data=report)


def _end_unfinished(run_id: str, db_url: str | None, error: BaseException) -> None:
    """End the run `cancelled` (the flow was cancelled) or `crashed` with its cause; best effort: the error
    that stopped the flow matters more than one that stops this write."""
    cancelled = isinstance(error, asyncio.CancelledError | KeyboardInterrupt)
    status = RunStatus.CANCELLED if cancelled else RunStatus.CRASHED
    try:
        if end_run(run_id, status, f"{type(error).__name__}: {error}".strip(": "), get_engine(db_url)) and cancelled:
            CANCELLED_RUNS.add(run_id)
    except Exception as write_error:
        get_run_logger().warning("could not mark run %s %s: %s", run_id, status, write_error)


async def _evaluate(plan: EvalPlan, run: RunCreate, limits: RunLimits) -> RunReport:
    """Invoke, score, aggregate, and complete the run in the store; invocations and judge calls hold `limits`.

    A plan in several parts (a large recorded input, `EvalPlan.parts`) is evaluated a part at a time: each
    part's case runs are stored with their scores as the part ends and kept as summaries, packed (`_pack`), for the
    report (the store has the rest: `report.parts`), so the input's turns are never all in memory at once."""
    judge_before = judge_totals().snapshot()
    case_limit = await _case_limit(plan, run)
    in_parts = plan.recorded is not None
    uncalibrated = _uncalibrated(plan, run)
    cases: list[CaseResult] = []
    packed: list[bytes] = []
    for part in plan.parts():
        part_cases = await _evaluate_part(part, run, limits, case_limit, stored=in_parts, uncalibrated=uncalibrated)
        if in_parts:
            packed.append(_pack(part_cases))
            _forget_task_results()
        else:
            cases = part_cases  # a plan not in parts is one part
        del part, part_cases  # before the next part is read: one part at a time in memory
    parts = len(packed) if in_parts else 1
    if in_parts:
        cases = _unpack(packed)
    report = build_report(
        run_id=run.id,
        cases=cases,
        config=plan.config,
        eval_set_ids=run.eval_set_ids,
        agent_reference=run.agent_reference,
        agent_fingerprint=run.agent_fingerprint,
        num_runs=run.num_runs,
        started_at=run.started_at,
        completed_at=datetime.now(UTC),
        flow_run_id=run.flow_run_id,
        source_run_id=run.source_run_id,
        judge_stats=judge_totals().since(judge_before),
        invocation_stats=case_limit.as_dict(),
    )
    # The stored (redacted, per-eval-set) config, so that report.json, HTML and result files match the store.
    update = {
        "config": run.config,
        "config_hash": run.config_hash,
        "notes": list(plan.notes),
        "parts": parts,
        "store": run.store_url,
        "judges": run.judges,
    }
    if uncalibrated:
        gated = {metric: reason for (_, metric), reason in uncalibrated.items()}
        update["summary"] = report.summary.model_copy(update={"uncalibrated_judges": gated})
    report = report.model_copy(update=update)
    outage = outage_error([case.agent_run for case in cases])
    if outage is not None:
        report = report.model_copy(update={"status": RunStatus.ERRORED, "error": outage})
    elif (spend := active_spend()) is not None and spend.stopped:
        report = report.model_copy(update={"status": RunStatus.STOPPED, "error": _stopped_by(spend, cases)})
    persist_report(unvisited(report), plan.request.db_url, cases_stored=in_parts)
    current_progress().finish()
    return report


def _stopped_by(spend: Spend, cases: Sequence[CaseResult]) -> str:
    """E.g. `budget of $0.50 reached: $0.5012 spent, 12 case runs not started` (the calls in flight when it was
    reached finished and count)."""
    not_started = sum(case.agent_run.not_started for case in cases)
    return f"{spend.stopped}: {spend.spent_text()}, {not_started} case runs not started"


def _uncalibrated(plan: EvalPlan, run: RunCreate) -> dict[tuple[str, str], str]:
    """The judged criteria of the run whose judge is not calibrated to the config's `judge.min_agreement`
    (`agent_eval.judges.gate`), with why; empty (no query) when no config sets a floor."""
    floors = plan.judge_floors()
    return uncalibrated_judges(run.judges or {}, floors, get_engine(plan.request.db_url)) if floors else {}


async def _case_limit(plan: EvalPlan, run: RunCreate) -> CaseRunLimit:
    """The limit on this run's case runs in flight, and the loop's judge limit, each started where the latest run
    of the same agent left it (`agent_eval.store.settled`)."""
    settled = await asyncio.to_thread(settled_limits, run.agent_reference, get_engine(plan.request.db_url))
    start_judge_limiter_at(settled.judge_calls)
    return CaseRunLimit(plan.request.max_concurrency, initial=settled.case_runs)


async def _evaluate_part(
    plan: EvalPlan,
    run: RunCreate,
    limits: RunLimits,
    case_limit: CaseRunLimit,
    *,
    stored: bool,
    uncalibrated: Mapping[tuple[str, str], str],
) -> list[CaseResult]:
    """The case results of one part of the plan, uncalibrated judges' results informational; `stored`: written to
    the store now, and returned as summaries (`CaseResult.summary_only`)."""
    runs = await _invoke(plan, run, limits, case_limit)
    scored = await _score_all(plan, runs, limits.judge_calls)
    cases = case_results(runs, gate_results(scored, uncalibrated) if uncalibrated else scored)
    if not stored:
        return cases
    persist_part(run.id, unvisited(cases), plan.request.db_url)
    return [case.summary_only() for case in cases]


def _pack(cases: Sequence[CaseResult]) -> bytes:
    """A part's case summaries as one pickle until the report needs them (`_unpack`): ~0.4 KB per case run instead
    of ~2.6 KB of small objects, which, made while a part's larger transient objects live, pinned the heap's pages
    and kept the process growing by ~6 KB per case run (measured at 100,000 spans). Pickled here, read here."""
    return pickle.dumps(list(cases), protocol=pickle.HIGHEST_PROTOCOL)


def _unpack(packed: list[bytes]) -> list[CaseResult]:
    """Every part's case summaries, in order; `packed` is emptied as it is read."""
    cases: list[CaseResult] = []
    while packed:
        cases.extend(pickle.loads(packed.pop(0)))  # our own pickle (`_pack`), never read from outside
    return cases


def _forget_task_results() -> None:
    """Drop this flow run's links from finished task results to their task runs (Prefect's
    `FlowRunContext.run_results`, a few entries per task run, kept until the flow ends). Prefect reads them to draw
    an edge to a task that takes such a result; every task here takes its inputs quoted (`unvisited`), so none is
    drawn, and a run of many parts would otherwise hold them for every case run."""
    context = FlowRunContext.get()
    if context is not None:
        context.run_results.clear()


async def _invoke(
    plan: EvalPlan, run: RunCreate, limits: RunLimits, case_limit: CaseRunLimit
) -> list[tuple[EvalCase, AgentRun]]:
    """Every case run of the plan (or part), each stored as it finishes: on shard flow runs when asked (each
    shard then has a limit of its own)."""
    if plan.request.shards > 1:
        runs = await invoke_sharded(plan, run.id)
        _stop_if_a_shard_stopped(runs)
        return runs
    policy = ReusePolicy.of(plan, run.id, run.flow_run_id)
    return await invoke_all(plan, policy, slot=limits.invocations, limit=case_limit)


def _stop_if_a_shard_stopped(runs: Sequence[tuple[EvalCase, AgentRun]]) -> None:
    """A shard that found the run's budget reached left case runs not started: the run stops here too (no judge
    call starts), for the reason the shard gave."""
    spend = active_spend()
    reasons = [run.error for _, run in runs if run.not_started and run.error]
    if spend is not None and reasons:
        spend.stop(reasons[0].removeprefix("not started: ").split(" (")[0])


def _new_run(plan: EvalPlan, source_run_id: str | None) -> RunCreate:
    """The run row as the flow starts it: what is evaluated, with what, from where."""
    started_at = datetime.now(UTC)
    return RunCreate(
        id=uuid.uuid4().hex,
        flow_run_id=current_flow_run_id(),
        deployment_name=deployment_name(),
        agent_reference=plan.agent.reference,
        agent_fingerprint=plan.agent.fingerprint,
        git_commit=git_commit(agent_folder(plan.agent.reference)),
        config=redact_config(plan.stored_config()),
        config_hash=plan.config_hash(),
        eval_set_ids=[s.eval_set_id for s in plan.eval_sets],
        num_runs=plan.request.num_runs,
        started_at=started_at,
        updated_at=started_at,
        tags=plan.request.tags,
        source_run_id=source_run_id,
        host=this_host(),
        pid=os.getpid(),
        store_url=shown_url(plan.request.db_url or default_db_url()),
        judges=plan.judges() or None,
    )


async def _score_all(
    plan: EvalPlan, runs: list[tuple[EvalCase, AgentRun]], judge_calls: Slot | None
) -> list[MetricResult]:
    """One scoring task per (config, criterion), all at once: each eval set's case runs are scored with its
    own config's criteria (`EvalPlan.scoring_batches`); every judge call holds `judge_calls`."""

    async def score(
        metric: EvalMetric, spec: MetricSpec, batch: list[tuple[EvalCase, AgentRun]], judge: JudgeConfig | None
    ) -> list[MetricResult]:
        results = await score_metric(
            unvisited(spec), unvisited(metric), unvisited(batch), unvisited(judge), unvisited(judge_calls)
        )
        current_progress().criterion_done(metric.metric_name)
        return results

    try:
        work = plan.scoring_batches(runs)
        batches = await asyncio.gather(*(score(metric, spec, batch, judge) for metric, spec, batch, judge in work))
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

    url = flow_run.ui_url  # "None/flow-runs/..." when the server has no UI (Prefect's temporary one)
    return str(url) if url and str(url).startswith("http") else None
