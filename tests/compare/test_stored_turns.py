"""Per-turn seconds read from the store by the database (SQLite and PostgreSQL), for a baseline read without its
invocations: the comparison they give equals the one of the whole reports."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_eval.compare.regression import compare_runs
from agent_eval.compare.stored_turns import stored_turn_seconds
from agent_eval.store import get_engine, load_report
from tests.compare.efficiency_builders import case_run, run_cost, run_report
from tests.store.builders import save_report
from tests.store.conftest import fresh_postgres_database


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh store on SQLite, then on PostgreSQL."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.db'}"
        return
    with fresh_postgres_database() as url:
        yield url


def test_each_case_runs_timed_turns_come_back_in_order(store_url: str) -> None:
    engine = get_engine(store_url)
    cases = [
        case_run("a", [1.5, 0.25, 3.0]),
        case_run("a", [2.0], run_index=1),
        case_run("untimed", [None, 4.0, None]),
        case_run("failed", [], error="ValueError: boom"),
    ]
    save_report(run_report("run-1", cases, None), engine)

    seconds = stored_turn_seconds("run-1", engine)

    assert seconds == {
        ("home", "a", 0): [1.5, 0.25, 3.0],
        ("home", "a", 1): [2.0],
        ("home", "untimed", 0): [4.0],
    }
    assert stored_turn_seconds("no-such-run", engine) == {}


def test_a_baseline_read_without_invocations_compares_as_the_whole_report(store_url: str) -> None:
    engine = get_engine(store_url)
    # 20 turns each: p50 1.1 in both; p95 1.2 + 0.05 × 0.8 = 1.24 → 1.2 + 0.05 × 28.8 = 2.64 (+113%)
    baseline = run_report("base", [case_run("a", [1.0] * 10), case_run("b", [1.2] * 9 + [2.0])], run_cost(0.06))
    current = run_report("new", [case_run("a", [1.0] * 10), case_run("b", [1.2] * 9 + [30.0])], run_cost(0.09))
    for report in (baseline, current):
        save_report(report, engine)
    summaries = load_report("base", engine, details=False), load_report("new", engine, details=False)
    assert all(not case.agent_run.invocations for report in summaries for case in report.cases)

    stored = compare_runs(
        *summaries, turn_seconds=(stored_turn_seconds("base", engine), stored_turn_seconds("new", engine))
    ).efficiency
    whole = compare_runs(baseline, current).efficiency

    assert stored.latency == whole.latency and stored.latency.regressed_percentiles == ["p95"]
    assert (stored.latency.baseline_p95, stored.latency.current_p95) == (pytest.approx(1.24), pytest.approx(2.64))
    assert stored.cost == whole.cost and stored.cost.change == pytest.approx(0.5)
