"""The fake LLM judge of scenario 7: the project's fake Gemini server (tests/fakes/gemini_server.py, imported
from the tests on purpose: the benchmark reuses the fake the judge tests trust) answering every
`final_response_match_v2` request "valid" after a fixed delay, and recording when each request arrived.

The answer fits both judge modes: a request that asks for JSON (agent-eval's own prompts, a response schema)
gets `{"reasoning", "verdict"}`; one that does not (ADK's own prompt, `judge_mode` "adk-exact", the default
when google-adk is installed) gets ADK's `"is_the_agent_response_valid": "valid"` line.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from tests.fakes.gemini_server import FAKE_API_KEY, FakeGeminiServer, FakeReply, text_reply

__all__ = ["FAKE_API_KEY", "TimedJudge", "start_fake_judge"]


class TimedJudge:
    """A `FakeGeminiServer.respond_with` handler: "valid" after `delay` seconds; arrival times recorded."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self._arrivals: list[float] = []
        self._lock = threading.Lock()

    def __call__(self, body: Any) -> FakeReply:
        with self._lock:
            self._arrivals.append(time.monotonic())
        config = (body or {}).get("generationConfig") or {}
        if config.get("responseMimeType") == "application/json":
            text = json.dumps({"reasoning": "The response matches the reference.", "verdict": "valid"})
        else:
            text = '{"reasoning": "The response matches the reference.", "is_the_agent_response_valid": "valid"}'
        return FakeReply(body=text_reply(text), delay=self.delay)

    def reset(self) -> None:
        """Forget the recorded requests (before the next run)."""
        with self._lock:
            self._arrivals.clear()

    @property
    def requests(self) -> int:
        """Requests received since the last `reset`."""
        return len(self._arrivals)

    @property
    def span(self) -> float:
        """Seconds from the first request's arrival to the last answer's departure (0 without requests)."""
        with self._lock:
            if not self._arrivals:
                return 0.0
            return max(self._arrivals) + self.delay - min(self._arrivals)


def start_fake_judge(delay: float) -> tuple[FakeGeminiServer, TimedJudge]:
    """A started fake Gemini server (a daemon thread of this process) answering through a `TimedJudge`."""
    judge = TimedJudge(delay)
    server = FakeGeminiServer().start()
    server.respond_with(judge)
    return server, judge
