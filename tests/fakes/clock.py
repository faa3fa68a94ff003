"""A fake monotonic clock for the tests: moved by hand, or by its `sleep`, which records each wait."""

from __future__ import annotations

import asyncio

__all__ = ["FakeClock"]


class FakeClock:
    """A monotonic clock the test moves (`clock.now += 5`), and a sleep that moves it, records the wait in
    `slept` and yields once to the loop (so that tasks waiting on it take turns as they would)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)
