"""Shared fixtures: isolated Prefect and store homes, the test data folder, the demo's paths."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# Isolate Prefect before anything imports it: a temporary home, result storage (the invocation cache) and
# no telemetry, so no test reads results cached by another test session.
_SESSION_HOME = Path(tempfile.mkdtemp(prefix="agent-eval-tests-"))
os.environ["PREFECT_HOME"] = str(_SESSION_HOME / "prefect")
os.environ["PREFECT_LOCAL_STORAGE_PATH"] = str(_SESSION_HOME / "prefect" / "storage")
os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
os.environ["PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"] = "WARNING"
os.environ["AGENT_EVAL_HOME"] = str(_SESSION_HOME / "agent_eval")
os.environ.pop("AGENT_EVAL_DB_URL", None)
os.environ.pop("PREFECT_API_URL", None)
# Runs use Prefect's temporary server unless a test says otherwise: no test leaves a local server behind.
os.environ["AGENT_EVAL_PREFECT_SERVER"] = "ephemeral"

pytest_plugins = [
    "tests.fakes.gemini_server",  # the `fake_gemini` fixture: a real HTTP fake of the Gemini API
    "tests.require_adk",  # AGENT_EVAL_REQUIRE_ADK=1 turns a skip for a missing google-adk into a failure
]

REPO_ROOT = Path(__file__).resolve().parents[1]
# Real ADK and Vertex AI files, copied into the repository (their sources: tests/data/README.md).
TEST_DATA = REPO_ROOT / "tests" / "data"
DEMO_DIR = REPO_ROOT / "examples" / "home_automation"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """`tests/data`: the real ADK and Vertex AI files the loaders must take unchanged."""
    return TEST_DATA


@pytest.fixture(scope="session")
def demo_dir() -> Path:
    """The bundled home-automation demo (agent, eval set, config)."""
    return DEMO_DIR


@pytest.fixture(scope="session")
def prefect_server() -> Iterator[None]:
    """One temporary Prefect server for the whole test session (starting one costs ~10 s)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=90):
        yield


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """A fresh SQLite store file for one test."""
    return f"sqlite:///{tmp_path / 'store.db'}"


@pytest.fixture
def quiet_cli_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The variables the CLI sets by default, set here so that they are undone after the test; no webhook."""
    from agent_eval.compare.alerts import ALERT_WEBHOOK_ENV

    for name, value in {
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "WARNING",
        "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL",
        "PREFECT_LOGGING_ROOT_LEVEL": "CRITICAL",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv(ALERT_WEBHOOK_ENV, raising=False)
