"""What the judges' calls cost in tokens, per model: for each scored case run and metric, and for the process.

A backend reports every answered call (`record_judge_usage`: the model that answered, its tokens), whatever the
answer is worth: a retried call and an unusable sample cost tokens too; a cache hit makes no call and costs none.
`judge_usage_of()` collects the calls made while it is open in this context (asyncio tasks started inside it
share its record): `score_case_run` opens one per case run and metric and keeps what it collected in the
result's `details["judge_tokens"]` (`{model: ModelUsage as JSON}`), which the run's summary adds up.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from contextvars import ContextVar

from agent_eval.results.pricing import JUDGE_TOKENS
from agent_eval.schema import ModelUsage, add_usage

__all__ = ["JUDGE_TOKENS", "judge_usage_of", "judge_usage_totals", "record_judge_usage"]

_CURRENT: ContextVar[dict[str, ModelUsage] | None] = ContextVar("agent_eval_judge_usage", default=None)
_TOTALS: dict[str, ModelUsage] = {}
_LOCK = threading.Lock()


def record_judge_usage(model: str | None, usage: ModelUsage) -> None:
    """One answered judge call: counted for the open `judge_usage_of` (if any) and the process."""
    current = _CURRENT.get()
    if current is not None:
        add_usage(current, model, usage)
    with _LOCK:
        add_usage(_TOTALS, model, usage)


@contextlib.contextmanager
def judge_usage_of() -> Iterator[dict[str, ModelUsage]]:
    """Collect, per model, the judge calls made in this context until the block ends."""
    collected: dict[str, ModelUsage] = {}
    token = _CURRENT.set(collected)
    try:
        yield collected
    finally:
        _CURRENT.reset(token)


def judge_usage_totals() -> dict[str, ModelUsage]:
    """Per model, every judge call this process made (a copy)."""
    with _LOCK:
        return dict(_TOTALS)
