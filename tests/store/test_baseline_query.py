"""`choose_baseline` on a real store (SQLite and PostgreSQL): only a completed run of the same agent, eval set
versions and criteria is a baseline, regression settings aside, runs of earlier releases included; otherwise
the reason says why there is none."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from agent_eval.schema import EvalConfig, EvalSet
from agent_eval.store import Run, RunStatus, get_engine
from agent_eval.store.queries import BaselineChoice, choose_baseline, find_baseline
from tests.store.builders import START, eval_set, make_report, save_report
from tests.store.conftest import postgres_url  # noqa: F401  (fixture)

SCORES = {"response_match_score": {"a": 1.0, "b": 0.9, "c": 0.2}}
CONFIG = {
    "criteria": {"tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "EXACT"}, "response_match_score": 0.8}
}
LATEST = "latest completed run of the same agent, eval set versions and criteria"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Engine:
    """A fresh store on SQLite, and (marker `postgres`) on the local PostgreSQL server."""
    if request.param == "sqlite":
        return get_engine(f"sqlite:///{tmp_path / 'store.db'}")
    return get_engine(str(request.getfixturevalue("postgres_url")))


def _save(
    engine: Engine,
    run_id: str,
    minutes: int,
    config: dict[str, Any] = CONFIG,
    *,
    status: str = RunStatus.COMPLETED,
    sets: list[EvalSet] | None = None,
) -> str:
    """A run of `AGENT` started `minutes` after START, with this config (as stored) and end status."""
    sets = sets or [eval_set()]
    report = make_report(run_id, sets, SCORES, started_at=START + timedelta(minutes=minutes))
    stored = EvalConfig.model_validate(config)
    report = report.model_copy(update={"config": config, "config_hash": stored.fingerprint()})
    save_report(report, engine, eval_sets=sets)
    if status != RunStatus.COMPLETED:
        with Session(engine) as session, session.begin():
            session.execute(update(Run).where(col(Run.id) == run_id).values(status=status))
    return run_id


def test_the_latest_completed_run_with_the_same_criteria_is_the_baseline(engine: Engine) -> None:
    _save(engine, "old", 0)
    _save(engine, "good", 10)
    for minutes, status in enumerate([RunStatus.ERRORED, RunStatus.CANCELLED, RunStatus.CRASHED], start=20):
        _save(engine, status, minutes, status=status)
    _save(engine, "now", 30)

    assert choose_baseline("now", engine) == BaselineChoice("good", f"{LATEST}, 2026-12-02 12:10 UTC")
    assert find_baseline("now", engine) == "good"


def test_other_criteria_mean_no_baseline_and_the_reason_counts_them(engine: Engine) -> None:
    _save(engine, "a", 0)
    _save(engine, "b", 1)
    _save(engine, "outage", 2, status=RunStatus.ERRORED)
    stricter = {"criteria": {**CONFIG["criteria"], "response_match_score": 0.9}}
    _save(engine, "now", 5, stricter)

    choice = choose_baseline("now", engine)

    assert choice == BaselineChoice(
        None,
        "2 earlier completed runs of this agent and eval set versions used other criteria "
        "(never a baseline: 1 errored)",
    )


def test_an_added_criterion_or_other_options_mean_no_baseline(engine: Engine) -> None:
    _save(engine, "before", 0)
    added = {"criteria": {**CONFIG["criteria"], "tool_name_match": 1.0}}
    in_order = {
        "criteria": {**CONFIG["criteria"], "tool_trajectory_avg_score": {"threshold": 1.0, "matchType": "IN_ORDER"}}
    }
    _save(engine, "added", 1, added)
    _save(engine, "in_order", 2, in_order)

    assert choose_baseline("added", engine).run_id is None
    assert choose_baseline("in_order", engine).run_id is None


def test_regression_settings_and_spelling_do_not_change_comparability(engine: Engine) -> None:
    # a row as the first releases stored it: bare thresholds, camelCase options, no regression section
    legacy = {
        "criteria": {"tool_trajectory_avg_score": {"threshold": 1, "matchType": "EXACT"}, "response_match_score": 0.8}
    }
    _save(engine, "legacy", 0, legacy)
    webhook = {"tolerance": 0.2, "fail_on_regression": True, "alert_webhook": "https://hooks.example/T0/B0/x"}
    _save(engine, "now", 5, {**CONFIG, "regression": webhook})

    assert choose_baseline("now", engine).run_id == "legacy"


def test_other_eval_set_versions_or_no_earlier_run_mean_no_baseline(engine: Engine) -> None:
    _save(engine, "first", 0)
    _save(engine, "edited", 5, sets=[eval_set(version="-v2")])

    assert choose_baseline("first", engine) == BaselineChoice(None, "no earlier completed run of this agent")
    assert choose_baseline("edited", engine) == BaselineChoice(
        None, "1 earlier completed run of this agent evaluated other eval sets or other versions of them"
    )


def test_a_pinned_run_is_used_whatever_its_criteria_but_never_an_outage(engine: Engine) -> None:
    _save(engine, "other_criteria", 0, {"criteria": {"response_match_score": 0.5}})
    _save(engine, "outage", 1, status=RunStatus.ERRORED)
    _save(engine, "now", 5)

    assert choose_baseline("now", engine, pinned="other_criteria") == BaselineChoice(
        "other_criteria", "pinned with --baseline, 2026-12-02 12:00 UTC"
    )
    assert choose_baseline("now", engine, pinned="outage") == BaselineChoice(
        None, "the pinned baseline run 'outage' is errored: only a completed run is a baseline"
    )
    assert choose_baseline("now", engine, pinned="nope").reason == "the pinned baseline run 'nope' is not in the store"


def test_per_eval_set_configs_compare_each_eval_set(engine: Engine) -> None:
    sets = [eval_set("x"), eval_set("y")]
    loose = {"criteria": {"response_match_score": 0.5}}
    per_set = {"per_eval_set": {"x": CONFIG, "y": loose}, "config_files": {"x": "x/test_config.json", "y": None}}
    swapped = {"per_eval_set": {"x": loose, "y": CONFIG}, "config_files": {}}
    _save(engine, "per_set", 0, CONFIG, sets=sets)  # one config for both
    _save(engine, "swapped", 1, CONFIG, sets=sets)
    for run_id, config in (("per_set", per_set), ("swapped", swapped)):
        with Session(engine) as session, session.begin():
            session.execute(update(Run).where(col(Run.id) == run_id).values(config=config))
    _save(engine, "same_for_both", 2, CONFIG, sets=sets)
    _save(engine, "now", 5, CONFIG, sets=sets)
    with Session(engine) as session, session.begin():
        session.execute(update(Run).where(col(Run.id) == "now").values(config=per_set))

    assert choose_baseline("now", engine).run_id == "per_set"
