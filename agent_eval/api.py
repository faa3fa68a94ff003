"""The Python API: `evaluate` runs the same Prefect flow as the CLI."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Awaitable, Sequence
from pathlib import Path
from typing import Any

from agent_eval.agents import preflight_agent
from agent_eval.io import InputFormat
from agent_eval.plan import DEFAULT_MAX_CONCURRENCY, DEFAULT_TURN_TIMEOUT_SECONDS, EvalRequest, prepare
from agent_eval.report.models import RunReport
from agent_eval.schema import EvalConfig
from agent_eval.settings import home_dir
from agent_eval.store import check_store
from agent_eval.stored_plans import RerunRequest, RescoreRequest, plan_rerun, plan_rescore

__all__ = ["evaluate", "rerun", "rescore"]


def evaluate(
    dataset_or_paths: Any,
    agent: str | None = None,
    config: str | Path | EvalConfig | dict[str, Any] | None = None,
    *,
    format: InputFormat = "auto",
    num_runs: int = 1,
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
    db_url: str | None = None,
    refresh_cache: bool = False,
    reuse_max_age_hours: float | None = None,
    turn_timeout_seconds: float | None = DEFAULT_TURN_TIMEOUT_SECONDS,
    tags: Sequence[str] = (),
    baseline_run_id: str | None = None,
) -> RunReport:
    """Evaluate an agent on eval files through the `agent-eval` flow and persist the run.

    Args:
        dataset_or_paths: eval files, folders or globs (`FILE:case1,case2` selects cases), or a pandas
            DataFrame with Vertex AI columns (`prompt`, `reference`, `reference_trajectory`, and `response` /
            `predicted_trajectory` to score rows as they are).
        agent: agent reference ('package.module:attr', 'file.py:attr', an agent folder, 'replay'); default:
            replay when every case holds its predictions, else the `agent.py` beside the eval files.
        config: an ADK `test_config.json` path, an `EvalConfig` or its dict; default: the `test_config.json`
            beside the eval files, else ADK's defaults.
        format: `auto` (detect from content), `adk` or `vertex`.
        num_runs: runs per case.
        max_concurrency: agent invocations at once.
        db_url: store URL; default `$AGENT_EVAL_DB_URL` or the SQLite file.
        refresh_cache: invoke the agent even where a cached run exists.
        reuse_max_age_hours: reuse the agent's answers from earlier evaluations no older than this; default
            None: every evaluation invokes the agent (retries and resumes of this one still reuse its answers).
        turn_timeout_seconds: seconds one agent turn may take before it is interrupted (and retried).
        tags: labels stored with the run.
        baseline_run_id: compare with this run (default: the latest comparable completed run).

    Returns:
        The run report (also persisted in the store).

    Raises:
        EvalInputError: bad input (files, config, agent reference, store URL), found before anything runs.
        InfrastructureError: the store or the agent's server cannot be reached; nothing is run or stored.
    """
    check_store(db_url)
    request = EvalRequest(
        paths=_paths(dataset_or_paths),
        format=format,
        agent=agent,
        config=_config(config),
        num_runs=num_runs,
        max_concurrency=max_concurrency,
        db_url=db_url,
        refresh_cache=refresh_cache,
        reuse_max_age_hours=reuse_max_age_hours,
        turn_timeout_seconds=turn_timeout_seconds,
        tags=list(tags),
        baseline_run_id=baseline_run_id,
    )
    plan = prepare(request)  # bad input fails here, before Prefect starts
    _run_flow(preflight_agent(plan.agent))  # so does a wrong app name or an agent server that is down
    from agent_eval.flows import agent_eval_flow  # Prefect is imported only when a flow runs

    return _report_of(_run_flow(agent_eval_flow(request, return_state=True)))


def rerun(
    run_id: str,
    *,
    only_failed: bool = False,
    refresh: bool = False,
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
    db_url: str | None = None,
) -> RunReport:
    """Evaluate a stored run's cases again (all, or with `only_failed` those without a passing result: failed,
    not evaluated, or never run) with the same agent and config, through the `agent-eval-rerun` flow; the
    answers that run got (its own or those it reused) come from the cache unless `refresh`.

    Raises:
        EvalInputError: no such run, or nothing to run again.
    """
    check_store(db_url)
    request = RerunRequest(
        run_id=run_id, only_failed=only_failed, refresh=refresh, max_concurrency=max_concurrency, db_url=db_url
    )
    _run_flow(preflight_agent(plan_rerun(request).agent))
    from agent_eval.flows import rerun_flow

    return _report_of(_run_flow(rerun_flow(request, return_state=True)))


def rescore(
    run_id: str, config: str | Path | EvalConfig | dict[str, Any] | None = None, *, db_url: str | None = None
) -> RunReport:
    """Score a stored run's recorded invocations with `config` (default: its own) through the
    `agent-eval-rescore` flow, without invoking the agent; stored as a new run linked to the source.

    Raises:
        EvalInputError: no such run, or a bad config.
    """
    check_store(db_url)
    request = RescoreRequest(run_id=run_id, config=_config(config), db_url=db_url)
    plan_rescore(request)
    from agent_eval.flows import rescore_flow

    return _report_of(_run_flow(rescore_flow(request, return_state=True)))


def _run_flow(call: Awaitable[Any]) -> Any:
    """Run an async flow call to its end, from sync code."""

    async def finish() -> Any:
        return await call

    return asyncio.run(finish())


def _report_of(state: Any) -> RunReport:
    """The flow's report, whether it ended Completed or Failed (a regression); its error otherwise."""
    outcome = state.result(raise_on_failure=False)
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
