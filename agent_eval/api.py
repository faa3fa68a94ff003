"""The Python API: `evaluate` runs the same Prefect flow as the CLI."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from agent_eval.plan import DEFAULT_MAX_CONCURRENCY, EvalRequest, prepare
from agent_eval.report.models import RunReport

__all__ = ["evaluate"]


def evaluate(
    paths: str | Path | Sequence[str | Path],
    agent: str | None = None,
    config: str | Path | None = None,
    *,
    num_runs: int = 1,
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
    db_url: str | None = None,
    refresh_cache: bool = False,
) -> RunReport:
    """Evaluate an agent on eval files through the `agent-eval` flow and persist the run.

    Args:
        paths: eval files or folders (`FILE:case1,case2` selects cases).
        agent: agent reference ('package.module:attr', 'file.py:attr', an agent folder); default: the
            `agent.py` beside the eval files.
        config: an ADK `test_config.json`; default: the one beside the eval files, else ADK's defaults.
        num_runs: runs per case.
        max_concurrency: agent invocations at once.
        db_url: store URL; default `$AGENT_EVAL_DB_URL` or the SQLite file.
        refresh_cache: invoke the agent even where a cached run exists.

    Returns:
        The run report (also persisted in the store).

    Raises:
        EvalInputError: bad input, found before anything runs.
    """
    items = [paths] if isinstance(paths, str | Path) else list(paths)
    request = EvalRequest(
        paths=[str(p) for p in items],
        agent=agent,
        config=str(config) if config is not None else None,
        num_runs=num_runs,
        max_concurrency=max_concurrency,
        db_url=db_url,
        refresh_cache=refresh_cache,
    )
    prepare(request)  # bad input fails here, before Prefect starts
    from agent_eval.flows import agent_eval_flow  # Prefect is imported only when a flow runs

    return asyncio.run(agent_eval_flow(request))
