"""A rerun of a run's failed cases (`rerun --only-failed`) is a subset of that run: it is compared with the run it
came from, on the case runs it ran again only (not "no comparable baseline"), and `history` says what it is; a
rerun of every case is an ordinary run of the same eval sets. A subset of a run that did not complete has no
baseline, and says why."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update
from sqlmodel import Session, col

from agent_eval import evaluate, rerun
from agent_eval.cli import main
from agent_eval.compare.alerts import ALERT_WEBHOOK_ENV
from agent_eval.store import Run, RunStatus, get_engine, get_run
from agent_eval.store.queries import choose_baseline
from tests.flows import regression_agents
from tests.flows.helpers import write_echo_set
from tests.store.builders import START, eval_set, make_report, save_report

AGENT = "tests.flows.regression_agents:switchable_agent"
NAMES = ["alpha", "bravo", "charlie", "delta"]
TRAJECTORY, RESPONSE = "tool_trajectory_avg_score", "response_match_score"
SUBSET_REASON = "the source of this rerun of a subset of its cases, "


@pytest.fixture(autouse=True)
def _no_alert_webhook(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No webhook; every mode of the switchable agent switched back afterwards."""
    monkeypatch.delenv(ALERT_WEBHOOK_ENV, raising=False)
    yield
    regression_agents.MODES.clear()


def _metric(payload: dict[str, Any], name: str) -> dict[str, Any]:
    return next(metric for metric in payload["metrics"] if metric["metric_name"] == name)


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_server")
def test_a_rerun_of_the_failed_cases_is_compared_with_its_source_on_those_case_runs(
    tmp_path: Path, sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    eval_file, messages = write_echo_set(tmp_path, NAMES)
    regression_agents.MODES[messages["bravo"]] = "wrong_tool"  # fails the trajectory
    regression_agents.MODES[messages["delta"]] = "wordy"  # a lower response score that still passes
    source = evaluate(eval_file, agent=AGENT, db_url=sqlite_url)
    assert [case.eval_id for case in source.failed_cases()] == ["bravo"]
    eval_set_id = source.eval_set_ids[0]
    del regression_agents.MODES[messages["bravo"]]  # the agent is fixed
    capsys.readouterr()

    code = main(["rerun", source.run_id, "--only-failed", "--refresh", "--db-url", sqlite_url])

    printed = capsys.readouterr().out.splitlines()
    runs = json.loads(_history_json(sqlite_url, capsys))
    subset = get_run(runs[0]["run_id"], get_engine(sqlite_url))
    assert code == 0
    assert (subset.source_run_id, subset.total, subset.passed) == (source.run_id, 1, 1)
    assert (subset.baseline_run_id, subset.regressed) == (source.run_id, False)
    payload = subset.regression
    assert payload is not None
    assert payload["baseline_reason"] == SUBSET_REASON + f"{source.started_at:%Y-%m-%d %H:%M} UTC"
    # on the one case run it ran: not the three others "removed", and no mean over them
    assert (payload["shared_cases"], payload["added"], payload["removed"]) == (1, [], [])
    assert payload["notes"] == ["a subset of the baseline: compared on the 1 of its 4 case runs this run has"]
    assert payload["flipped_to_passing"] == [f"{eval_set_id}/bravo"]
    trajectory = _metric(payload, TRAJECTORY)
    assert (trajectory["paired_cases"], trajectory["baseline_mean"], trajectory["current_mean"]) == (1, 0.0, 1.0)
    assert _metric(payload, RESPONSE)["paired_cases"] == 1
    start = printed.index(f"Regression check: ok vs {source.run_id}")
    assert printed[start + 2] == f"  baseline {source.run_id}: {payload['baseline_reason']}"
    assert printed[start + 3] == f"  {subset.id} vs baseline {source.run_id}: 1 shared cases, 0 added, 0 removed"
    assert "no comparable baseline" not in "\n".join(printed)
    assert [(run["source"], run["source_run_id"]) for run in runs] == [("subset rerun", source.run_id), (None, None)]

    # a rerun of every case (its run named by a prefix) is no subset: the latest comparable run is its baseline
    everything = rerun(source.run_id[:7], db_url=sqlite_url)

    whole = everything.regression
    assert whole is not None
    assert whole["baseline_run_id"] == source.run_id
    assert whole["baseline_reason"].startswith("latest completed run of the same agent, eval set versions and criteria")
    assert (whole["shared_cases"], whole["removed"], whole["notes"]) == (4, [], [])
    assert [run["source"] for run in json.loads(_history_json(sqlite_url, capsys))] == ["rerun", "subset rerun", None]


def _history_json(url: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["history", "--json", "--db-url", url]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("status", [RunStatus.CRASHED, RunStatus.ERRORED])
def test_a_subset_of_a_run_that_did_not_complete_has_no_baseline(tmp_path: Path, status: str) -> None:
    engine = get_engine(f"sqlite:///{tmp_path / 'runs.db'}")
    full, only_c = eval_set(), eval_set(eval_ids=("c",))
    scores = {"m": {"a": 0.9, "b": 0.9, "c": 0.1}}
    save_report(make_report("earlier", [full], scores), engine, eval_sets=[full])
    save_report(make_report("source", [full], scores, started_at=START + timedelta(hours=1)), engine, eval_sets=[full])
    subset = make_report("subset", [only_c], {"m": {"c": 0.9}}, started_at=START + timedelta(hours=2))
    save_report(subset, engine, eval_sets=[only_c], tags=["rerun"])
    with Session(engine) as session, session.begin():
        session.execute(update(Run).where(col(Run.id) == "subset").values(source_run_id="source"))

    compared = choose_baseline("subset", engine)
    with Session(engine) as session, session.begin():
        session.execute(update(Run).where(col(Run.id) == "source").values(status=status))
    not_compared = choose_baseline("subset", engine)

    assert (compared.run_id, compared.subset) == ("source", True)
    assert compared.reason == SUBSET_REASON + "2026-12-02 13:00 UTC"
    assert (not_compared.run_id, not_compared.subset) == (None, False)
    assert not_compared.reason == (
        f"a rerun of a subset of run source, which is {status}: only a completed run is a baseline"
    )
