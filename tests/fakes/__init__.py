"""Fakes of external services (real servers on 127.0.0.1) for tests: the Gemini API (`gemini_server`)."""

import pytest

# Test modules import helpers from the server module and also load it as a plugin (its `fake_gemini`
# fixture): registering it for assertion rewriting first keeps pytest from warning about the order.
pytest.register_assert_rewrite("tests.fakes.gemini_server")
