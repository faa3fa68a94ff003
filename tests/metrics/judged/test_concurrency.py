"""The shared cap on judge calls in flight: counted at the server, across judges, per event loop."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from agent_eval.errors import EvalInputError
from agent_eval.metrics.judged.base import JudgeSample
from agent_eval.metrics.judged.client import GenaiJudge
from agent_eval.metrics.judged.policy import judge_limiter
from agent_eval.runtime.adaptive import AdaptiveLimit
from tests.fakes.gemini_server import FakeGeminiServer, text_reply
from tests.metrics.judged.helpers import FAST, make_request, run, verdict_json


class InFlight:
    """A reply handler that holds each request `seconds` and records the most requests held at once."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.current = 0
        self.most = 0
        self._lock = threading.Lock()

    def __call__(self, _body: Any) -> dict[str, Any]:
        with self._lock:
            self.current += 1
            self.most = max(self.most, self.current)
        time.sleep(self.seconds)
        with self._lock:
            self.current -= 1
        return text_reply(verdict_json())


def new_judge(server: FakeGeminiServer) -> GenaiJudge:
    return GenaiJudge(server.client, retry=FAST, cache=False)


async def ask_all(judges: list[GenaiJudge], count: int) -> list[JudgeSample]:
    """`count` asks per judge, all at once, each with its own prompt."""
    asks = [judge.ask(make_request(f"question {i} of {id(judge)}")) for judge in judges for i in range(count)]
    return await asyncio.gather(*asks)


def test_server_never_sees_more_calls_than_the_cap(
    fake_gemini: FakeGeminiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_EVAL_JUDGE_CONCURRENCY", "2")
    in_flight = InFlight(0.15)
    fake_gemini.respond_with(in_flight)

    samples = run(ask_all([new_judge(fake_gemini)], 6))

    assert all(sample.usable for sample in samples) and len(fake_gemini.requests) == 6
    assert in_flight.most == 2


def test_cap_is_shared_by_all_judges_on_the_loop(
    fake_gemini: FakeGeminiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_EVAL_JUDGE_CONCURRENCY", "2")
    in_flight = InFlight(0.1)
    fake_gemini.respond_with(in_flight)

    samples = run(ask_all([new_judge(fake_gemini), new_judge(fake_gemini), new_judge(fake_gemini)], 2))

    assert len(samples) == 6 and all(sample.usable for sample in samples)
    assert in_flight.most == 2


def test_default_ceiling_is_64_the_limit_starts_at_16_and_each_loop_has_its_own() -> None:
    async def probe() -> tuple[AdaptiveLimit, bool, bool]:
        limit = judge_limiter()
        for _ in range(15):
            await limit.acquire()
        after_fifteen = limit.locked()
        await limit.acquire()
        return limit, after_fifteen, limit.locked()

    first, after_fifteen, after_sixteen = run(probe())
    second, _, _ = run(probe())

    assert (first.ceiling, first.limit, second.ceiling) == (64, 16, 64)
    assert (after_fifteen, after_sixteen) == (False, True)  # 16 calls in flight at first, not the ceiling's 64
    assert first is not second


def test_a_bad_ceiling_seen_only_at_the_first_call_falls_back_to_64(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_EVAL_JUDGE_CONCURRENCY", "many")  # check_judge_credentials reports it before a run

    limit = run(_limiter())

    assert (limit.ceiling, limit.limit) == (64, 16)


async def _limiter() -> AdaptiveLimit:
    return judge_limiter()


@pytest.mark.parametrize("value", ["0", "-1", "many", "2.5"])
def test_invalid_cap_is_rejected_when_the_judge_is_made(
    fake_gemini: FakeGeminiServer, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("AGENT_EVAL_JUDGE_CONCURRENCY", value)
    with pytest.raises(EvalInputError, match=f"^AGENT_EVAL_JUDGE_CONCURRENCY={value!r} is not valid: a whole number"):
        new_judge(fake_gemini)
