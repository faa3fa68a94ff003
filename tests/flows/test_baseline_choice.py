"""A run is compared only with a comparable baseline (issue 12): real runs of the bundled demo, with a SQLite
store. A changed threshold or an added criterion leaves the next run without a baseline (said plainly, never a
regression); the run after it compares with it; a pinned baseline measured otherwise is compared on the
criteria both runs measured alike, without case flips; an errored run is never a baseline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update
from sqlmodel import Session, col

from agent_eval import evaluate
from agent_eval.cli import main
from agent_eval.errors import EXIT_FAILED
from agent_eval.results.model import RunReport
from agent_eval.store import Run, RunStatus, get_engine, get_run

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_server")]

TRAJECTORY = {"threshold": 1.0, "match_type": "EXACT"}
DEMO_CONFIG: dict[str, Any] = {"criteria": {"tool_trajectory_avg_score": TRAJECTORY, "response_match_score": 0.8}}
STRICTER: dict[str, Any] = {"criteria": {"tool_trajectory_avg_score": TRAJECTORY, "response_match_score": 1.0}}
LATEST = "latest completed run of the same agent, eval set versions and criteria, "


def _run(demo_dir: Path, url: str, config: dict[str, Any], **options: Any) -> RunReport:
    return evaluate(demo_dir / "home_automation.evalset.json", config=config, db_url=url, **options)


def _payload(report: RunReport) -> dict[str, Any]:
    assert report.regression is not None
    return report.regression


def test_a_changed_threshold_has_no_comparable_baseline_and_the_next_run_compares_with_it(
    demo_dir: Path, sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _run(demo_dir, sqlite_url, DEMO_CONFIG)
    stricter_file = tmp_path / "stricter.json"
    stricter_file.write_text(
        '{"criteria": {"tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "EXACT"},'
        ' "response_match_score": 1.0}}',
        encoding="utf-8",
    )
    capsys.readouterr()
    code = main(
        ["run", str(demo_dir / "home_automation.evalset.json"), "--config", str(stricter_file), "--db-url", sqlite_url]
    )
    printed = capsys.readouterr().out
    third = _run(demo_dir, sqlite_url, STRICTER)

    engine = get_engine(sqlite_url)
    second = next(run for run in _runs(sqlite_url) if run.id not in (first.run_id, third.run_id))
    # the stricter threshold fails more cases, yet nothing regressed: there is nothing comparable
    assert second.failed > first.summary.failed
    assert code == EXIT_FAILED
    reason = "1 earlier completed run of this agent and eval set versions used other criteria"
    assert f"no comparable baseline: {reason}" in printed
    assert "REGRESSED" not in printed and "hard regressions" not in printed
    assert (second.baseline_run_id, second.regressed) == (None, None)
    assert second.regression is not None
    assert (second.regression["regressed"], second.regression["baseline_reason"]) == (False, reason)
    # the next run with the same criteria compares with the second one, not with the first
    payload = _payload(third)
    assert payload["baseline_run_id"] == second.id and not third.regressed
    assert payload["baseline_reason"].startswith(LATEST)
    assert payload["summary"].splitlines()[0] == f"baseline {second.id}: {payload['baseline_reason']}"
    assert payload["flipped_to_failing"] == payload["hard_regressions"] == []
    assert get_run(third.run_id, engine).baseline_run_id == second.id


def test_an_added_criterion_has_no_comparable_baseline(demo_dir: Path, sqlite_url: str) -> None:
    first = _run(demo_dir, sqlite_url, DEMO_CONFIG)
    added = {"criteria": {**DEMO_CONFIG["criteria"], "trajectory_exact_match": 1.0}}

    second = _run(demo_dir, sqlite_url, added)

    assert not first.regressed and not second.regressed
    assert _payload(first)["summary"] == "no comparable baseline: no earlier completed run of this agent"
    assert _payload(second)["summary"] == (
        "no comparable baseline: 1 earlier completed run of this agent and eval set versions used other criteria"
    )


def test_regression_settings_do_not_change_the_baseline(demo_dir: Path, sqlite_url: str) -> None:
    first = _run(demo_dir, sqlite_url, DEMO_CONFIG)

    second = _run(demo_dir, sqlite_url, {**DEMO_CONFIG, "regression": {"tolerance": 0.2, "confidence": 0.9}})

    assert _payload(second)["baseline_run_id"] == first.run_id
    assert _payload(second)["baseline_reason"].startswith(LATEST)


def test_a_pinned_baseline_with_other_criteria_compares_only_the_criteria_measured_alike(
    demo_dir: Path, sqlite_url: str
) -> None:
    first = _run(demo_dir, sqlite_url, DEMO_CONFIG)
    other = {
        "criteria": {
            "tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "IN_ORDER"},  # other options
            "response_match_score": 1.0,  # another threshold: the scores still compare
            "trajectory_exact_match": 1.0,  # added
        }
    }

    pinned = _run(demo_dir, sqlite_url, other, baseline_run_id=first.run_id)

    payload = _payload(pinned)
    assert pinned.summary.failed > first.summary.failed  # cases pass and fail by other criteria
    assert (payload["baseline_run_id"], pinned.regressed) == (first.run_id, False)
    assert payload["baseline_reason"].startswith("pinned with --baseline, ")
    assert [metric["metric_name"] for metric in payload["metrics"]] == ["response_match_score"]
    assert payload["metrics"][0]["difference"] == 0.0
    assert payload["flipped_to_failing"] == payload["flipped_to_passing"] == payload["hard_regressions"] == []
    assert payload["notes"] == [
        f"eval set {pinned.eval_set_ids[0]}: the baseline used other criteria; compared only response_match_score "
        "(measured alike); left out: trajectory_exact_match (only in this run), tool_trajectory_avg_score (other "
        "options); pass/fail flips not compared (they need the same criteria)"
    ]


def test_errored_and_cancelled_runs_are_never_the_baseline(demo_dir: Path, sqlite_url: str) -> None:
    engine = get_engine(sqlite_url)
    outage = _run(demo_dir, sqlite_url, DEMO_CONFIG)
    cancelled = _run(demo_dir, sqlite_url, DEMO_CONFIG)
    for run_id, status in ((outage.run_id, RunStatus.ERRORED), (cancelled.run_id, RunStatus.CANCELLED)):
        with Session(engine) as session, session.begin():
            session.execute(update(Run).where(col(Run.id) == run_id).values(status=status))

    latest = _run(demo_dir, sqlite_url, DEMO_CONFIG)

    assert _payload(latest)["summary"] == (
        "no comparable baseline: no earlier completed run of this agent (never a baseline: 1 cancelled, 1 errored)"
    )


def _runs(url: str) -> list[Any]:
    from agent_eval.store import list_runs

    return list_runs(get_engine(url))
