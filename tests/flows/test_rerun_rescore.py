"""`rerun` evaluates a stored run's cases again (finished invocations from the cache, failures invoked again);
`rescore` scores its recorded invocations with another config without calling the agent. Both store a new
run linked to the source."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_eval import evaluate, rerun, rescore
from agent_eval.errors import EvalInputError
from agent_eval.schema import EvalStatus
from agent_eval.store import RunNotFoundError, get_engine, get_run, list_runs, load_report
from tests.flows import agents_for_tests
from tests.flows.helpers import echo_case, write_echo_set

pytestmark = pytest.mark.flow

AGENT = "tests.flows.regression_agents:stable_raising_agent"
EXACT = "trajectory_exact_match"


def _calls(messages: dict[str, str]) -> dict[str, int]:
    return {name: agents_for_tests.CALLS[message] for name, message in messages.items()}


def _stored_source(run_id: str, url: str) -> str | None:
    """The source run of a stored run, as its row and its report read back from the store say."""
    engine = get_engine(url)
    row, report = get_run(run_id, engine), load_report(run_id, engine)
    assert row.source_run_id == report.source_run_id
    return row.source_run_id


@pytest.mark.usefixtures("prefect_server")
def test_rerun_invokes_the_failed_case_again_and_takes_the_others_from_the_cache(
    tmp_path: Path, sqlite_url: str
) -> None:
    eval_file, messages = write_echo_set(tmp_path, ["fine", "boom", "also_fine"])
    source = evaluate(eval_file, agent=AGENT, db_url=sqlite_url)
    assert [c.eval_id for c in source.failed_cases()] == ["boom"]
    assert _calls(messages) == {"fine": 1, "boom": 1, "also_fine": 1}

    only_failed = rerun(source.run_id, only_failed=True, db_url=sqlite_url)

    assert _calls(messages) == {"fine": 1, "boom": 2, "also_fine": 1}
    assert [(c.eval_id, c.failure) for c in only_failed.cases] == [("boom", 1)]
    assert only_failed.run_id != source.run_id
    assert _stored_source(only_failed.run_id, sqlite_url) == source.run_id
    row = get_run(only_failed.run_id, get_engine(sqlite_url))
    assert (row.status, row.source_run_id, row.total, row.tags) == ("completed", source.run_id, 1, ["rerun"])
    assert (row.agent_reference, row.config_hash) == (source.agent_reference, source.config_hash)

    everything = rerun(source.run_id, db_url=sqlite_url)

    assert _calls(messages) == {"fine": 1, "boom": 3, "also_fine": 1}  # failures are not cached
    assert [(c.eval_id, c.status) for c in everything.cases] == [
        ("fine", EvalStatus.PASSED),
        ("boom", EvalStatus.FAILED),
        ("also_fine", EvalStatus.PASSED),
    ]
    assert _stored_source(everything.run_id, sqlite_url) == source.run_id

    refreshed = rerun(source.run_id, refresh=True, db_url=sqlite_url)

    assert _calls(messages) == {"fine": 2, "boom": 4, "also_fine": 2}
    assert refreshed.summary.total == 3
    assert _stored_source(refreshed.run_id, sqlite_url) == source.run_id
    runs = list_runs(get_engine(sqlite_url))
    assert len(runs) == 4
    assert sorted(r.source_run_id or "" for r in runs) == ["", source.run_id, source.run_id, source.run_id]


@pytest.mark.usefixtures("prefect_server")
def test_rerun_of_only_failed_cases_when_none_failed_is_bad_input(tmp_path: Path, sqlite_url: str) -> None:
    eval_file, messages = write_echo_set(tmp_path, ["clean"])
    source = evaluate(eval_file, agent=AGENT, db_url=sqlite_url)
    assert source.all_passed()

    with pytest.raises(EvalInputError, match="no failed, unscored or unfinished case to run again"):
        rerun(source.run_id, only_failed=True, db_url=sqlite_url)

    assert _calls(messages) == {"clean": 1}
    assert len(list_runs(get_engine(sqlite_url))) == 1


@pytest.mark.usefixtures("prefect_server")
def test_rescore_scores_the_recorded_invocations_without_calling_the_agent(tmp_path: Path, sqlite_url: str) -> None:
    eval_file, messages = write_echo_set(tmp_path, ["fine", "boom"])
    extra = echo_case("extra", "extra " + tmp_path.name)  # expects a second call the agent never makes
    extra["conversation"][0]["intermediate_data"]["tool_uses"].append({"name": "notify", "args": {}})
    eval_set = json.loads(eval_file.read_text(encoding="utf-8"))
    eval_set["eval_cases"].append(extra)
    eval_file.write_text(json.dumps(eval_set), encoding="utf-8")
    messages["extra"] = "extra " + tmp_path.name
    source = evaluate(eval_file, agent=AGENT, db_url=sqlite_url)
    before = _calls(messages)
    assert before == {"fine": 1, "boom": 1, "extra": 1}

    rescored = rescore(source.run_id, {"criteria": {EXACT: 1.0}}, db_url=sqlite_url)

    assert _calls(messages) == before
    assert rescored.run_id != source.run_id
    assert _stored_source(rescored.run_id, sqlite_url) == source.run_id
    assert (rescored.agent_reference, rescored.agent_fingerprint) == (source.agent_reference, source.agent_fingerprint)
    assert rescored.config["criteria"].keys() == {EXACT}
    scores = {c.eval_id: [(m.metric_name, m.score, m.status) for m in c.metrics] for c in rescored.cases}
    assert scores == {
        "fine": [(EXACT, 1.0, EvalStatus.PASSED)],
        "boom": [(EXACT, None, EvalStatus.NOT_EVALUATED)],
        "extra": [(EXACT, 0.0, EvalStatus.FAILED)],
    }
    boom = next(c for c in rescored.cases if c.eval_id == "boom")
    assert boom.failure == 1 and boom.agent_run.error is not None and "ValueError" in boom.agent_run.error
    assert (rescored.summary.passed, rescored.summary.failed) == (1, 2)
    row = get_run(rescored.run_id, get_engine(sqlite_url))
    assert (row.status, row.source_run_id, row.agent_reference, row.tags) == (
        "completed",
        source.run_id,
        source.agent_reference,
        ["rescore"],
    )


@pytest.mark.usefixtures("prefect_server")
def test_the_reports_of_rerun_and_rescore_name_their_source_run(tmp_path: Path, sqlite_url: str) -> None:
    eval_file, _ = write_echo_set(tmp_path, ["fine", "boom"])
    source = evaluate(eval_file, agent=AGENT, db_url=sqlite_url)

    rerun_report = rerun(source.run_id, only_failed=True, db_url=sqlite_url)
    rescore_report = rescore(source.run_id, {"criteria": {EXACT: 1.0}}, db_url=sqlite_url)

    assert _stored_source(rescore_report.run_id, sqlite_url) == source.run_id
    assert (rerun_report.source_run_id, rescore_report.source_run_id) == (source.run_id, source.run_id)


def test_an_unknown_run_id_is_bad_input(sqlite_url: str) -> None:
    with pytest.raises(RunNotFoundError, match="no run 'nope'"):
        rerun("nope", db_url=sqlite_url)
    with pytest.raises(EvalInputError, match="no run 'nope'"):
        rescore("nope", {"criteria": {EXACT: 1.0}}, db_url=sqlite_url)
