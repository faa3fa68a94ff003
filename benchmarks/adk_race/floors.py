"""The baselines of scenario 5, each run as its own process (`python floors.py KIND N`):

- `prefect N`: a bare Prefect flow that maps N no-op tasks on a thread pool of 8 workers (agent-eval's default
  `--max-concurrency`), on the server `PREFECT_API_URL` names: Prefect's floor for one task per case.
- `agent N`: the race agent alone, N cases through ADK's `InMemoryRunner` (a fresh session each),
  8 at a time, no Prefect and no scoring: what the agent itself costs per case.

Each exits 0 only when all N finished (the agent: with its expected final answer).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/, for adk_race.race_agent

WORKERS = 8


def prefect_floor(count: int) -> int:
    """Map `count` no-op tasks in one flow run; returns how many finished."""
    from prefect import flow, task
    from prefect.task_runners import ThreadPoolTaskRunner

    @task
    def noop(index: int) -> int:
        return index

    # Prefect's TaskRunner is invariant in its future type, so its own thread runner does not type-check here.
    @flow(name="bench-prefect-floor", task_runner=ThreadPoolTaskRunner[Any](max_workers=WORKERS))  # type: ignore[arg-type]
    def fan_out(n: int) -> int:
        return len(noop.map(range(n)).result())

    return int(fan_out(count))


async def _agent_floor(count: int) -> int:
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    from adk_race.race_agent.agent import final_answer, request_message, root_agent

    runner = InMemoryRunner(agent=root_agent, app_name="race_agent")
    gate = asyncio.Semaphore(WORKERS)

    async def one(number: int) -> bool:
        async with gate:
            session = await runner.session_service.create_session(app_name="race_agent", user_id="bench")
            message = types.Content(role="user", parts=[types.Part(text=request_message(number))])
            texts = [
                part.text
                async for event in runner.run_async(user_id="bench", session_id=session.id, new_message=message)
                if event.is_final_response() and event.content
                for part in event.content.parts or []
                if part.text
            ]
            return texts[-1:] == [final_answer(number)]

    done = await asyncio.gather(*(one(n) for n in range(1, count + 1)))
    await runner.close()
    return sum(done)


def main(argv: list[str]) -> int:
    """Exit status 0 when all N cases or tasks finished, 1 otherwise, 2 on bad arguments."""
    if len(argv) < 2 or argv[0] not in ("prefect", "agent") or not argv[1].isdigit():
        print("usage: floors.py prefect N | floors.py agent N", file=sys.stderr)
        return 2
    count = int(argv[1])
    done = prefect_floor(count) if argv[0] == "prefect" else asyncio.run(_agent_floor(count))
    print(f"{argv[0]} floor: {done}/{count} done")
    return 0 if done == count else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
