"""Shared pieces of the judge tests: the verdict schema, a request builder, fast retries, a loop runner."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from agent_eval.metrics.judged.base import JudgeRequest
from agent_eval.metrics.judged.policy import RetryPolicy

__all__ = ["FAST", "Verdict", "make_request", "run", "verdict_json"]

T = TypeVar("T")

FAST = RetryPolicy(attempts=4, initial_delay=0.01, max_delay=0.02, jitter=0.0)
"""Retries with tiny waits, so retry tests take milliseconds."""


class Verdict(BaseModel):
    """A judge's structured answer in these tests."""

    label: Literal["valid", "invalid"]
    rationale: str = ""


def verdict_json(label: str = "valid", rationale: str = "same meaning") -> str:
    """A `Verdict` answer as the model would write it."""
    return Verdict.model_validate({"label": label, "rationale": rationale}).model_dump_json()


def make_request(prompt: str = "Is 'Paris' the capital of France?", **fields: Any) -> JudgeRequest:
    """A request for a `Verdict` from gemini-2.5-flash (`fields` override)."""
    values: dict[str, Any] = {
        "model": "gemini-2.5-flash",
        "system": "Answer valid or invalid.",
        "prompt": prompt,
        "response_schema": Verdict,
    }
    return JudgeRequest(**{**values, **fields})


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine in a fresh event loop (as a Prefect task or a script would)."""
    return asyncio.run(coroutine)
