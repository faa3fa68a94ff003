"""Judge tests: an isolated home (the cache starts empty), a clean credentials environment, the fake servers."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.gemini_server import fake_gemini
from tests.fakes.openai_server import fake_openai

__all__ = ["fake_gemini", "fake_openai"]  # fixtures, made available to the tests of this folder

_ENVIRONMENT = (
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_ENTERPRISE",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_GEMINI_BASE_URL",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "AGENT_EVAL_JUDGE_BACKEND",
    "AGENT_EVAL_JUDGE_CONCURRENCY",
    "AGENT_EVAL_GEMINI_BASE_URL",
)


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AGENT_EVAL_HOME", str(tmp_path / "home"))
    for name in _ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
