"""The Python API: `evaluate`, `rerun` and `rescore` run the same Prefect flows as the CLI; `aevaluate`,
`arerun` and `arescore` are their async forms."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from agent_eval.errors import EvalInputError
from agent_eval.io import InputFormat
from agent_eval.io.files import check_paths_exist
from agent_eval.io.recorded import RECORDED_FORMATS, RecordedFormat, RecordedSource, detect_recorded_format
from agent_eval.plan.budget import check_budget
from agent_eval.plan.eval_plan import EvalPlan, EvalRequest, HandOver, prepare
from agent_eval.plan.stored import RerunRequest, RescoreRequest, plan_rerun, plan_rescore
from agent_eval.results.estimate import CostEstimate
from agent_eval.results.model import RunReport
from agent_eval.runtime.server import flow_server
from agent_eval.schema import EvalConfig
from agent_eval.settings import DEFAULT_MAX_CONCURRENCY, DEFAULT_TURN_TIMEOUT_SECONDS, home_dir
from agent_eval.store import check_store, default_db_url, shown_url
from agent_eval.store.queries import RunNotFoundError, resolve_run_id

__all__ = ["aevaluate", "arerun", "arescore", "estimate", "evaluate", "rerun", "rescore", "run_sync"]

T = TypeVar("T")


def evaluate(
    dataset_or_paths: Any,
    agent: str | None = None,
    config: str | Path | EvalConfig | dict[str, Any] | None = None,
    *,
    format: InputFormat | RecordedFormat = "auto",
    num_runs: int = 1,
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
    db_url: str | None = None,
    refresh_cache: bool = False,
    reuse_max_age_hours: float | None = None,
    turn_timeout_seconds: float | None = DEFAULT_TURN_TIMEOUT_SECONDS,
    tags: Sequence[str] = (),
    baseline_run_id: str | None = None,
    shards: int = 1,
    concurrency_limits: Sequence[str] = (),
    dask_address: str | None = None,
    recorded: RecordedSource | None = None,
    budget_usd: float | None = None,
    max_tokens: int | None = None,
) -> RunReport:
    """Evaluate an agent on eval files through the `agent-eval` flow and persist the run.

    Works from plain code and from a running event loop (a Jupyter cell): there the flow runs on a loop of its
    own in a worker thread; in async code prefer `await aevaluate(...)`.

    Args:
        dataset_or_paths: eval files, folders or globs (`FILE:case1,case2` selects cases), or a pandas
            DataFrame with Vertex AI columns (`prompt`, `reference`, `reference_trajectory`, and `response` /
            `predicted_trajectory` to score rows as they are).
        agent: agent reference ('package.module:attr', 'file.py:attr', an agent folder, 'replay'); default:
            replay when every case holds its predictions, else the `agent.py` beside the eval files.
        config: an ADK `test_config.json` path, an `EvalConfig` or its dict; default: the `test_config.json`
            beside the eval files, else ADK's defaults.
        format: `auto` (detect from content), `adk` or `vertex`; `otel` or `adk-session`: the paths are recorded
            traffic (span files, ADK session JSON), scored as it is with no agent call.
        num_runs: runs per case.
        max_concurrency: agent invocations at once.
        db_url: store URL; default `$AGENT_EVAL_DB_URL` or the SQLite file.
        refresh_cache: invoke the agent even where a cached run exists.
        reuse_max_age_hours: reuse the agent's answers from earlier evaluations no older than this; default
            None: every evaluation invokes the agent (retries and resumes of this one still reuse its answers).
        turn_timeout_seconds: seconds one agent turn may take before it is interrupted (and retried).
        tags: labels stored with the run.
        baseline_run_id: compare with this run, or the run whose id starts with this prefix of at least 6
            characters (default: the latest comparable completed run).
        shards: split the invocations into this many flow runs of the shard deployment on its work pool
            (`agent_eval.flows.shard`); 1 invokes in this process.
        concurrency_limits: Prefect global concurrency limits of which every invocation holds one slot.
        dask_address: invoke the agent on the Dask cluster whose scheduler listens here (`tcp://HOST:8786`,
            `agent_eval.tasks.dask`); default `$AGENT_EVAL_DASK_ADDRESS`, unset: in this process.
        recorded: recorded traffic to score, with its filters (`RecordedSource`: a session database, time
            range, sample...); `dataset_or_paths` then names eval files that give references by case id.
        budget_usd: the most the run may spend on agent and judge calls, in US dollars (default: the config's
            `budget`): once reached no new call starts, the calls in flight finish, and the run ends `stopped`
            with the case runs it did not start not evaluated (`agent_eval.results.budget`).
        max_tokens: the same cap in tokens (input, output and thinking).

    Returns:
        The run report (also persisted in the store).

    Raises:
        EvalInputError: bad input (files, config, agent reference, store URL, an unknown, ambiguous or too short
            baseline run id), found before anything runs.
        InfrastructureError: the store or the agent's server cannot be reached; nothing is run or stored.
    """
    request = _with_stored_baseline(_eval_request(**_arguments(locals())))
    return run_sync(_evaluate_plan(request, _checked_plan(request)))


def estimate(
    dataset_or_paths: Any,
    agent: str | None = None,
    config: str | Path | EvalConfig | dict[str, Any] | None = None,
    *,
    format: InputFormat = "auto",
    num_runs: int = 1,
    db_url: str | None = None,
) -> CostEstimate:
    """What `evaluate` with these arguments would cost, projected from the store's last comparable run: tokens
    and dollars of the agent and the judges, with a range (`agent_eval.results.estimate` has the rules).

    Calls no agent and no judge and starts no Prefect server: it loads and checks the inputs as `evaluate` does,
    then reads the store. With no earlier run to learn from, the estimate says what it cannot know.

    Raises:
        EvalInputError: bad input, as `evaluate` raises it; recorded traffic (scoring it calls no agent).
        InfrastructureError: the store cannot be reached.
    """
    from agent_eval.plan.estimate import estimate_plan

    request = _eval_request(dataset_or_paths, config, (), agent=agent, format=format, num_runs=num_runs, db_url=db_url)
    if request.recorded is not None:
        raise EvalInputError("recorded traffic calls no agent: there is nothing to estimate", field="--estimate")
    return estimate_plan(_checked_plan(request))


async def aevaluate(
    dataset_or_paths: Any,
    agent: str | None = None,
    config: str | Path | EvalConfig | dict[str, Any] | None = None,
    *,
    format: InputFormat | RecordedFormat = "auto",
    num_runs: int = 1,
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
    db_url: str | None = None,
    refresh_cache: bool = False,
    reuse_max_age_hours: float | None = None,
    turn_timeout_seconds: float | None = DEFAULT_TURN_TIMEOUT_SECONDS,
    tags: Sequence[str] = (),
    baseline_run_id: str | None = None,
    shards: int = 1,
    concurrency_limits: Sequence[str] = (),
    dask_address: str | None = None,
    recorded: RecordedSource | None = None,
    budget_usd: float | None = None,
    max_tokens: int | None = None,
) -> RunReport:
    """`evaluate` for async code: the flow runs on the caller's event loop. Loading and checking the inputs
    (files, config, the agent's import, the store) happens first and blocks the loop briefly.

    Arguments, result and errors as `evaluate`.
    """
    request = _with_stored_baseline(_eval_request(**_arguments(locals())))
    return await _evaluate_plan(request, _checked_plan(request))


def rerun(
    run_id: str,
    *,
    only_failed: bool = False,
    refresh: bool = False,
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
    db_url: str | None = None,
    budget_usd: float | None = None,
    max_tokens: int | None = None,
) -> RunReport:
    """Evaluate a stored run's cases again (all, or with `only_failed` those without a passing result: failed,
    not evaluated, or never run) with the same agent and config, through the `agent-eval-rerun` flow; the
    answers that run got (its own or those it reused) come from the cache unless `refresh`. `run_id` may be a
    unique prefix of at least 6 characters of the run's id. `budget_usd` and `max_tokens` cap its spend as
    `evaluate`'s do (a run stopped by its budget is finished this way, with a new budget).

    Raises:
        EvalInputError: no such run (or an ambiguous or too short prefix), or nothing to run again.
    """
    return run_sync(arerun(**_arguments(locals())))


async def arerun(
    run_id: str,
    *,
    only_failed: bool = False,
    refresh: bool = False,
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
    db_url: str | None = None,
    budget_usd: float | None = None,
    max_tokens: int | None = None,
) -> RunReport:
    """`rerun` for async code (arguments, result and errors as `rerun`)."""
    request = RerunRequest(
        run_id=_stored_run_id(run_id, db_url),
        only_failed=only_failed,
        refresh=refresh,
        max_concurrency=max_concurrency,
        db_url=db_url,
        budget_usd=budget_usd,
        max_tokens=max_tokens,
    )
    plan = plan_rerun(request)
    check_budget(plan)
    plan = await plan.checked_agent()
    from agent_eval.flows import rerun_flow

    with flow_server(), HandOver(plan, request):
        del plan  # the flow takes it over
        return await _report_of(await rerun_flow(request, return_state=True))


def rescore(
    run_id: str, config: str | Path | EvalConfig | dict[str, Any] | None = None, *, db_url: str | None = None
) -> RunReport:
    """Score a stored run's recorded invocations with `config` (default: its own) through the
    `agent-eval-rescore` flow, without invoking the agent; stored as a new run linked to the source. `run_id`
    may be a unique prefix of at least 6 characters of the run's id.

    Raises:
        EvalInputError: no such run (or an ambiguous or too short prefix), or a bad config.
    """
    return run_sync(arescore(run_id, config, db_url=db_url))


async def arescore(
    run_id: str, config: str | Path | EvalConfig | dict[str, Any] | None = None, *, db_url: str | None = None
) -> RunReport:
    """`rescore` for async code (arguments, result and errors as `rescore`)."""
    request = RescoreRequest(run_id=_stored_run_id(run_id, db_url), config=_config(config), db_url=db_url)
    plan = plan_rescore(request)
    from agent_eval.flows import rescore_flow

    with flow_server(), HandOver(plan, request):
        del plan  # the flow takes it over
        return await _report_of(await rescore_flow(request, return_state=True))


def run_sync(call: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to its end from sync code: on this thread when no event loop runs here, else (a Jupyter
    cell, an async application) on a fresh loop in a worker thread, waiting for it."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(call)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="agent-eval") as pool:
        return pool.submit(asyncio.run, call).result()


def _stored_run_id(run_id: str, db_url: str | None) -> str:
    """The full id of the stored run that `run_id` names (`resolve_run_id`: the id, or a unique prefix of it),
    the store checked first; a store not created yet has no run (and is not created).

    Raises:
        EvalInputError: no such run (`RunNotFoundError`), an ambiguous or too short prefix, a bad store URL.
        InfrastructureError: the store cannot be reached.
    """
    engine = check_store(db_url)
    if engine is None:
        raise RunNotFoundError(run_id, shown_url(db_url or default_db_url()))
    return resolve_run_id(run_id, engine)


def _with_stored_baseline(request: EvalRequest) -> EvalRequest:
    """The request with the full id of its pinned baseline run, if any (`_stored_run_id`)."""
    if request.baseline_run_id is None:
        return request
    return request.model_copy(update={"baseline_run_id": _stored_run_id(request.baseline_run_id, request.db_url)})


def _arguments(scope: dict[str, Any]) -> dict[str, Any]:
    """`evaluate`'s arguments as `_eval_request` takes them."""
    return {name: value for name, value in scope.items() if not name.startswith("_")}


def _eval_request(
    dataset_or_paths: Any,
    config: str | Path | EvalConfig | dict[str, Any] | None,
    tags: Sequence[str],
    **fields: Any,
) -> EvalRequest:
    """The flow's request: paths as strings (a DataFrame written to a file), the config as its dict."""
    paths = _paths(dataset_or_paths)
    check_paths_exist(paths)  # a typo answers in well under a second
    limits = list(fields.pop("concurrency_limits", ()))
    recorded = fields.pop("recorded", None)
    if recorded is None and _is_recorded(paths, fields["format"]):
        recorded = RecordedSource(paths=paths, format=None if fields["format"] == "auto" else fields["format"])
        paths = []
    if recorded is not None:
        fields["format"] = "auto"
    return EvalRequest(
        paths=paths, config=_config(config), tags=list(tags), concurrency_limits=limits, recorded=recorded, **fields
    )


def _is_recorded(paths: list[str], format: str) -> bool:
    """Whether the paths are recorded traffic: said by the format, or (`auto`) every path's content."""
    if format in RECORDED_FORMATS:
        return True
    return format == "auto" and bool(paths) and all(detect_recorded_format(Path(p)) for p in paths)


def _checked_plan(request: EvalRequest) -> EvalPlan:
    """The store checked, then the inputs loaded and checked (a budget's prices too): bad input fails here, before
    Prefect starts."""
    check_store(request.db_url)
    plan = prepare(request)
    check_budget(plan)
    return plan


async def _evaluate_plan(request: EvalRequest, plan: EvalPlan) -> RunReport:
    """The agent's preflight check (a wrong app name or a dead server: one line, nothing stored), then the flow
    on its server."""
    plan = await plan.checked_agent()
    from agent_eval.flows import agent_eval_flow  # Prefect is imported only when a flow runs

    handover = HandOver(plan)
    del plan  # the flow takes it over: held here too, the eval sets would stay in memory after the flow freed them
    with flow_server(), handover:
        return await _report_of(await agent_eval_flow(request, return_state=True))


async def _report_of(state: Any) -> RunReport:
    """The flow's report, whether it ended Completed or Failed (a regression); its error otherwise."""
    outcome = await state.aresult(raise_on_failure=False)
    if isinstance(outcome, RunReport):
        return outcome
    if isinstance(outcome, BaseException):
        raise outcome
    raise RuntimeError(f"the flow ended {state.type.value} without a report: {state.message}")


def _paths(dataset_or_paths: Any) -> list[str]:
    """Paths as strings; a DataFrame is written once to a content-named JSONL file that the flow can read."""
    if isinstance(dataset_or_paths, str | Path):
        return [str(dataset_or_paths)]
    if hasattr(dataset_or_paths, "to_json") and hasattr(dataset_or_paths, "columns"):
        return [str(_dataframe_file(dataset_or_paths))]
    return [str(p) for p in dataset_or_paths]


def _dataframe_file(frame: Any) -> Path:
    text = frame.to_json(orient="records", lines=True, force_ascii=False)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    path = home_dir() / "datasets" / f"dataframe-{digest}.jsonl"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return path


def _config(config: str | Path | EvalConfig | dict[str, Any] | None) -> str | dict[str, Any] | None:
    if isinstance(config, EvalConfig):
        return dict(json.loads(config.model_dump_json(exclude_none=True)))
    if isinstance(config, Path):
        return str(config)
    return config
