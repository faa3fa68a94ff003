"""`agent_eval.testing`: evals as pytest tests, failing with the console summary of the failed cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_eval.testing import assert_eval_passes, check_pass_rate
from tests.flows.helpers import write_echo_set
from tests.render.builders import repeated_report, sample_report

AGENTS = "tests.flows.agents_for_tests"


def test_check_pass_rate_raises_with_the_console_summary() -> None:
    with pytest.raises(AssertionError) as raised:
        check_pass_rate(sample_report())

    message = str(raised.value)
    assert message.splitlines()[0] == "20.0% of case runs passed, below the required 100.0%"
    assert "Total: 5  Passed: 1  Failed: 3  Not evaluated: 1  Pass rate: 25.0%" in message
    assert "FAIL home/lowercase" in message
    assert "agent error: ValueError: nope" in message
    assert "FAIL home/fine" not in message


def test_check_pass_rate_accepts_a_lower_bar() -> None:
    check_pass_rate(sample_report(), min_pass_rate=0.2)
    check_pass_rate(repeated_report())
    with pytest.raises(AssertionError, match=r"below the required 25\.0%"):
        check_pass_rate(sample_report(), min_pass_rate=0.25)


def test_a_run_without_cases_does_not_pass() -> None:
    empty = repeated_report(num_runs=0)

    with pytest.raises(AssertionError, match="Total: 0"):
        check_pass_rate(empty)
    check_pass_rate(empty, min_pass_rate=0.0)


@pytest.mark.parametrize("rate", [-0.1, 1.5])
def test_min_pass_rate_outside_0_1_is_refused_before_anything_runs(rate: float) -> None:
    with pytest.raises(ValueError, match="min_pass_rate must be between 0 and 1"):
        assert_eval_passes("no/such/path.evalset.json", min_pass_rate=rate)


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_server")
def test_assert_eval_passes_returns_the_report_or_fails_with_the_summary(tmp_path: Path, sqlite_url: str) -> None:
    eval_file, _ = write_echo_set(tmp_path, ["fine", "boom", "also_fine"])

    report = assert_eval_passes(eval_file, f"{AGENTS}:echo_agent", db_url=sqlite_url)
    assert report.all_passed() and report.summary.total == 3

    with pytest.raises(AssertionError) as raised:
        assert_eval_passes(eval_file, f"{AGENTS}:raising_agent", db_url=sqlite_url)
    assert "66.7% of case runs passed, below the required 100.0%" in str(raised.value)
    assert "/boom" in str(raised.value)
    assert "ValueError: cannot handle" in str(raised.value)

    lenient = assert_eval_passes(eval_file, f"{AGENTS}:raising_agent", db_url=sqlite_url, min_pass_rate=0.6)
    assert [case.eval_id for case in lenient.failures()] == ["boom"]
