"""Aggregation: the status of a case run, the run's totals, pass rate, pass@k, flaky and reused cases, and the
criteria that scored nothing. Every expected value is computed by hand from the statuses written in the test."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agent_eval.results.aggregate import case_status
from agent_eval.results.model import CacheSource, RunReport
from agent_eval.schema import CacheOrigin, EvalStatus
from tests.render.builders import agent_run, result, run_report, sample_report

PASSED, FAILED, NOT_EVALUATED, INFORMATIONAL = (
    EvalStatus.PASSED,
    EvalStatus.FAILED,
    EvalStatus.NOT_EVALUATED,
    EvalStatus.INFORMATIONAL,
)
NO_ANSWER = "no usable judge answer: every sample was unparseable"
NOT_APPLICABLE = "not applicable: the case has no expected invocations (conversation_scenario)"


# -------------------------------------------------------------------------------------------------- case status
def test_a_criterion_that_could_not_score_leaves_the_case_not_evaluated_never_failed_nor_passed() -> None:
    raised = result("custom", NOT_EVALUATED, error="ZeroDivisionError: division by zero")
    no_answer = result("judge", NOT_EVALUATED, explanation=NO_ANSWER)
    not_applicable = result("trajectory", NOT_EVALUATED, explanation=NOT_APPLICABLE)
    rows = [
        (agent_run(), [result("t", PASSED), result("r", FAILED)]),
        (agent_run(), [result("t", PASSED), no_answer]),
        (agent_run(), [result("t", PASSED), raised]),
        (agent_run(), [result("t", FAILED), raised]),
        (agent_run(), [result("t", PASSED), not_applicable]),
        (agent_run(), [not_applicable]),
        (agent_run(), [result("calls", INFORMATIONAL)]),
        (agent_run(), []),
        (agent_run(error="ValueError: nope"), [no_answer]),
    ]

    assert [case_status(run, metrics) for run, metrics in rows] == [
        FAILED,
        NOT_EVALUATED,  # the judge gave nothing usable: not passed
        NOT_EVALUATED,  # the metric raised: not a failure of the agent
        FAILED,
        PASSED,  # a criterion that does not apply is left out, as ADK does
        NOT_EVALUATED,
        PASSED,
        NOT_EVALUATED,
        FAILED,
    ]
    assert (raised.unscored, no_answer.unscored, not_applicable.unscored) == (True, True, False)
    assert (raised.gates, no_answer.gates, result("t", FAILED).gates) == (False, False, True)


# -------------------------------------------------------------------------------------------------- the summary
def test_the_pass_rate_is_over_the_evaluated_case_runs_with_the_not_evaluated_counted_apart() -> None:
    summary = sample_report().summary  # fine passed; two_turns, lowercase, boom failed; broken_metric raised

    assert (summary.total, summary.passed, summary.failed, summary.not_evaluated) == (5, 1, 3, 1)
    assert summary.pass_rate == 0.25
    assert run_report([agent_run()], [result("judge", NOT_EVALUATED, explanation=NO_ANSWER)]).summary.pass_rate == 0.0


def test_pass_at_k_and_flaky_cases_of_a_run_with_three_runs_per_case() -> None:
    statuses = {"a": [PASSED, FAILED, PASSED], "b": [PASSED, PASSED, PASSED], "c": [FAILED, NOT_EVALUATED, FAILED]}
    runs = [agent_run(eval_id, i) for eval_id, flags in statuses.items() for i in range(len(flags))]
    results = [
        result("m", status, eval_id=eval_id, run_index=i, explanation=NO_ANSWER if status is NOT_EVALUATED else None)
        for eval_id, flags in statuses.items()
        for i, status in enumerate(flags)
    ]

    summary = run_report(runs, results, num_runs=3).summary

    # a: n=3, c=2 → pass@1 2/3, pass@2 1 − C(1,2)/C(3,2) = 1, pass@3 1; b: 1, 1, 1; c: n=2 (one run not
    # evaluated), c=0 → 0, 0. pass@3 averages a and b only (c has two evaluated runs).
    assert summary.pass_at_k == pytest.approx({1: (2 / 3 + 1 + 0) / 3, 2: (1 + 1 + 0) / 3, 3: 1.0})
    assert summary.flaky_cases == ["home/a"]
    assert (summary.passed, summary.failed, summary.not_evaluated) == (5, 3, 1)


def test_a_run_of_single_runs_has_no_pass_at_k() -> None:
    summary = sample_report().summary

    assert (summary.pass_at_k, summary.flaky_cases) == ({}, [])


def test_reused_invocations_are_counted_by_the_run_they_came_from() -> None:
    early, late = datetime(2026, 12, 2, 21, 14, tzinfo=UTC), datetime(2026, 12, 2, 21, 20, tzinfo=UTC)
    runs = [
        agent_run("a", cached_from=CacheOrigin(run_id="ab12cd34", invoked_at=late)),
        agent_run("b"),
        agent_run("c", cached_from=CacheOrigin(run_id="ef56", invoked_at=early)),
        agent_run("d", cached_from=CacheOrigin(run_id="ab12cd34", invoked_at=early)),
    ]
    report = run_report(runs, [result("m", PASSED, eval_id=run.eval_id) for run in runs])

    assert report.summary.cached_case_runs == 3
    assert report.summary.cache_sources == [
        CacheSource(run_id="ab12cd34", invoked_at=early, case_runs=2),
        CacheSource(run_id="ef56", invoked_at=early, case_runs=1),
    ]
    dumped = RunReport.model_validate_json(report.to_json())
    assert dumped.summary == report.summary
    assert dumped.cases[0].agent_run.cached_from == CacheOrigin(run_id="ab12cd34", invoked_at=late)


# ------------------------------------------------------------------------------------------- unscored criteria
def test_a_criterion_that_scored_no_case_run_is_unscored() -> None:
    runs = [agent_run("a"), agent_run("b"), agent_run("c", error="ValueError: nope")]
    results = [
        result("trajectory", PASSED, eval_id="a"),
        result("trajectory", FAILED, eval_id="b"),
        result("trajectory", NOT_EVALUATED, eval_id="c", explanation="not scored: the agent failed"),
        result("judge", NOT_EVALUATED, eval_id="a", explanation=NO_ANSWER),
        result("judge", NOT_EVALUATED, eval_id="b", error="TypeError: bad answer"),
        result("judge", NOT_EVALUATED, eval_id="c", explanation="not scored: the agent failed"),
        result("partly", NOT_EVALUATED, eval_id="a", explanation=NO_ANSWER),
        result("partly", PASSED, eval_id="b"),
    ]

    report = run_report(runs, results)

    assert report.unscored_criteria() == ["judge"]
    assert [case.eval_id for case in report.not_evaluated_cases()] == ["a"]
    assert [case.status for case in report.cases] == [NOT_EVALUATED, FAILED, FAILED]


def test_a_run_whose_agent_always_failed_has_no_unscored_criterion() -> None:
    runs = [agent_run("a", error="ConnectError: refused")]
    report = run_report(runs, [result("judge", NOT_EVALUATED, explanation="not scored: the agent failed")])

    assert report.unscored_criteria() == []
