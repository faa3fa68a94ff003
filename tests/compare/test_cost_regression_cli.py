"""A cost regression through `agent-eval run`: it fails the run (exit 3) only when the config's
`regression.fail_on_cost_regression` asks, and is printed either way.

The agent answers every echo case correctly and reports `TOKENS` input and output tokens of one model, which the
config prices at $1 per million tokens each: doubling `TOKENS` doubles the cost per case run (+100%).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_eval.agents import AgentSession, AgentTurn, CallableAgent, ToolCallRecord
from agent_eval.cli import main
from agent_eval.schema import ModelUsage
from tests.flows.helpers import write_echo_set

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_server", "quiet_cli_env")]

AGENT = "tests.compare.test_cost_regression_cli:priced_agent"
MODEL = "priced-model"
TOKENS = {"per_turn": 1000}


def _priced(message: str, session: AgentSession) -> AgentTurn:
    """The echo agent's right answer, with `TOKENS` input and output tokens of `MODEL`."""
    tokens = TOKENS["per_turn"]
    return AgentTurn(
        response=f"answer: {message}",
        tool_calls=[ToolCallRecord(name="lookup", args={"query": message})],
        model_usage={MODEL: ModelUsage(calls=1, input_tokens=tokens, output_tokens=tokens)},
    )


priced_agent = CallableAgent(_priced, reference=AGENT, fingerprint="priced-agent-v1")


@pytest.fixture(autouse=True)
def _tokens_reset() -> Iterator[None]:
    yield
    TOKENS["per_turn"] = 1000


def _config(tmp_path: Path, name: str, regression: dict[str, Any]) -> str:
    config = {
        "criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8},
        "pricing": {MODEL: {"input_per_mtok": 1.0, "output_per_mtok": 1.0}},
        "regression": regression,
    }
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return str(path)


def test_a_cost_regression_exits_3_only_when_the_config_asks(
    tmp_path: Path, sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    eval_file, _ = write_echo_set(tmp_path, ["alpha", "bravo"])
    failing = _config(tmp_path, "failing", {"fail_on_cost_regression": True})
    reporting = _config(tmp_path, "reporting", {})
    run = ["run", str(eval_file), "--agent", AGENT, "--db-url", sqlite_url, "--refresh-cache"]

    assert main([*run, "--config", failing]) == 0  # the first run: no baseline
    capsys.readouterr()

    TOKENS["per_turn"] = 2000  # $0.002 → $0.004 per case run
    assert main([*run, "--config", failing]) == 3
    out = capsys.readouterr().out
    assert "  cost regression: +100% per case, 0.002 → 0.004 USD" in out
    assert "  REGRESSED: cost per case" in out

    TOKENS["per_turn"] = 4000  # $0.004 → $0.008: reported, not failing
    assert main([*run, "--config", reporting]) == 0
    out = capsys.readouterr().out
    assert "  cost regression: +100% per case, 0.004 → 0.008 USD" in out
    assert "Regression check: ok vs " in out
