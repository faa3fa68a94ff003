"""What the judges' calls cost in tokens, per model: for each scored case run and metric, and for the process.

A backend reports every answered call (`record_judge_usage`: the model that answered, its tokens), whatever the
answer is worth: a retried call and an unusable sample cost tokens too; a cache hit makes no call and costs none.
`judge_usage_of()` collects the calls made while it is open in this context (asyncio tasks started inside it
share its record; blocks nest, a call counting in each): `score_case_run` opens one per case run and metric and
keeps what it collected in the result's `details["judge_tokens"]` (`{model: ModelUsage as JSON}`), which the
run's summary adds up; the judge client opens one per call, for the run's budget.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from contextvars import ContextVar

from agent_eval.metrics.judged.base import Judge, JudgeRequest, JudgeSample
from agent_eval.results.budget import active_spend, reserve
from agent_eval.results.pricing import JUDGE_TOKENS
from agent_eval.schema import ModelUsage, add_usage

__all__ = ["JUDGE_TOKENS", "ask_within_budget", "judge_usage_of", "judge_usage_totals", "record_judge_usage"]

_CURRENT: ContextVar[tuple[dict[str, ModelUsage], ...]] = ContextVar("agent_eval_judge_usage", default=())
"""The open collections, outermost first: a call counts in each (a case run's metric, and one call's own)."""
_TOTALS: dict[str, ModelUsage] = {}
_LOCK = threading.Lock()


def record_judge_usage(model: str | None, usage: ModelUsage) -> None:
    """One answered judge call: counted for the open `judge_usage_of` (if any) and the process."""
    for collected in _CURRENT.get():
        add_usage(collected, model, usage)
    with _LOCK:
        add_usage(_TOTALS, model, usage)


@contextlib.contextmanager
def judge_usage_of() -> Iterator[dict[str, ModelUsage]]:
    """Collect, per model, the judge calls made in this context until the block ends (inside another such block,
    the calls count in both)."""
    collected: dict[str, ModelUsage] = {}
    token = _CURRENT.set((*_CURRENT.get(), collected))
    try:
        yield collected
    finally:
        _CURRENT.reset(token)


def judge_usage_totals() -> dict[str, ModelUsage]:
    """Per model, every judge call this process made (a copy)."""
    with _LOCK:
        return dict(_TOTALS)


async def ask_within_budget(judge: Judge, request: JudgeRequest) -> JudgeSample:
    """`judge.ask(request)` under the run's budget (`agent_eval.results.budget`, when the run has one): a sample
    the budget does not let start is an unusable sample saying so ("not judged: budget of $5.00 reached ..."); a
    sample that starts is counted in flight until it ends, then at what its calls cost (an answer from the judge
    cache costs nothing and is not counted as a call)."""
    spend = active_spend()
    if spend is None:
        return await judge.ask(request)
    refusal = await reserve(spend, "judge")
    if refusal is not None:
        return JudgeSample(error=f"not judged: {refusal}")
    used: dict[str, ModelUsage] = {}
    cached = False
    try:
        with judge_usage_of() as used:
            sample = await judge.ask(request)
            cached = sample.cached
    finally:
        await asyncio.to_thread(spend.finish, "judge", used, counted=not cached)
    return sample
