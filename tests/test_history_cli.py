"""`agent-eval history`, `show` and `compare`: the printed lines, the JSON, exit 2 on an unknown run id."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from sqlmodel import Session, col, update

from agent_eval.cli import main
from agent_eval.compare.regression import compare_runs
from agent_eval.render import format_summary
from agent_eval.results.aggregate import build_report
from agent_eval.results.model import RunReport
from agent_eval.schema import EvalConfig, EvalStatus
from agent_eval.store import (
    Run,
    get_engine,
    mark_run_crashed,
    record_case_run,
    record_regression,
    start_run,
)
from tests.store.builders import (
    AGENT,
    START,
    case_runs,
    eval_set,
    make_report,
    metric_results,
    run_start,
    save_report,
)
from tests.store.conftest import postgres_url  # noqa: F401  (fixture)

OLD_SCORES = {"m": {"a": 0.9, "b": 0.2, "c": 0.6}, "n": {"a": 1.0, "b": 1.0, "c": 1.0}}
NEW_SCORES = {"m": {"a": 0.3, "b": 0.8, "c": 0.6}, "n": {"a": 1.0, "b": 1.0, "c": 1.0}}


@pytest.fixture
def store(tmp_path: Path) -> tuple[str, RunReport]:
    """A SQLite store with run `old` (12:00) and run `new` (13:00, agent failed on `c`); returns `new` too."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    engine = get_engine(url)
    new = make_report("new", [eval_set()], NEW_SCORES, started_at=START + timedelta(hours=1), errors={"c": "E: x"})
    save_report(make_report("old", [eval_set()], OLD_SCORES), engine, eval_sets=[eval_set()])
    save_report(new, engine, eval_sets=[eval_set()], tags=["nightly"])
    return url, new


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_history_prints_one_line_per_run_newest_first(
    store: tuple[str, RunReport], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "history", "--db-url", store[0])

    lines = out.splitlines()
    assert code == 0
    assert [" ".join(line.split()) for line in lines] == [
        "RUN STARTED (UTC) STATUS PASS RATE PASS@K REGRESSION AGENT EVAL SETS MEANS",
        "new 2026-12-02 13:00:00 completed 33.3% (1/3) - - pkg.mod:agent set m=0.550 n=1.000",
        "old 2026-12-02 12:00:00 completed 66.7% (2/3) - - pkg.mod:agent set m=0.567 n=1.000",
    ]
    header, row = lines[0], lines[1]  # columns aligned; a run id is 32 characters long
    assert (header.index("STARTED"), header.index("STATUS"), header.index("RATE") + 4) == (34, 55, 82)
    assert (row.index("2026"), row.index("completed"), row.index(")") + 1) == (34, 55, 82)


def test_history_json_filters_and_limits(store: tuple[str, RunReport], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "history", "--json", "--limit", "1", "--eval-set", "set", "--db-url", store[0])

    assert code == 0
    (run,) = json.loads(out)
    assert (run["run_id"], run["status"], run["tags"], run["passed"], run["total"]) == (
        "new",
        "completed",
        ["nightly"],
        1,
        3,
    )
    assert run["pass_rate"] == 1 / 3
    assert (run["m/mean"], run["n/mean"]) == (pytest.approx(0.55), 1.0)
    assert run["started_at"] == "2026-12-02T13:00:00+00:00"
    assert _run(capsys, "history", "--agent", "someone:else", "--db-url", store[0])[1] == "No runs.\n"


def test_show_prints_the_runs_own_summary(store: tuple[str, RunReport], capsys: pytest.CaptureFixture[str]) -> None:
    url, new = store

    code, out, _ = _run(capsys, "show", "new", "--db-url", url)

    assert code == 0
    assert out == format_summary(new) + "\n"
    assert out.splitlines()[-4:] == [
        "  FAIL set/a",
        "      m: score 0.300 < threshold 0.5",
        "  FAIL set/c",
        "      agent error: E: x",
    ]
    code, out, _ = _run(capsys, "show", "new", "--json", "--db-url", url)
    assert RunReport.model_validate_json(out) == new


@pytest.fixture
def compared(tmp_path: Path) -> str:
    """Runs of two runs per case: `old`; `new` (13:00: `a` flaky, `c`'s agent failed), compared with `old` and
    regressed; `lone` (14:00, another eval set) that found no comparable baseline. Returns the store's URL."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    engine = get_engine(url)
    old = make_report("old", [eval_set()], {"m": {"a": 0.9, "b": 0.8, "c": 0.6}}, num_runs=2)
    runs = case_runs([eval_set()], num_runs=2, errors={"c": "E: x"})
    results = metric_results(runs, {"m": {"a": 0.9, "b": 0.8, "c": 0.6}})
    flaky = next(i for i, r in enumerate(results) if (r.eval_id, r.run_index) == ("a", 1))
    results[flaky] = results[flaky].model_copy(update={"score": 0.2, "status": EvalStatus.FAILED})
    new = build_report(
        run_id="new",
        runs=runs,
        metric_results=results,
        config=EvalConfig(),
        eval_set_ids=["set"],
        agent_reference=AGENT,
        agent_fingerprint="abc123",
        num_runs=2,
        started_at=START + timedelta(hours=1),
        completed_at=START + timedelta(hours=1, seconds=2),
    )
    lone = make_report("lone", [eval_set("other")], {"m": {"a": 0.9}}, started_at=START + timedelta(hours=2))
    for report in (old, new, lone):
        save_report(report, engine, eval_sets=[eval_set(report.eval_set_ids[0])])
    payload = compare_runs(old, new).to_payload()
    record_regression("new", "old", payload["regressed"], payload, engine)
    no_baseline = {"regressed": False, "baseline_run_id": None, "summary": "no comparable baseline: first run"}
    with Session(engine) as session, session.begin():
        session.execute(update(Run).where(col(Run.id) == "lone").values(regressed=False, regression=no_baseline))
    return url


def test_history_shows_pass_at_k_flaky_cases_and_the_regression_verdict(
    compared: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "history", "--db-url", compared)

    assert code == 0
    assert [" ".join(line.split()) for line in out.splitlines()] == [
        "RUN STARTED (UTC) STATUS PASS RATE PASS@K REGRESSION AGENT EVAL SETS MEANS",
        "lone 2026-12-02 14:00:00 completed 100.0% (1/1) +2 not evaluated - no comparable baseline pkg.mod:agent "
        "other m=0.900",
        "new 2026-12-02 13:00:00 completed 50.0% (3/6) pass@2 0.667, 1 flaky regressed vs old pkg.mod:agent set "
        "m=0.675",
        "old 2026-12-02 12:00:00 completed 100.0% (6/6) pass@2 1.000 - pkg.mod:agent set m=0.767",
    ]
    header, row = out.splitlines()[0], out.splitlines()[2]  # the columns stay aligned
    assert (header.index("PASS@K"), header.index("REGRESSION")) == (row.index("pass@2"), row.index("regressed"))
    code, out, _ = _run(capsys, "history", "--json", "--db-url", compared)
    runs = {run["run_id"]: run for run in json.loads(out)}
    assert [
        (run["pass_at_k"], run["flaky_cases"], run["regression"], run["not_evaluated"]) for run in runs.values()
    ] == [
        ({}, 0, "no comparable baseline", 2),
        ({"1": 0.5, "2": pytest.approx(2 / 3)}, 1, "regressed vs old", 0),
        ({"1": 1.0, "2": 1.0}, 0, None, 0),
    ]
    assert (runs["new"]["baseline_run_id"], runs["new"]["regressed"]) == ("old", True)


def test_show_prints_pass_at_k_and_the_stored_regression_verdict(
    compared: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "show", "new", "--db-url", compared)

    lines = out.splitlines()
    assert code == 0
    assert lines[2:5] == [
        "Total: 6  Passed: 3  Failed: 3  Pass rate: 50.0%",
        "pass@k: pass@1 0.500, pass@2 0.667",
        "Flaky cases: 1 of 3 (set/a)",
    ]
    start = lines.index("Regression check: regressed vs old")
    assert lines[start + 1] == "  test: paired bootstrap of each metric's mean difference, 95% CI, tolerance 0.05"
    assert lines[start + 2] == "  new vs baseline old: 3 shared cases, 0 added, 0 removed"
    assert "  hard regressions: set/c" in lines[start:]
    assert lines[-1] == "  REGRESSED: 1 hard-regressed case(s)"
    assert _run(capsys, "show", "lone", "--db-url", compared)[1].splitlines()[-1] == (
        "Regression check: no comparable baseline: first run"
    )


def test_show_of_a_crashed_run_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    engine = get_engine(url)
    report = make_report("half", [eval_set()], OLD_SCORES)
    start_run(run_start(report), [eval_set()], engine)
    record_case_run("half", report.cases[0].agent_run, engine)
    mark_run_crashed("half", engine)

    code, out, _ = _run(capsys, "show", "half", "--db-url", url)

    assert code == 0
    assert out.splitlines()[:4] == [
        "Status: crashed (1 case runs recorded)",
        "agent-eval run half  eval sets: set",
        "agent: pkg.mod:agent  runs per case: 1",
        "Total: 1  Passed: 0  Failed: 0  Not evaluated: 1  Pass rate: 0.0%",
    ]
    assert out.splitlines()[-3:] == ["Not evaluated cases:", "  NOT EVALUATED set/a", "      no criterion result"]
    history_row = _run(capsys, "history", "--db-url", url)[1].splitlines()[1]
    assert history_row.split() == ["half", "2026-12-02", "12:00:00", "crashed", "-", "-", "-", "pkg.mod:agent", "set"]


def test_compare_prints_metric_deltas_and_changed_cases(
    store: tuple[str, RunReport], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "compare", "old", "new", "--db-url", store[0])

    assert code == 0
    assert out.splitlines() == [
        "A: old  2026-12-02 12:00:00  pkg.mod:agent  completed",
        "B: new  2026-12-02 13:00:00  pkg.mod:agent  completed",
        "metric       A       B    delta",
        "m        0.567   0.550   -0.017",
        "n        1.000   1.000   +0.000",
        "Shared case runs: 3  changed: 3",
        "  passed → failed   set/a  m -0.600",
        "  failed → passed   set/b  m +0.600",
        "  passed → failed   set/c",
    ]


def test_compare_lists_cases_sorted_by_eval_set_case_and_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    engine = get_engine(url)
    sets = [eval_set("zoo", ("b", "a")), eval_set("ark", ("d", "c"))]  # written in this order
    save_report(make_report("old", sets, {"m": dict.fromkeys("abcd", 0.9)}, num_runs=2), engine, eval_sets=sets)
    new_scores = {"m": {"a": 0.1, "b": 0.1, "c": None, "d": 0.1}}
    save_report(make_report("new", sets, new_scores, num_runs=2, started_at=START + timedelta(hours=1)), engine)

    code, out, _ = _run(capsys, "compare", "old", "new", "--db-url", url)

    assert code == 0
    assert out.splitlines()[4:] == [
        "Shared case runs: 8  changed: 8",
        "  passed → not evaluated  ark/c (run 1)",
        "  passed → not evaluated  ark/c (run 2)",
        "  passed → failed   ark/d (run 1)  m -0.800",
        "  passed → failed   ark/d (run 2)  m -0.800",
        "  passed → failed   zoo/a (run 1)  m -0.800",
        "  passed → failed   zoo/a (run 2)  m -0.800",
        "  passed → failed   zoo/b (run 1)  m -0.800",
        "  passed → failed   zoo/b (run 2)  m -0.800",
    ]
    cases = json.loads(_run(capsys, "compare", "old", "new", "--json", "--db-url", url)[1])["cases"]
    assert [(c["eval_set_id"], c["eval_id"], c["run_index"]) for c in cases] == [
        (eval_set_id, eval_id, run_index)
        for eval_set_id, eval_id in (("ark", "c"), ("ark", "d"), ("zoo", "a"), ("zoo", "b"))
        for run_index in (0, 1)
    ]


def test_compare_json(store: tuple[str, RunReport], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "compare", "old", "new", "--json", "--db-url", store[0])

    result = json.loads(out)
    assert code == 0
    assert (result["run_a"], result["run_b"], result["changed_eval_sets"]) == ("old", "new", [])
    assert [(m["metric_name"], m["delta"]) for m in result["metrics"]] == [("m", pytest.approx(-1 / 60)), ("n", 0.0)]
    assert [(c["eval_id"], c["change"], c["m/delta"]) for c in result["cases"]] == [
        ("a", "passed → failed", pytest.approx(-0.6)),
        ("b", "failed → passed", pytest.approx(0.6)),
        ("c", "passed → failed", None),
    ]


@pytest.mark.parametrize("argv", [["show", "nope"], ["compare", "old", "nope"], ["show", "nope", "--json"]])
def test_an_unknown_run_id_exits_2_with_one_line(
    argv: list[str], store: tuple[str, RunReport], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, *argv, "--db-url", store[0])

    assert (code, out) == (2, "")
    assert err.splitlines() == [f"agent-eval: error: no run 'nope' in {store[0]}; `agent-eval history` lists the runs"]


def test_a_store_that_cannot_be_reached_exits_4_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "history", "--db-url", "postgresql://postgres@127.0.0.1:1/none")

    assert code == 4  # infrastructure (agent_eval.errors): the store is down, the input is fine
    assert len(err.splitlines()) == 1
    assert err.startswith("agent-eval: error: cannot reach the store at 'postgresql://postgres@127.0.0.1:1/none'")
    assert "Connection refused" in err


@pytest.mark.postgres
def test_history_and_compare_on_postgres(postgres_url: str, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    engine = get_engine(postgres_url)
    save_report(make_report("old", [eval_set()], OLD_SCORES), engine)
    save_report(make_report("new", [eval_set()], NEW_SCORES, started_at=START + timedelta(hours=1)), engine)
    url = postgres_url.replace("postgresql+psycopg://", "postgresql://")  # as users write it

    assert [line.split()[0] for line in _run(capsys, "history", "--db-url", url)[1].splitlines()] == [
        "RUN",
        "new",
        "old",
    ]
    code, out, _ = _run(capsys, "compare", "old", "new", "--db-url", url)
    assert code == 0
    assert out.splitlines()[5:] == [
        "Shared case runs: 3  changed: 2",
        "  passed → failed   set/a  m -0.600",
        "  failed → passed   set/b  m +0.600",
    ]


def test_report_takes_no_verbose_flag(store: tuple[str, RunReport], capsys: pytest.CaptureFixture[str]) -> None:
    """`report` runs no flow, so `-v` (Prefect's logs) would do nothing: it is refused like any unknown flag."""
    with pytest.raises(SystemExit) as exited:
        main(["report", store[1].run_id, "-o", "out.html", "-v", "--db-url", store[0]])
    assert exited.value.code == 2
    assert "unrecognized arguments: -v" in capsys.readouterr().err
