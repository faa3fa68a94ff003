"""The console summary: failed and not-evaluated cases apart, pass@k and flaky cases, reused invocations, the
regression check, and the line for a criterion that scored nothing. Exact strings, written by hand."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from agent_eval.compare.regression import compare_runs
from agent_eval.render import format_summary
from agent_eval.render.console import cache_line, unscored_criteria_lines
from agent_eval.render.verdict import regression_lines, regression_verdict
from agent_eval.results.model import CacheSource, RunReport
from agent_eval.schema import CacheOrigin, EvalStatus
from tests.render.builders import (
    PER_EVAL_SET_CONFIG,
    agent_run,
    judged_report,
    result,
    run_report,
    sample_report,
)

PASSED, FAILED, NOT_EVALUATED = EvalStatus.PASSED, EvalStatus.FAILED, EvalStatus.NOT_EVALUATED
NO_ANSWER = "no usable judge answer: every sample was unparseable"
AT = datetime(2026, 12, 2, 21, 14, 37, tzinfo=UTC)


def repeated_statuses(statuses: dict[str, list[EvalStatus]]) -> RunReport:
    runs = [agent_run(eval_id, i) for eval_id, flags in statuses.items() for i in range(len(flags))]
    results = [
        result("m", status, eval_id=eval_id, run_index=i, explanation=NO_ANSWER if status is NOT_EVALUATED else None)
        for eval_id, flags in statuses.items()
        for i, status in enumerate(flags)
    ]
    return run_report(runs, results, num_runs=max(len(flags) for flags in statuses.values()))


def test_failed_and_not_evaluated_cases_are_listed_apart_each_with_why() -> None:
    assert format_summary(sample_report()).splitlines() == [
        "agent-eval run run-1  eval sets: home",
        "agent: examples/home_automation/agent.py:root_agent  runs per case: 1",
        "Total: 5  Passed: 1  Failed: 3  Not evaluated: 1  Pass rate: 25.0%",
        "Agent failures: 1",
        "Config: all eval sets ← one config (response_match_score, tool_trajectory_avg_score)",
        "Average scores:",
        "  tool_trajectory_avg_score  0.750  (threshold 1)",
        "  response_match_score       0.800  (threshold 0.8)",
        "Failed cases:",
        "  FAIL home/two_turns",
        "      response_match_score: score 0.600 < threshold 0.8: turn 2: rouge1 0.200",
        "  FAIL home/lowercase",
        "      tool_trajectory_avg_score: score 0.000 < threshold 1: "
        "expected set_temperature(location='Living Room', temperature=23)",
        "  FAIL home/boom",
        "      agent error: ValueError: nope",
        "Not evaluated cases:",
        "  NOT EVALUATED home/broken_metric",
        "      response_match_score: not evaluated, ZeroDivisionError: division by zero",
    ]


def test_a_judge_that_gave_nothing_usable_is_shown_with_its_reason() -> None:
    runs = [agent_run("a"), agent_run("b")]
    report = run_report(
        runs,
        [
            result("trajectory", PASSED, eval_id="a"),
            result("judge", NOT_EVALUATED, eval_id="a", explanation=NO_ANSWER),
            result("trajectory", PASSED, eval_id="b"),
            result("judge", NOT_EVALUATED, eval_id="b"),
        ],
    )

    assert format_summary(report).splitlines()[2:] == [
        "Total: 2  Passed: 0  Failed: 0  Not evaluated: 2  Pass rate: 0.0%",
        "Config: all eval sets ← ADK defaults",
        "Average scores:",
        "  trajectory  1.000  (threshold 0.5)",
        "Not evaluated cases:",
        "  NOT EVALUATED home/a",
        f"      judge: not evaluated, {NO_ANSWER}",
        "  NOT EVALUATED home/b",
        "      judge: not evaluated, no reason given",
    ]
    assert unscored_criteria_lines(report) == [
        f"criterion judge scored no case run ({NO_ANSWER}): see `agent-eval show r`"
    ]


def test_the_most_common_reason_names_an_unscored_criterion() -> None:
    runs = [agent_run("a"), agent_run("b"), agent_run("c"), agent_run("d", error="ValueError: nope")]
    report = run_report(
        runs,
        [
            result("judge", NOT_EVALUATED, eval_id="a", error="HTTPStatusError: 400 Bad Request"),
            result("judge", NOT_EVALUATED, eval_id="b", explanation=NO_ANSWER),
            result("judge", NOT_EVALUATED, eval_id="c", explanation=NO_ANSWER),
            result("judge", NOT_EVALUATED, eval_id="d", explanation="not scored: the agent failed (ValueError: nope)"),
        ],
    )

    assert unscored_criteria_lines(report) == [
        f"criterion judge scored no case run ({NO_ANSWER}): see `agent-eval show r`"
    ]
    assert unscored_criteria_lines(sample_report()) == []


def test_pass_at_k_and_flaky_cases_of_repeated_runs() -> None:
    report = repeated_statuses({"a": [PASSED, FAILED, PASSED], "b": [PASSED] * 3, "c": [FAILED, NOT_EVALUATED, FAILED]})

    assert format_summary(report).splitlines()[1:5] == [
        "agent: pkg.bot:agent  runs per case: 3",
        "Total: 9  Passed: 5  Failed: 3  Not evaluated: 1  Pass rate: 62.5%",
        "pass@k: pass@1 0.556, pass@2 0.667, pass@3 1.000",
        "Flaky cases: 1 of 3 (home/a)",
    ]
    steady = repeated_statuses({"a": [PASSED, PASSED]})
    assert format_summary(steady).splitlines()[3:5] == ["pass@k: pass@1 1.000, pass@2 1.000", "Flaky cases: 0 of 1"]


def test_reused_invocations_are_counted_with_their_run_and_date() -> None:
    origin = CacheOrigin(run_id="ab12cd34", invoked_at=AT)
    runs = [agent_run(f"c{i}", cached_from=origin if i < 12 else None) for i in range(33)]
    report = run_report(runs, [result("m", PASSED, eval_id=run.eval_id) for run in runs])

    assert format_summary(report).splitlines()[2:4] == [
        "Total: 33  Passed: 33  Failed: 0  Pass rate: 100.0%",
        "12 of 33 invocations reused from run ab12cd34 (2026-12-02 21:14 UTC)",
    ]
    sources = [
        CacheSource(run_id="ab12cd34", invoked_at=AT, case_runs=2),
        CacheSource(run_id=None, case_runs=1),
        CacheSource(run_id="ef56", invoked_at=datetime(2026, 12, 1, 8, 0), case_runs=1),
    ]
    assert cache_line(4, 5, sources) == (
        "4 of 5 invocations reused from runs ab12cd34 (2026-12-02 21:14 UTC), (unrecorded), ef56 (2026-12-01 08:00 UTC)"
    )


def test_the_summary_says_which_config_scored_which_eval_set_on_one_line() -> None:
    report = run_report([agent_run("a")], [result("m", PASSED)])
    mixed = report.model_copy(update={"config": PER_EVAL_SET_CONFIG, "eval_set_ids": ["set20", "set40", "set50"]})
    custom = report.model_copy(update={"config": {"criteria": {"m": {"threshold": 0.5}, "n": {"threshold": 1.0}}}})

    assert format_summary(mixed).splitlines()[3] == (
        "Config: set20 ← mt/test_config.json; set40 ← ADK defaults; set50 ← inline config (final_response_match_v2)"
    )
    assert format_summary(report).splitlines()[3] == "Config: all eval sets ← ADK defaults"
    assert format_summary(custom).splitlines()[3] == "Config: all eval sets ← one config (m, n)"


def test_the_summary_says_which_mode_judged_each_judged_metric() -> None:
    report = judged_report()
    both = judged_report(mode_of_b="agent-eval")

    assert format_summary(report).splitlines()[3:5] == [
        "Judge mode: final_response_match_v2 adk-exact; safety_v1 agent-eval",
        "Config: all eval sets ← ADK defaults",
    ]
    assert format_summary(both).splitlines()[3] == (
        "Judge mode: final_response_match_v2 adk-exact/agent-eval; safety_v1 agent-eval"
    )
    assert not any(line.startswith("Judge mode:") for line in format_summary(sample_report()).splitlines())


# ------------------------------------------------------------------------------------------- regression check
def payload(**changes: Any) -> dict[str, Any]:
    """A stored comparison, as `RegressionReport.to_payload` writes it (the keys the console reads)."""
    value: dict[str, Any] = {
        "regressed": True,
        "baseline_run_id": "old",
        "current_run_id": "r",
        "confidence": 0.95,
        "metrics": [
            {"metric_name": "m", "tolerance": 0.05, "informational": False},
            {"metric_name": "calls", "tolerance": 0.05, "informational": True},
        ],
        "summary": "r vs baseline old: 3 shared cases, 0 added, 0 removed\n"
        "m: 0.900 → 0.500 (−0.400, 95% CI [−0.600, −0.200]) REGRESSED\nREGRESSED: m",
    }
    return {**value, **changes}


def test_the_regression_check_says_against_which_run_by_how_much_and_with_which_test() -> None:
    report = sample_report().model_copy(update={"regression": payload()})

    assert format_summary(report).splitlines()[-6:] == [
        "      response_match_score: not evaluated, ZeroDivisionError: division by zero",
        "Regression check: regressed vs old",
        "  test: paired bootstrap of each metric's mean difference, 95% CI, tolerance 0.05",
        "  r vs baseline old: 3 shared cases, 0 added, 0 removed",
        "  m: 0.900 → 0.500 (−0.400, 95% CI [−0.600, −0.200]) REGRESSED",
        "  REGRESSED: m",
    ]


def test_regression_verdicts_and_tests() -> None:
    tolerances = [
        {"metric_name": "m", "tolerance": 0.05, "informational": False},
        {"metric_name": "n", "tolerance": 0.1, "informational": False},
    ]
    no_baseline = {"regressed": False, "baseline_run_id": None, "summary": "no comparable baseline: 2 earlier runs"}

    assert regression_verdict(payload()) == "regressed vs old"
    assert regression_verdict(payload(regressed=False)) == "ok vs old"
    assert regression_verdict(no_baseline) == "no comparable baseline"
    assert regression_verdict(None) is None
    assert regression_lines(payload(regressed=False, resamples=2000, seed=0, metrics=tolerances))[:2] == [
        "Regression check: ok vs old",
        "  test: paired bootstrap of each metric's mean difference, 95% CI (2000 resamples, seed 0), "
        "tolerance m 0.05, n 0.1",
    ]
    assert regression_lines(no_baseline) == ["Regression check: no comparable baseline: 2 earlier runs"]
    assert regression_lines(None) == []


def test_a_real_comparison_is_printed_whole_under_its_verdict() -> None:
    baseline = repeated_statuses({"a": [PASSED], "b": [PASSED]}).model_copy(update={"run_id": "old"})
    current = repeated_statuses({"a": [FAILED], "b": [PASSED]})
    comparison = compare_runs(baseline, current)
    report = current.model_copy(update={"regression": comparison.to_payload()})

    lines = format_summary(report).splitlines()
    start = lines.index("Regression check: regressed vs old")
    assert lines[start + 1].startswith("  test: paired bootstrap of each metric's mean difference, 95% CI")
    assert lines[start + 2 :] == [f"  {line}" for line in comparison.summary_lines()]
