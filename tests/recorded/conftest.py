"""The recorded-traffic fixtures, made once per test process by the real emitters (`tests/recorded/emitters.py`)."""

from __future__ import annotations

import pytest

from tests.recorded.emitters import Fixtures, make_fixtures


@pytest.fixture(scope="session")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Fixtures:
    """Every variant's traces and sessions (about 10 s: ADK's Runner and the google-genai instrumentor run)."""
    pytest.importorskip("google.adk")
    pytest.importorskip("opentelemetry.instrumentation.google_genai")
    return make_fixtures(tmp_path_factory.mktemp("recorded"))
