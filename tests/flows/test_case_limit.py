"""Rate-limited case runs (`flows.case_limit`): each is tried again in its slot after the provider's delay (else
1, 2, 4 ... s), a batch after the longest delay of its case runs, until the deadline, then recorded lost; tries
are summed; refusals cut the limit on case runs in flight; where the limit starts and what it reports. And what
the invoke stage records for a rate-limited task (`tasks.run_of_outcome`). A fake clock and sleep, no wall clock."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

from agent_eval.agents.base import TransientAgentError
from agent_eval.flows.case_limit import RATE_LIMIT_DEADLINE, CaseRunLimit, retrying_rate_limits
from agent_eval.plan.eval_plan import CaseRunKey
from agent_eval.schema import AgentRun, EvalCase
from agent_eval.tasks import INVOKE_RETRIES, run_of_outcome
from tests.fakes.clock import FakeClock

T = TypeVar("T")

LIMITED = "TransientAgentError: HTTP 429 Too Many Requests"
"""The error a rate-limited try records (`run_of_outcome` of the HTTP agent's 429)."""


def key(eval_id: str) -> CaseRunKey:
    conversation = [{"user_content": {"role": "user", "parts": [{"text": eval_id}]}}]
    case = EvalCase.model_validate({"eval_id": eval_id, "conversation": conversation})
    return CaseRunKey(eval_set_id="set", case=case, run_index=0)


class Agent:
    """A fake invoke: per eval id, the delays of its rate-limited tries (`None`: no delay given), then a success;
    `forever` eval ids are always rate limited (with no delay). Every call is recorded. With `together`, the first
    that many calls wait until all are in (so that they are all in flight, then refused, at once)."""

    def __init__(
        self, limits: dict[str, list[float | None]] | None = None, forever: Sequence[str] = (), together: int = 0
    ) -> None:
        self.limits = {eval_id: list(delays) for eval_id, delays in (limits or {}).items()}
        self.forever = set(forever)
        self.calls: list[list[str]] = []
        self.together = together
        self._barrier: asyncio.Barrier | None = None

    async def __call__(self, keys: list[CaseRunKey]) -> list[AgentRun]:
        self.calls.append([k.case.eval_id for k in keys])
        await asyncio.sleep(0)
        if len(self.calls) <= self.together:
            self._barrier = self._barrier or asyncio.Barrier(self.together)
            await self._barrier.wait()
        return [self._run(k) for k in keys]

    def _run(self, case_run: CaseRunKey) -> AgentRun:
        eval_id = case_run.case.eval_id
        pending = self.limits.get(eval_id, [])
        if eval_id in self.forever or pending:
            delay = pending.pop(0) if pending else None
            error = TransientAgentError("HTTP 429 Too Many Requests", status_code=429, retry_after=delay)
            return run_of_outcome(error, case_run)
        return AgentRun(eval_set_id=case_run.eval_set_id, eval_id=eval_id, run_index=case_run.run_index)


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


def case_limit(ceiling: int = 8, initial: int | None = None) -> tuple[CaseRunLimit, FakeClock]:
    clock = FakeClock()
    return CaseRunLimit(ceiling, initial=initial, clock=clock, sleep=clock.sleep), clock


async def one_batch(eval_ids: Sequence[str], agent: Agent, limit: CaseRunLimit) -> list[AgentRun]:
    """The case runs of `eval_ids` as the invoke stage runs one batch: in one slot of the limit for its size."""
    async with limit.limit(len(eval_ids)).slot() as slot:
        return await retrying_rate_limits([key(e) for e in eval_ids], agent, slot, limit)


# -------------------------------------------------------------------------------------- waits and attempts
def test_a_rate_limited_case_run_waits_the_providers_delays_then_succeeds() -> None:
    limit, clock = case_limit()
    agent = Agent({"a": [3.0, 7.5]})

    [result] = run(one_batch(["a"], agent, limit))

    assert clock.slept == [3.0, 7.5]
    assert agent.calls == [["a"], ["a"], ["a"]]
    assert (result.error, result.error_kind, result.attempts) == (None, None, 3)
    assert (limit.rate_limited, limit.lost) == (2, 0)


def test_without_a_delay_the_backoff_doubles() -> None:
    limit, clock = case_limit()

    [result] = run(one_batch(["a"], Agent({"a": [None, None, None]}), limit))

    assert clock.slept == [1.0, 2.0, 4.0]
    assert (result.failed, result.attempts, limit.rate_limited) == (False, 4, 3)


def test_the_backoff_counts_tries_and_a_provider_delay_replaces_it() -> None:
    limit, clock = case_limit()

    [result] = run(one_batch(["a"], Agent({"a": [None, 10.0, None]}), limit))

    assert clock.slept == [1.0, 10.0, 4.0]  # the third wait is the backoff after 3 tries
    assert result.attempts == 4


def test_a_batch_waits_the_longest_delay_and_tries_again_only_its_limited_case_runs() -> None:
    limit, clock = case_limit(ceiling=8)
    agent = Agent({"a": [2.0, None], "b": [5.0]})

    results = run(one_batch(["a", "b", "c"], agent, limit))

    assert agent.calls == [["a", "b", "c"], ["a", "b"], ["a"]]
    assert clock.slept == [5.0, 2.0]  # max(2, 5); then a alone, no delay after 2 tries: backoff 2
    assert [(r.eval_id, r.failed, r.attempts) for r in results] == [("a", False, 3), ("b", False, 2), ("c", False, 1)]
    assert (limit.rate_limited, limit.lost) == (3, 0)


def test_a_batch_with_and_without_a_delay_waits_the_longer() -> None:
    limit, clock = case_limit()

    run(one_batch(["a", "b"], Agent({"a": [None], "b": [4.0]}), limit))

    assert clock.slept == [4.0]  # max(backoff 1, 4)


# -------------------------------------------------------------------------------------------- the deadline
def test_at_the_deadline_a_rate_limited_case_run_is_given_up_and_lost() -> None:
    limit, clock = case_limit()
    agent = Agent(forever=["a"])

    [result] = run(one_batch(["a"], agent, limit))

    # 1 + 2 + 4 + 8 + 16 = 31 s, then 18 waits of 30 s: 571 s; 30 s more would pass 600 s: given up after 24 tries
    assert clock.slept == [1.0, 2.0, 4.0, 8.0, 16.0] + [30.0] * 18
    assert sum(clock.slept) == 571.0 and len(agent.calls) == 24
    assert result.error == f"rate limited until the deadline (600 s, 24 tries): {LIMITED}"
    assert (result.error_kind, result.attempts) == ("rate_limit", 24)
    assert (limit.rate_limited, limit.lost) == (23, 1)
    assert RATE_LIMIT_DEADLINE == 600.0


def test_a_delay_past_the_deadline_gives_up_at_once() -> None:
    limit, clock = case_limit()

    [result] = run(one_batch(["a"], Agent({"a": [601.0]}), limit))

    assert clock.slept == []
    assert result.error == f"rate limited until the deadline (600 s, 1 try): {LIMITED}"
    assert (result.error_kind, result.attempts, limit.rate_limited, limit.lost) == ("rate_limit", 1, 0, 1)


def test_a_delay_ending_exactly_at_the_deadline_is_waited() -> None:
    limit, clock = case_limit()

    [result] = run(one_batch(["a"], Agent({"a": [100.0, 500.0]}), limit))

    assert clock.slept == [100.0, 500.0]  # 600 s after the first try: not past the deadline
    assert (result.failed, result.attempts, limit.lost) == (False, 3, 0)


def test_in_a_batch_only_the_case_runs_still_limited_are_lost() -> None:
    limit, clock = case_limit()
    agent = Agent({"b": [300.0]}, forever=["a"])

    results = run(one_batch(["a", "b", "c"], agent, limit))

    # try 1: a and b limited, wait max(backoff 1, 300); then a alone: backoff 2, 4, 8, 16 (330 s), 9 x 30 s
    # (600 s: the deadline exactly); 30 s more would pass it: given up after 15 tries
    assert clock.slept == [300.0, 2.0, 4.0, 8.0, 16.0] + [30.0] * 9
    assert agent.calls == [["a", "b", "c"], ["a", "b"]] + [["a"]] * 13
    assert [(r.eval_id, r.error_kind, r.attempts) for r in results] == [
        ("a", "rate_limit", 15),
        ("b", None, 2),
        ("c", None, 1),
    ]
    assert results[0].error == f"rate limited until the deadline (600 s, 15 tries): {LIMITED}"
    assert (limit.rate_limited, limit.lost) == (15, 1)  # 2 + 13 tries tried again


def test_a_case_run_given_up_does_not_raise_the_limit() -> None:
    limit, _clock = case_limit(ceiling=8, initial=1)

    run(one_batch(["a"], Agent({"a": [601.0]}), limit))

    assert limit.limit().limit == 1


# ------------------------------------------------------------------------------------------ the adaptive limit
async def eight_batches_refused_together(limit: CaseRunLimit, agent: Agent) -> list[list[AgentRun]]:
    return await asyncio.gather(*(one_batch([f"c{index}"], agent, limit) for index in range(8)))


def test_batches_refused_together_cut_the_limit_once() -> None:
    limit, clock = case_limit(ceiling=8)
    agent = Agent({f"c{index}": [5.0] for index in range(8)}, together=8)

    results = run(eight_batches_refused_together(limit, agent))

    slots = limit.limit()
    # 8 in flight; the 2nd refusal passes the tolerated 15% (2/8): cut to 8 * (1 - 2/8) = 6, once for the round.
    # Then 8 successes: +1/limit each while 2 * in flight >= limit (in flight 8, 7, 6, 5, 4): 6.79, shown 6.
    assert (slots.limit, slots.cuts, slots.most_in_flight) == (6, 1, 8)
    assert clock.slept == [5.0] * 8
    assert [batch[0].attempts for batch in results] == [2] * 8
    assert limit.as_dict() == {"concurrency": 6, "concurrency_max": 8, "rate_limited": 8, "lost": 0}


def test_one_refusal_among_eight_in_flight_is_tolerated() -> None:
    limit, _clock = case_limit(ceiling=8)
    agent = Agent({"c0": [5.0]}, together=8)

    run(eight_batches_refused_together(limit, agent))

    assert (limit.limit().limit, limit.limit().cuts) == (8, 0)  # 1/8 = 12.5% <= 15%, and at the ceiling
    assert limit.as_dict() == {"concurrency": 8, "concurrency_max": 8, "rate_limited": 1, "lost": 0}


def test_where_the_limit_starts() -> None:
    assert CaseRunLimit(64).limit().limit == 16  # min(ceiling, 16)
    assert CaseRunLimit(4).limit().limit == 4
    assert CaseRunLimit(64, initial=40).limit().limit == 40  # where an earlier run settled
    assert CaseRunLimit(10, initial=40).limit().limit == 10  # never above the ceiling
    assert CaseRunLimit(64, initial=40).limit(4).limit == 10  # batches of 4: 40 // 4 (ceiling 16)
    assert CaseRunLimit(8, initial=3).limit(4).limit == 1  # ceiling 8 // 4 = 2; 3 // 4 = 0 -> at least 1
    limit = CaseRunLimit(64, initial=40)
    assert limit.limit(4) is limit.limit(4) and limit.limit(4) is not limit.limit(1)


def test_as_dict_reports_in_case_runs() -> None:
    limit, _clock = case_limit(ceiling=16, initial=12)
    assert limit.as_dict() == {}  # before any case run

    run(one_batch(["a", "b", "c", "d"], Agent({"a": [2.0]}), limit))

    # batches of 4: a limit of 12 // 4 = 3 batches, one in flight; the refusal of the lone slot cuts 3 -> 1.5 (by
    # half at most), its success adds 1 / 1.5: 2.17, shown 2
    assert (limit.limit(4).limit, limit.limit(4).cuts) == (2, 1)
    # settled: the lower median of [3, 2]; the most in flight: 1 batch of 4
    assert limit.as_dict() == {"concurrency": 8, "concurrency_max": 4, "rate_limited": 1, "lost": 0}


# --------------------------------------------------------------------------------- what the invoke stage records
def test_a_rate_limited_task_is_recorded_after_one_attempt_with_its_delay() -> None:
    recorded = run_of_outcome(TransientAgentError("HTTP 429", status_code=429, retry_after=3), key("a"))

    assert (recorded.eval_id, recorded.error, recorded.error_kind) == (
        "a",
        "TransientAgentError: HTTP 429",
        "rate_limit",
    )
    assert (recorded.attempts, recorded.retry_after) == (1, 3.0)


def test_a_503_task_is_recorded_after_all_its_retries() -> None:
    recorded = run_of_outcome(TransientAgentError("HTTP 503", status_code=503), key("a"))

    assert (recorded.error_kind, recorded.attempts, recorded.retry_after) == ("transport", INVOKE_RETRIES + 1, None)
    assert INVOKE_RETRIES + 1 == 4
