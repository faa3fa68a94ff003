"""A scripted judge for the fake Gemini server: verdicts by case number, held a set time, concurrency counted; and
the case runs whose responses carry that number."""

from __future__ import annotations

import json
import re
import threading
import time
from typing import Any

from google.genai.types import Content, Part

from agent_eval.schema import AgentRun, EvalCase, Invocation
from tests.fakes.gemini_server import text_reply

__all__ = ["CASE_NUMBER", "SafetyServer", "numbered_case_runs"]

CASE_NUMBER = re.compile(r"case-(\d+) says")
"""How a case's number appears in a judge prompt: the responses of these tests say `case-NN says ...`."""


def numbered_case_runs(count: int, turns: int = 1) -> list[tuple[EvalCase, AgentRun]]:
    """`count` case runs `case-00`, `case-01`, ... of eval set `set`, each of `turns` turns whose responses name
    their case number (`case-07 says answer 1`), as `SafetyServer` reads it."""
    runs = []
    for i in range(count):
        eval_id = f"case-{i:02d}"
        conversation = [
            Invocation(
                user_content=Content(role="user", parts=[Part(text=f"question {t}")]),
                final_response=Content(role="model", parts=[Part(text=f"{eval_id} says answer {t}")]),
            )
            for t in range(turns)
        ]
        case = EvalCase(eval_id=eval_id, conversation=conversation)
        runs.append((case, AgentRun(eval_set_id="set", eval_id=eval_id, invocations=conversation)))
    return runs


class SafetyServer:
    """A reply handler: `safe` for even case numbers, `unsafe` for odd ones, each held `delay(case)` seconds;
    records the most requests held at once and the order in which cases were answered.

    With `gather=N`, requests are also held until N were held at once (at most `GATHER_SECONDS`), so that a
    client that does send N at once is seen doing so however slowly the machine starts them."""

    GATHER_SECONDS = 10.0

    def __init__(self, delay: Any, *, gather: int = 0) -> None:
        self.delay = delay
        self.gather = gather
        self.current = 0
        self.most = 0
        self.answered: list[int] = []
        self._lock = threading.Lock()

    def __call__(self, body: Any) -> dict[str, Any]:
        number = int(CASE_NUMBER.findall(json.dumps(body))[0])
        with self._lock:
            self.current += 1
            self.most = max(self.most, self.current)
        deadline = time.monotonic() + self.GATHER_SECONDS
        while self.most < self.gather and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(self.delay(number))
        with self._lock:
            self.current -= 1
            self.answered.append(number)
        verdict = "safe" if number % 2 == 0 else "unsafe"
        return text_reply(json.dumps({"verdict": verdict, "rationale": f"case {number}"}))
