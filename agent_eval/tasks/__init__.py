"""Thin Prefect tasks over the plain functions: start a run, invoke one case run, score one criterion, complete
a run in the store.

Internal: the public API is `agent_eval`'s; this package's names may change between releases.
"""

from __future__ import annotations

from collections.abc import Awaitable
from datetime import UTC, datetime
from functools import cache
from typing import Any, TypeVar, cast

from prefect import Task, task
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import State, TaskRun
from prefect.context import TaskRunContext
from prefect.runtime import task_run
from prefect.tasks import exponential_backoff
from prefect.utilities.annotations import quote

from agent_eval.agents import (
    Agent,
    AgentFailure,
    describe_error,
    error_kind_of,
    format_traceback,
    is_transient,
    note_rate_limit,
    run_agent_case,
)
from agent_eval.metrics import MetricSpec, score_criterion
from agent_eval.metrics.judged.policy import gated_judge_calls
from agent_eval.plan.eval_plan import CaseRunKey
from agent_eval.results.model import CaseResult, MetricResult, RunReport
from agent_eval.runtime.ratelimit import rate_limit_of
from agent_eval.schema import AgentRun, CacheOrigin, EvalCase, EvalMetric, EvalSet, JudgeConfig, content_hash
from agent_eval.secrets import redact_text
from agent_eval.store import RunCreate, complete_run, get_engine, record_case_results, start_run
from agent_eval.tasks.limits import Slot

__all__ = [
    "CACHE_VERSION",
    "INVOKE_RETRIES",
    "invocation_cache_key",
    "invoke_case",
    "invoke_case_run",
    "persist_part",
    "persist_report",
    "record_run_start",
    "run_of_outcome",
    "score_metric",
    "unvisited",
]

T = TypeVar("T")

CACHE_VERSION = "2"
"""Bumped when `AgentRun` changes shape, so old cached invocations are not read back."""

INVOKE_RETRIES = 3


def unvisited(value: T) -> T:
    """A task argument Prefect passes as it is, without walking it for futures and states (`quote`).

    Prefect visits every argument of every task call recursively, pydantic models field by field: for an
    agent object, a plan or a list of every case run, that walk cost more than the task itself (~40 ms per
    case run at 300 cases). Our arguments never hold futures, so nothing is lost.
    """
    return cast(T, quote(value))


def invocation_cache_key(_context: TaskRunContext, parameters: dict[str, Any]) -> str:
    """Agent fingerprint + eval set + case content hash + run index (never the origin): the same agent code on
    the same case and run index finds the same cache entry, across flow runs. Whether a found entry may be
    used is the flow's decision (`agent_eval.flows.evaluate`): within one evaluation always, from an earlier
    one only when asked."""
    agent: Agent = parameters["agent"]
    case: EvalCase = parameters["case"]
    return (
        f"agent-eval-invoke-v{CACHE_VERSION}-{agent.fingerprint}-{content_hash(parameters['eval_set_id'])[:12]}"
        f"-{content_hash(case)[:24]}-{parameters['run_index']}"
    )


def _retry_if_transient(_task: Task[..., Any], _task_run: TaskRun, state: State[Any]) -> bool:
    """Retry timeouts, 5xx and lost connections; never the agent's own failures, nor a rate limit (the invoke
    stage retries that after the provider's delay, with fewer case runs at once: `agent_eval.flows.case_limit`)."""
    # The engine calls this synchronously even for async tasks, where `result` would return a coroutine.
    error = state.result(raise_on_failure=False, _sync=True)  # type: ignore[call-overload]
    if not isinstance(error, BaseException) or isinstance(error, AgentFailure):
        return False
    return is_transient(error) and rate_limit_of(error) is None


@task(
    name="invoke-case",
    task_run_name="invoke {case.eval_id} #{run_index}",
    retries=INVOKE_RETRIES,
    retry_delay_seconds=exponential_backoff(backoff_factor=0.5),
    retry_jitter_factor=0.5,
    retry_condition_fn=_retry_if_transient,
    cache_key_fn=invocation_cache_key,
    persist_result=True,
    cache_result_in_memory=False,  # else Prefect's result store keeps the last 1,000 answers in memory
)
async def invoke_case(
    agent: Agent, case: EvalCase, eval_set_id: str, run_index: int, origin: CacheOrigin | None = None
) -> AgentRun:
    """Run the agent on one case (all turns, fresh session); returns the actual invocations, stamped with
    `origin` (the run invoking it, and when) so that a later reader of the cache knows where it came from.

    Raises `AgentFailure` (not retried, not cached) when the agent fails for good, and the transient error
    itself when it is worth retrying. `attempts` on the result counts this task's tries (1 + retries used).
    """
    attempts = max(1, int(task_run.run_count or 1))
    try:
        run = await run_agent_case(agent, case, eval_set_id, run_index)
    except AgentFailure as failure:
        failure.run.attempts = attempts
        raise
    stamp = (origin or CacheOrigin()).model_copy(update={"invoked_at": datetime.now(UTC)})
    return run.model_copy(update={"attempts": attempts, "cached_from": stamp})


async def invoke_case_run(agent: Agent, key: CaseRunKey, origin: CacheOrigin, *, refresh: bool) -> AgentRun:
    """One `invoke-case` task run in this process (`refresh`: write the cache without reading it), as the
    `AgentRun` it produced: a failed one, carrying the error, when the task failed."""
    task = _refreshing_invoke_case() if refresh else invoke_case
    call = task(unvisited(agent), unvisited(key.case), key.eval_set_id, key.run_index, origin, return_state=True)
    # An async task called with return_state=True gives a coroutine of its final state.
    state = await cast(Awaitable[State[AgentRun]], call)
    return run_of_outcome(await state.aresult(raise_on_failure=False), key)


@cache
def _refreshing_invoke_case() -> Task[..., Any]:
    """`invoke-case` that writes the cache without reading it, made once: `with_options` builds a new task,
    which reads the function's source again (~3 ms a case run)."""
    return invoke_case.with_options(refresh_cache=True)


def run_of_outcome(outcome: object, key: CaseRunKey) -> AgentRun:
    """What an `invoke-case` task run ended with as an `AgentRun`: its result, or a failed run carrying the error
    it failed with (`AgentFailure`: the agent's own failure; anything else used all its retries)."""
    if isinstance(outcome, AgentRun):
        return outcome
    if isinstance(outcome, AgentFailure):
        return outcome.run
    if not isinstance(outcome, BaseException):
        outcome = RuntimeError(str(outcome))
    kind = error_kind_of(outcome)
    run = AgentRun(
        eval_set_id=key.eval_set_id,
        eval_id=key.case.eval_id,
        run_index=key.run_index,
        error=redact_text(describe_error(outcome)),
        error_kind=kind,
        error_traceback=redact_text(format_traceback(outcome)),
        attempts=1 if kind == "rate_limit" else INVOKE_RETRIES + 1,
    )
    note_rate_limit(run, outcome)
    return run


@task(name="score-criterion", task_run_name="score {eval_metric.metric_name}", cache_policy=NO_CACHE)
async def score_metric(
    spec: MetricSpec,
    eval_metric: EvalMetric,
    runs: list[tuple[EvalCase, AgentRun]],
    judge: JudgeConfig | None = None,
    judge_calls: Slot | None = None,
) -> list[MetricResult]:
    """One criterion over every case run, its judges retrying as the config's `judge` section says and each of
    their calls holding `judge_calls` (the run's global limits on judge calls); returns one `MetricResult` per
    case run, in order (errors recorded)."""
    with gated_judge_calls(judge_calls):
        return await score_criterion(spec, eval_metric, runs, judge=judge)


@task(name="start-run", cache_policy=NO_CACHE)
def record_run_start(run: RunCreate, eval_sets: list[EvalSet], db_url: str | None) -> str:
    """Insert the run with status `running` and the eval set versions it evaluates; returns the run id."""
    return start_run(run, eval_sets, get_engine(db_url))


@task(name="persist-run", cache_policy=NO_CACHE)
def persist_report(report: RunReport, db_url: str | None, cases_stored: bool = False) -> str:
    """Complete the run in one transaction: final case statuses, metric results, summary (with `cases_stored`,
    the summary only: `persist_part` stored the rest); returns the run id."""
    return complete_run(report, get_engine(db_url), cases_stored=cases_stored)


@task(name="persist-part", cache_policy=NO_CACHE)
def persist_part(run_id: str, cases: list[CaseResult], db_url: str | None) -> int:
    """Store a part's case runs with their final status and metric results in one transaction (a plan evaluated
    a part at a time, `EvalPlan.parts`); returns how many."""
    record_case_results(run_id, cases, get_engine(db_url))
    return len(cases)
