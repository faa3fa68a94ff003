"""Helpers of the flow tests: small eval sets (one invocation per case, expected = what `echo_agent` does), a
workstation environment for `agent-eval` processes, and `agent-eval` run in this process."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from agent_eval.cli import main


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


def workstation_env(tmp_path: Path, store_url: str, name: str, **extra: str) -> tuple[dict[str, str], Path]:
    """The environment of an `agent-eval` process as on a workstation, and its AGENT_EVAL_HOME: no Prefect server
    configured (a fresh PREFECT_HOME, no PREFECT_API_URL, not CI), so an evaluating command starts agent-eval's
    local server in that home (`name`-home under `tmp_path`); the store at `store_url`; `extra` added."""
    home = tmp_path / f"{name}-home"
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "CI", "AGENT_EVAL_PREFECT_SERVER")}
    env.update(
        {
            "AGENT_EVAL_HOME": str(home),
            "AGENT_EVAL_PREFECT_SERVER": "local",
            "AGENT_EVAL_REGISTRY_DIR": str(tmp_path / "registry"),
            "AGENT_EVAL_SERVER_IDLE_MINUTES": "1",
            "AGENT_EVAL_WARM": "0",
            "AGENT_EVAL_DB_URL": store_url,
            "PREFECT_HOME": str(tmp_path / f"{name}-prefect"),
            **extra,
        }
    )
    return env, home


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`agent-eval ARGV` in this process: its exit code, stdout and stderr (which must hold no traceback)."""
    capsys.readouterr()
    code = main(list(argv))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err, captured.err
    return code, captured.out, captured.err
