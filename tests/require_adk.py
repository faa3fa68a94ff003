"""A pytest plugin: with `AGENT_EVAL_REQUIRE_ADK=1`, a test skipped because google-adk is missing fails instead.

The ADK parity tests call `pytest.importorskip("google.adk...")`, so that a checkout without the `adk` extra still
runs the rest of the suite. CI sets the switch (`.ci/run`), so that a CI without google-adk cannot pass those tests
by skipping them. A skip is google-adk's when its reason is the one `importorskip` gives for a `google.adk` module
("could not import 'google.adk...'", or the version check "module 'google.adk...' has __version__ ..."), whether
raised in a test, in a fixture or at a module's top (then the module's collection fails). Every other skip stays
a skip. Loaded by `tests/conftest.py` (`pytest_plugins`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Generator

import pytest

REQUIRE_ADK = "AGENT_EVAL_REQUIRE_ADK"
_ADK_SKIP = re.compile(r"(could not import|module) 'google\.adk[.']")


def adk_required() -> bool:
    """Whether the switch is on (any value but empty or `0`)."""
    return os.environ.get(REQUIRE_ADK, "") not in ("", "0")


def missing_adk_reason(report: pytest.TestReport | pytest.CollectReport) -> str | None:
    """The skip reason when `report` is a skip caused by a missing (or too old) google-adk, else None."""
    if not report.skipped or not isinstance(report.longrepr, tuple):
        return None
    reason = str(report.longrepr[2]).removeprefix("Skipped: ")
    return reason if _ADK_SKIP.search(reason) else None


def _fail_if_adk_missing(report: pytest.TestReport | pytest.CollectReport) -> None:
    reason = missing_adk_reason(report)
    if reason is None or not adk_required():
        return
    report.outcome = "failed"
    report.longrepr = (
        f"{REQUIRE_ADK}=1 but this test was skipped because google-adk is missing ({reason}); "
        'install it with `pip install -e ".[adk]"` (or unset the variable to allow the skip)'
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, object, object]:
    """Turns a test's (or its fixtures') google-adk skip into a failure when the switch is on."""
    report = yield
    if isinstance(report, pytest.TestReport):
        _fail_if_adk_missing(report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, object, object]:
    """Turns a module-level google-adk skip into a collection failure when the switch is on."""
    report = yield
    if isinstance(report, pytest.CollectReport):
        _fail_if_adk_missing(report)
    return report
