"""The adaptive limit (`runtime.adaptive`): where it starts, its bounds, slow start and additive increase, one cut
per round of refusals, held slots, latency growth, pacing; driven by a fake clock and counted calls, no wall clock."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest

from agent_eval.runtime.adaptive import DEFAULT_START, AdaptiveLimit, Slot
from tests.fakes.clock import FakeClock

T = TypeVar("T")


class InFlight:
    """Counts the calls inside `call` at once, as a provider would."""

    def __init__(self) -> None:
        self.current = self.most = 0

    async def call(self, turns: int = 3) -> None:
        self.current += 1
        self.most = max(self.most, self.current)
        for _ in range(turns):
            await asyncio.sleep(0)
        self.current -= 1


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


def limiter(ceiling: int = 64, clock: FakeClock | None = None, **options: Any) -> AdaptiveLimit:
    clock = clock or FakeClock()
    return AdaptiveLimit(ceiling, clock=clock, sleep=clock.sleep, **options)


async def round_of(limit: AdaptiveLimit, count: int, clock: FakeClock, latency: float = 1.0) -> list[Slot]:
    """`count` slots taken at once, answered together `latency` seconds later (released by the caller)."""
    slots = [await limit.acquire() for _ in range(count)]
    clock.now += latency
    return slots


async def answered_rounds(limit: AdaptiveLimit, clock: FakeClock, rounds: int, latency: float = 1.0) -> list[int]:
    """`rounds` rounds of calls by a client that always has more to send: each answer is followed at once by as
    many new calls as the limit allows; every call is answered `latency` seconds after it left. The limit after
    each round."""
    slots, seen = await fill(limit, []), []
    for _ in range(rounds):
        clock.now += latency
        following: list[Slot] = []
        for slot in slots:
            limit.release(slot)
            await fill(limit, following)
        slots = following
        seen.append(limit.limit)
    for slot in slots:
        limit.release(slot)
    return seen


async def fill(limit: AdaptiveLimit, slots: list[Slot]) -> list[Slot]:
    """`slots` with new slots taken while the limit has room."""
    while not limit.locked():
        slots.append(await limit.acquire())
    return slots


# ------------------------------------------------------------------------------------------------ bounds
@pytest.mark.parametrize(
    ("ceiling", "initial", "expected"), [(64, None, DEFAULT_START), (8, None, 8), (64, 30, 30), (20, 50, 20)]
)
def test_starts_at_sixteen_or_the_ceiling_or_where_it_is_told(ceiling: int, initial: int | None, expected: int) -> None:
    assert DEFAULT_START == 16
    assert limiter(ceiling, initial=initial).limit == expected


def test_calls_in_flight_never_pass_the_limit_nor_the_ceiling() -> None:
    limit, provider = limiter(20, initial=4), InFlight()

    async def ask() -> None:
        async with limit.slot():
            await provider.call()

    async def many() -> None:
        await asyncio.gather(*(ask() for _ in range(300)))

    run(many())

    assert limit.limit == 20 and provider.most == 20 and limit.most_in_flight == 20
    assert limit.in_flight == 0 and limit.cuts == 0


def test_a_provider_that_refuses_every_call_brings_the_limit_to_the_floor_and_no_lower() -> None:
    async def refused(limit: AdaptiveLimit, calls: int) -> list[int]:
        seen = []
        for _ in range(calls):
            async with limit.slot() as slot:
                slot.throttled()
            seen.append(limit.limit)
        return seen

    to_one = run(refused(limiter(64), 60))
    to_three = run(refused(limiter(64, floor=3), 60))

    assert to_one[0] == 8 and to_one[-1] == 1 and min(to_one) == 1  # each refusal its own round: cut by half
    assert to_three[-1] == 3 and min(to_three) == 3


def test_invalid_bounds_are_rejected() -> None:
    with pytest.raises(ValueError, match="1 <= floor <= ceiling"):
        AdaptiveLimit(4, floor=5)


# ------------------------------------------------------------------------------------------------ growth
def test_slow_start_doubles_the_limit_per_round() -> None:
    clock = FakeClock()
    limit = limiter(64, clock, initial=4)

    assert run(answered_rounds(limit, clock, 4)) == [8, 16, 32, 64]
    assert limit.cuts == 0


def test_after_a_cut_the_limit_grows_by_one_per_round() -> None:
    clock = FakeClock()
    limit = limiter(64, clock, initial=32, pacing=False)  # pacing: see below

    async def scenario() -> tuple[int, list[int]]:
        slots = await round_of(limit, 32, clock)
        for slot in slots[:5]:
            slot.throttled()  # 5 of 32 wait (16%, more than 15%): cut to the 27 the provider holds
        cut = limit.limit
        for slot in slots:
            limit.release(slot)
        return cut, await answered_rounds(limit, clock, 4)

    cut, additive = run(scenario())

    assert cut == 27 and limit.cuts == 1
    # +1/limit per answer, one per round (the 27 answers of the round that was cut already add one)
    assert additive == [28, 29, 30, 31]


def test_a_limit_that_is_not_used_does_not_grow() -> None:
    clock = FakeClock()
    limit = limiter(64, clock)

    async def sequential() -> None:
        for _ in range(100):
            async with limit.slot():
                clock.now += 1.0

    run(sequential())

    assert limit.limit == DEFAULT_START and limit.most_in_flight == 1


# ----------------------------------------------------------------------------------------------- refusals
def test_refusals_of_calls_sent_together_cut_once_and_a_few_cut_nothing() -> None:
    clock = FakeClock()
    limit = limiter(64, clock, initial=20)

    async def scenario() -> list[int]:
        slots = await round_of(limit, 20, clock)
        seen = []
        for slot in slots[:10]:
            slot.throttled()
            seen.append(limit.limit)
        for slot in slots:
            limit.release(slot)
        return seen

    seen = run(scenario())

    # 1, 2, 3 of 20 waiting is within 15%; the 4th makes 20%: cut to 80%; the 6 after it are the same round
    assert seen == [20, 20, 20, 16, 16, 16, 16, 16, 16, 16]
    assert limit.cuts == 1


def test_the_next_round_of_refusals_cuts_again() -> None:
    clock = FakeClock()
    limit = limiter(64, clock, initial=20)

    async def scenario() -> tuple[int, int]:
        first = await round_of(limit, 20, clock)
        for slot in first[:4]:
            slot.throttled()  # cut to 16
        for slot in first[4:]:
            limit.release(slot)  # the round is answered: 4 refused calls still hold their slots
        after_first = limit.limit
        for slot in first[:4]:
            slot.sent()  # sent again, in the new round
        for slot in first[:4]:
            slot.throttled()  # and refused again: the first refusal (1 of 4 waits) cuts to 75%, once
        for slot in first[:4]:
            limit.release(slot)
        return after_first, limit.limit

    after_first, after_second = run(scenario())

    assert (after_first, after_second) == (16, 12)
    assert limit.cuts == 2


def test_a_refused_call_keeps_its_slot_until_it_is_released() -> None:
    limit = limiter(8)

    async def scenario() -> tuple[bool, int, int]:
        slots = [await limit.acquire() for _ in range(8)]
        slots[0].throttled()  # waits for the provider's delay, still in flight (1 of 8: no cut)
        ninth = asyncio.ensure_future(limit.acquire())
        for _ in range(5):
            await asyncio.sleep(0)
        held = not ninth.done()
        limit.release(slots[0])
        slots[0] = await ninth
        in_flight = limit.in_flight
        for slot in slots:
            limit.release(slot)
        return held, in_flight, limit.limit

    held, in_flight, after = run(scenario())

    assert held and (in_flight, after) == (8, 8)
    assert limit.in_flight == 0 and limit.cuts == 0


def test_a_failure_that_is_no_refusal_changes_nothing() -> None:
    limit = limiter(64)

    async def failing() -> None:
        for _ in range(50):
            with pytest.raises(ConnectionError):
                async with limit.slot():
                    raise ConnectionError("lost")

    run(failing())

    assert limit.limit == DEFAULT_START and limit.cuts == 0 and limit.in_flight == 0


def test_a_cancelled_wait_hands_its_slot_on() -> None:
    limit = limiter(1)

    async def scenario() -> bool:
        first = await limit.acquire()
        waiting = asyncio.ensure_future(limit.acquire())
        await asyncio.sleep(0)
        waiting.cancel()
        await asyncio.sleep(0)
        limit.release(first)
        second = await limit.acquire()
        free = limit.in_flight == 1
        limit.release(second)
        return free

    assert run(scenario()) and limit.in_flight == 0


# ------------------------------------------------------------------------------------------------ latency
def test_latency_growth_cuts_by_a_tenth_and_steady_latency_does_not() -> None:
    clock = FakeClock()
    limit = limiter(10, clock, initial=10)

    async def calls(count: int, latency: float) -> list[int]:
        seen = []
        for _ in range(count):
            async with limit.slot():
                clock.now += latency
            seen.append(limit.limit)
        return seen

    steady = run(calls(40, 1.0))
    cuts_when_steady = limit.cuts
    slower = run(calls(11, 3.0))

    assert steady == [10] * 40 and cuts_when_steady == 0
    # the median of the last 16 passes 2 x the baseline (1.0) with the 9th call of 3.0 s; each call alone is a
    # round, so while calls stay slow every one cuts again
    assert slower == [10] * 8 + [9, 8, 7] and limit.cuts == 3


def test_a_slow_but_steady_provider_lets_the_limit_reach_the_ceiling() -> None:
    clock = FakeClock()
    limit = limiter(64, clock)

    seen = run(answered_rounds(limit, clock, 4, latency=1.5))

    assert seen == [32, 64, 64, 64] and limit.cuts == 0 and limit.settled == 64


# ------------------------------------------------------------------------------------------------ pacing
def test_starts_are_paced_only_after_a_refusal() -> None:
    clock = FakeClock()
    limit = limiter(10, clock, initial=10)

    async def scenario() -> tuple[list[float], list[float]]:
        for slot in await round_of(limit, 10, clock):  # latency 1.0 known
            limit.release(slot)
        unpaced = list(clock.slept)
        refused = await limit.acquire()
        refused.throttled()
        limit.release(refused)
        slots = [await limit.acquire() for _ in range(4)]
        for slot in slots:
            limit.release(slot)
        return unpaced, clock.slept

    unpaced, paced = run(scenario())

    assert unpaced == []
    # the refusal of the only call in flight halved the limit to 5: latency 1.0 / 5, starts 0.2 s apart (the
    # first start after the refusal takes the first turn at once)
    assert limit.limit == 5 and paced == [pytest.approx(0.2)] * 3


def test_settled_is_the_median_of_the_last_values() -> None:
    clock = FakeClock()
    limit = limiter(64, clock, initial=4)

    run(answered_rounds(limit, clock, 5))

    assert limit.limit == 64 and limit.settled == 64 and limit.most_in_flight == 64
