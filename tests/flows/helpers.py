"""Writing small eval sets for flow tests: one invocation per case, expected = what `echo_agent` does."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any


def echo_case(eval_id: str, message: str) -> dict[str, Any]:
    """A single-turn case whose expectations match `agents_for_tests.echo_agent`."""
    return {
        "eval_id": eval_id,
        "conversation": [
            {
                "user_content": {"role": "user", "parts": [{"text": message}]},
                "final_response": {"role": "model", "parts": [{"text": f"answer: {message}"}]},
                "intermediate_data": {"tool_uses": [{"name": "lookup", "args": {"query": message}}]},
            }
        ],
    }


def write_echo_set(folder: Path, names: list[str]) -> tuple[Path, dict[str, str]]:
    """An eval set file with one echo case per name; messages are unique per call (fresh cache keys).

    Returns the file and the message of each case.
    """
    token = uuid.uuid4().hex[:8]
    messages = {name: f"{name} {token}" for name in names}
    eval_set = {
        "eval_set_id": f"echo_{token}",
        "eval_cases": [echo_case(name, message) for name, message in messages.items()],
    }
    path = folder / f"echo_{token}.evalset.json"
    path.write_text(json.dumps(eval_set), encoding="utf-8")
    (folder / "test_config.json").write_text(
        json.dumps({"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}}), encoding="utf-8"
    )
    return path, messages
