"""Generated ADK eval sets for the race agent, each in its own folder with the `test_config.json` beside it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from adk_race.race_agent.agent import final_answer, request_message

__all__ = ["DEFAULT_CRITERIA", "JUDGE_MODEL", "judged_criteria", "write_eval_set"]

DEFAULT_CRITERIA: dict[str, Any] = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}
"""ADK's two default criteria, which every race case passes (its tool use and final text are exact)."""

JUDGE_MODEL = "gemini-2.5-flash"


def judged_criteria(num_samples: int) -> dict[str, Any]:
    """`final_response_match_v2` alone, `num_samples` judge samples per invocation."""
    options = {"judge_model": JUDGE_MODEL, "num_samples": num_samples}
    return {"final_response_match_v2": {"threshold": 0.5, "judge_model_options": options}}


def _case(number: int) -> dict[str, Any]:
    eval_id = f"case_{number:04d}"
    return {
        "eval_id": eval_id,
        "conversation": [
            {
                "invocation_id": f"{eval_id}-1",
                "user_content": {"role": "user", "parts": [{"text": request_message(number)}]},
                "final_response": {"role": "model", "parts": [{"text": final_answer(number)}]},
                "intermediate_data": {
                    "tool_uses": [{"name": "echo", "args": {"i": number}}],
                    "tool_responses": [],
                    "intermediate_responses": [],
                },
            }
        ],
    }


def write_eval_set(folder: Path, cases: int, criteria: dict[str, Any] | None = None) -> tuple[Path, Path]:
    """`folder/race_nN.evalset.json` with `cases` one-turn cases and `folder/test_config.json`.

    Args:
        folder: created if missing; one eval set per folder (agent-eval reads the config beside the file).
        cases: how many cases, numbered from 1.
        criteria: the config's criteria (default `DEFAULT_CRITERIA`).

    Returns:
        (eval set path, config path).
    """
    folder.mkdir(parents=True, exist_ok=True)
    eval_set = {"eval_set_id": f"race_n{cases}", "eval_cases": [_case(n) for n in range(1, cases + 1)]}
    path = folder / f"race_n{cases}.evalset.json"
    path.write_text(json.dumps(eval_set), encoding="utf-8")
    config = folder / "test_config.json"
    config.write_text(json.dumps({"criteria": criteria or DEFAULT_CRITERIA}, indent=1), encoding="utf-8")
    return path, config
