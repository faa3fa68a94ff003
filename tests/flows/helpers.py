"""Helpers of the flow tests: small eval sets (one invocation per case, expected = what `echo_agent` does), a
workstation environment for `agent-eval` processes, `agent-eval` run in this process, and an evaluation of an
in-process agent whose model is a rate-limited fake Gemini server."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from agent_eval import evaluate
from agent_eval.cli import main
from agent_eval.results.model import RunReport
from tests.fakes.gemini_server import FAKE_API_KEY, FakeGeminiServer, text_reply
from tests.fakes.limited_gemini import LimitedProvider


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


def evaluate_with_a_limited_model(
    agent: str,
    *,
    cases: int,
    limit: int,
    tmp_path: Path,
    sqlite_url: str,
    fake_gemini: FakeGeminiServer,
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[RunReport, LimitedProvider]:
    """`cases` echo cases of the in-process `agent` (a reference) evaluated at `max_concurrency=16` on
    `response_match_score`, its model the fake Gemini server (through google-genai: `GOOGLE_GEMINI_BASE_URL`),
    which answers "answer: <question>" in 50 ms to `limit` calls at once and 429 `RESOURCE_EXHAUSTED` with a
    `RetryInfo` of 50 ms past that; returns the report and the provider, stopped."""
    monkeypatch.setenv("GOOGLE_API_KEY", FAKE_API_KEY)
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_gemini.base_url)
    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "false")
    provider = LimitedProvider(_echo_model, latency=0.05, max_concurrent=limit, retry_delay=0.05)
    fake_gemini.respond_with(provider)
    eval_file, _ = write_echo_set(tmp_path, [f"case{i:02d}" for i in range(cases)])
    criteria = tmp_path / "test_config.json"
    criteria.write_text('{"criteria": {"response_match_score": 0.8}}')
    try:
        report = evaluate(eval_file, agent=agent, db_url=sqlite_url, max_concurrency=16, config=criteria)
    finally:
        provider.stop()
    return report, provider


def _echo_model(body: Any) -> Any:
    """The agent's model: the echo of the conversation's last text, as `write_echo_set`'s cases expect."""
    return text_reply(f"answer: {body['contents'][-1]['parts'][0]['text']}")
