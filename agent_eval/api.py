"""The Python API: `evaluate` runs the same Prefect flow as the CLI."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent_eval.io import InputFormat
from agent_eval.plan import DEFAULT_MAX_CONCURRENCY, DEFAULT_TURN_TIMEOUT_SECONDS, EvalRequest, prepare
from agent_eval.report.models import RunReport
from agent_eval.schema import EvalConfig
from agent_eval.settings import home_dir

__all__ = ["evaluate"]


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
    turn_timeout_seconds: float | None = DEFAULT_TURN_TIMEOUT_SECONDS,
    tags: Sequence[str] = (),
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
        turn_timeout_seconds: seconds one agent turn may take before it is interrupted (and retried).
        tags: labels stored with the run.

    Returns:
        The run report (also persisted in the store).

    Raises:
        EvalInputError: bad input, found before anything runs.
    """
    request = EvalRequest(
        paths=_paths(dataset_or_paths),
        format=format,
        agent=agent,
        config=_config(config),
        num_runs=num_runs,
        max_concurrency=max_concurrency,
        db_url=db_url,
        refresh_cache=refresh_cache,
        turn_timeout_seconds=turn_timeout_seconds,
        tags=list(tags),
    )
    prepare(request)  # bad input fails here, before Prefect starts
    from agent_eval.flows import agent_eval_flow  # Prefect is imported only when a flow runs

    return asyncio.run(agent_eval_flow(request))


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
