"""Reading runs back on SQLite and PostgreSQL: `load_report`, and the DataFrames of `agent_eval.compare.run_history`."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest
from sqlalchemy.engine import Engine

from agent_eval.compare.run_history import HISTORY_COLUMNS, compare, history, show
from agent_eval.render import format_summary
from agent_eval.results.model import RunReport
from agent_eval.schema import EvalSet
from agent_eval.store import (
    RunNotFoundError,
    complete_run,
    get_engine,
    get_run,
    load_report,
    mark_run_crashed,
    record_case_run,
    start_run,
)
from tests.store.builders import START, eval_set, make_report, run_start, save_report


def _write(engine: Engine, report: RunReport, eval_sets: list[EvalSet], *, reverse: bool = False) -> None:
    """As the flow does: start, each case run as it finishes (here: in `reverse` order), complete."""
    start_run(run_start(report), eval_sets, engine)
    for case in reversed(report.cases) if reverse else report.cases:
        record_case_run(report.run_id, case.agent_run, engine)
    complete_run(report, engine)


def test_load_report_rebuilds_the_run_in_the_flows_order(store_url: str) -> None:
    engine = get_engine(store_url)
    sets = [eval_set("first", ("a", "b")), eval_set("second", ("c",))]
    scores = {"m": {"a": 0.9, "b": 0.1, "c": 0.5}, "n": {"a": 1.0, "b": 1.0, "c": None}}
    report = make_report("r1", sets, scores, errors={"c": "ValueError: nope"}, num_runs=2)
    _write(engine, report, sets, reverse=True)  # written newest case first

    loaded = load_report("r1", engine)

    assert loaded == report  # cases, invocations, expected invocations, metrics, summary, timestamps
    assert [(c.run_index, c.eval_set_id, c.eval_id) for c in loaded.cases][:3] == [
        (0, "first", "a"),
        (0, "first", "b"),
        (0, "second", "c"),
    ]
    assert format_summary(loaded) == format_summary(report)
    assert show("r1", db_url=store_url) == report


def test_load_report_without_details_gives_the_case_summaries_a_comparison_reads(store_url: str) -> None:
    engine = get_engine(store_url)
    sets = [eval_set("first", ("a", "b"))]
    report = make_report("r1", sets, {"m": {"a": 0.9, "b": 0.1}}, errors={"b": "ValueError: nope"})
    _write(engine, report, sets)

    loaded = load_report("r1", engine, details=False)

    assert loaded.cases == [case.summary_only() for case in report.cases]
    assert len(report.cases[0].agent_run.invocations) == 1  # what the summaries leave out
    assert loaded.cases[1].agent_run.error == "ValueError: nope" and loaded.summary == report.summary


def test_load_report_of_a_crashed_run_holds_what_was_recorded(store_url: str) -> None:
    engine = get_engine(store_url)
    report = make_report("r1", [eval_set()], {"m": {"a": 0.9, "b": 0.9, "c": 0.9}}, errors={"b": "ValueError: x"})
    start_run(run_start(report), [eval_set()], engine)
    for case in report.cases[:2]:
        record_case_run("r1", case.agent_run, engine)
    mark_run_crashed("r1", engine)

    loaded = load_report("r1", engine)

    assert [(c.eval_id, c.status.name, c.metrics) for c in loaded.cases] == [
        ("a", "NOT_EVALUATED", []),
        ("b", "FAILED", []),
    ]
    summary = loaded.summary
    assert (summary.total, summary.passed, summary.failed, summary.not_evaluated) == (2, 0, 1, 1)
    assert format_summary(loaded).splitlines()[2:6] == [
        "Total: 2  Passed: 0  Failed: 1  Not evaluated: 1  Pass rate: 0.0%",
        "Agent failures: 1",
        "Config: all eval sets ← ADK defaults",
        "Failed cases:",
    ]


def _three_runs(engine: Engine) -> None:
    other = eval_set("other", ("x",))
    save_report(make_report("r1", [eval_set()], {"m": {"a": 1.0, "b": 0.0, "c": 0.5}}), engine)
    r2 = make_report("r2", [eval_set()], {"m": {"a": 1.0, "b": 1.0, "c": 1.0}}, started_at=START + timedelta(hours=1))
    save_report(r2.model_copy(update={"agent_reference": "pkg.other:agent"}), engine, tags=["canary"])
    r3 = make_report("r3", [other], {"m": {"x": 0.25}, "n": {"x": 1.0}}, started_at=START + timedelta(hours=2))
    _write(engine, r3, [other])


def test_history_lists_runs_newest_first_with_pass_rate_and_metric_means(store_url: str) -> None:
    engine = get_engine(store_url)
    _three_runs(engine)

    frame = history(db_url=store_url)

    assert list(frame.columns) == [*HISTORY_COLUMNS, "m/mean", "n/mean"]
    assert list(frame["run_id"]) == ["r3", "r2", "r1"]
    assert list(frame["pass_rate"]) == pytest.approx([0.0, 1.0, 2 / 3])
    assert list(frame["m/mean"]) == pytest.approx([0.25, 1.0, 0.5])
    assert frame["n/mean"].iloc[0] == 1.0 and frame["n/mean"][1:].isna().all()
    assert list(frame["tags"]) == [[], ["canary"], []]
    assert list(frame["status"]) == ["completed"] * 3
    assert frame["started_at"].iloc[0] == START + timedelta(hours=2)


def test_history_filters_by_eval_set_and_agent_and_limits(store_url: str) -> None:
    _three_runs(get_engine(store_url))

    def ids(**filters: object) -> list[str]:
        return list(history(db_url=store_url, **filters)["run_id"])  # type: ignore[arg-type]

    assert ids(eval_set="set") == ["r2", "r1"]
    assert ids(agent="pkg.mod:agent") == ["r3", "r1"]
    assert ids(eval_set="set", agent="pkg.mod:agent") == ["r1"]
    assert ids(limit=1) == ["r3"]
    assert ids(eval_set="nope") == []
    assert list(history(db_url=store_url, eval_set="nope").columns) == HISTORY_COLUMNS


def test_compare_gives_metric_deltas_and_the_changes_of_shared_cases(store_url: str) -> None:
    engine = get_engine(store_url)
    old = make_report("old", [eval_set()], {"m": {"a": 0.9, "b": 0.2, "c": 0.6}})
    new_set = eval_set(eval_ids=("a", "b", "c", "d"))
    new = make_report("new", [new_set], {"m": {"a": 0.3, "b": 0.8, "c": 0.7, "d": 1.0}})
    save_report(old, engine, eval_sets=[eval_set()])
    save_report(new, engine, eval_sets=[new_set])

    result = compare("old", "new", db_url=store_url)

    metrics = result.metrics.to_dict(orient="records")
    assert metrics == [
        {"metric_name": "m", "mean_a": pytest.approx(17 / 30), "mean_b": 0.7, "delta": pytest.approx(0.7 - 17 / 30)}
    ]
    cases = result.cases[["eval_id", "status_a", "status_b", "change", "m/delta"]].to_dict(orient="records")
    assert cases == [
        {
            "eval_id": "a",
            "status_a": "passed",
            "status_b": "failed",
            "change": "passed → failed",
            "m/delta": pytest.approx(-0.6),
        },
        {
            "eval_id": "b",
            "status_a": "failed",
            "status_b": "passed",
            "change": "failed → passed",
            "m/delta": pytest.approx(0.6),
        },
        {
            "eval_id": "c",
            "status_a": "passed",
            "status_b": "passed",
            "change": "unchanged",
            "m/delta": pytest.approx(0.1),
        },
    ]
    assert list(result.changed_cases()["eval_id"]) == ["a", "b", "c"]
    assert result.changed_eval_sets == ["set"]  # "d" was added: a new version of the set
    assert (result.run_a.id, result.run_b.id) == ("old", "new")


def test_compare_of_identical_runs_changes_nothing(store_url: str) -> None:
    engine = get_engine(store_url)
    scores = {"m": {"a": 0.9, "b": None, "c": 0.6}}
    for run_id in ("x", "y"):
        save_report(make_report(run_id, [eval_set()], scores, errors={"b": "E"}), engine, eval_sets=[eval_set()])

    result = compare("x", "y", db_url=store_url)

    assert list(result.metrics["delta"]) == [0.0]
    assert list(result.cases["change"]) == ["unchanged"] * 3
    assert math.isnan(result.cases["m/delta"].iloc[1])
    assert result.changed_cases().empty
    assert result.changed_eval_sets == []
    assert result.to_dict()["cases"][1] == {
        "eval_set_id": "set",
        "eval_id": "b",
        "run_index": 0,
        "status_a": "failed",
        "status_b": "failed",
        "change": "unchanged",
        "m/delta": None,
    }


def test_an_unknown_run_id_raises_run_not_found(store_url: str) -> None:
    engine = get_engine(store_url)
    save_report(make_report("known", [eval_set()], {"m": {"a": 1.0}}), engine)

    with pytest.raises(RunNotFoundError, match="no run 'nope' in "):
        load_report("nope", engine)
    with pytest.raises(RunNotFoundError):
        get_run("nope", engine)
    with pytest.raises(LookupError):
        compare("known", "nope", db_url=store_url)
