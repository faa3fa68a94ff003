"""Run comparison with statistics: paired bootstrap intervals, tolerances, flips, flakiness, pass@k.

Every report here is built by hand; the expected values are computed by hand from the scores written in each
test (the bootstrap interval is checked against a slow loop over the same random draws).
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping

import numpy as np
import pytest

from agent_eval.compare.regression import CaseRef, compare_runs
from agent_eval.results.aggregate import summarize
from agent_eval.results.model import CaseResult, MetricResult, RunReport
from agent_eval.results.stats import (
    BOOTSTRAP_SEED,
    paired_bootstrap_interval,
    paired_difference,
    pass_at_k,
    pass_at_ks,
)
from agent_eval.schema import AgentRun, EvalStatus
from tests.render.builders import COMPLETED, RESPONSE, STARTED, TRAJECTORY

Scores = Mapping[str, float | None]


def case(
    eval_id: str,
    scores: Scores,
    *,
    passed: bool = True,
    run_index: int = 0,
    status: EvalStatus | None = None,
) -> CaseResult:
    """One case run of eval set `home`; every metric gets the case's status (NOT_EVALUATED when unscored)."""
    case_status = EvalStatus.PASSED if passed else EvalStatus.FAILED
    metrics = [
        MetricResult(
            metric_name=name,
            eval_set_id="home",
            eval_id=eval_id,
            run_index=run_index,
            score=score,
            status=status or (case_status if score is not None else EvalStatus.NOT_EVALUATED),
        )
        for name, score in scores.items()
    ]
    agent_run = AgentRun(eval_set_id="home", eval_id=eval_id, run_index=run_index)
    return CaseResult(
        eval_set_id="home",
        eval_id=eval_id,
        run_index=run_index,
        status=case_status,
        agent_run=agent_run,
        metrics=metrics,
    )


def report(run_id: str, cases: list[CaseResult], num_runs: int = 1) -> RunReport:
    return RunReport(
        run_id=run_id,
        eval_set_ids=["home"],
        agent_reference="pkg.bot:agent",
        agent_fingerprint="abc123",
        config={},
        config_hash="hash",
        num_runs=num_runs,
        started_at=STARTED,
        completed_at=COMPLETED,
        cases=cases,
        summary=summarize(cases),
    )


def scored(run_id: str, values: list[float | None], metric: str = RESPONSE) -> RunReport:
    """Cases c0, c1, ... with one score each on `metric`."""
    return report(run_id, [case(f"c{i}", {metric: value}) for i, value in enumerate(values)])


def repeated(run_id: str, passes: dict[str, list[bool]]) -> RunReport:
    """Each case run len(flags) times, passing where its flag is True (score 1.0 on every run)."""
    cases = [
        case(eval_id, {RESPONSE: 1.0}, passed=flag, run_index=i)
        for eval_id, flags in passes.items()
        for i, flag in enumerate(flags)
    ]
    return report(run_id, cases, num_runs=max(len(flags) for flags in passes.values()))


def loop_interval(differences: list[float], confidence: float, resamples: int, seed: int) -> tuple[float, float]:
    """The percentile bootstrap, slowly: one resample at a time from the same generator, linear interpolation."""
    rng = np.random.default_rng(seed)
    n = len(differences)
    means = sorted(float(sum(differences[i] for i in rng.integers(0, n, size=n))) / n for _ in range(resamples))

    def quantile(q: float) -> float:
        position = (resamples - 1) * q
        below = math.floor(position)
        above = min(below + 1, resamples - 1)
        return means[below] + (position - below) * (means[above] - means[below])

    alpha = (1 - confidence) / 2
    return quantile(alpha), quantile(1 - alpha)


# ------------------------------------------------------------------------------------------------ metrics
def test_a_total_drop_regresses_with_a_degenerate_interval() -> None:
    comparison = compare_runs(scored("base", [1.0, 1.0, 1.0, 1.0]), scored("new", [0.0, 0.0, 0.0, 0.0]))
    [metric] = comparison.metrics
    assert (metric.baseline_mean, metric.current_mean, metric.difference) == (1.0, 0.0, -1.0)
    assert (metric.ci_low, metric.ci_high) == (-1.0, -1.0)
    assert (metric.paired_cases, metric.left_out) == (4, 0)
    assert metric.regressed and not metric.improved
    assert comparison.regressed
    assert "response_match_score: 1.000 → 0.000 (−1.000, 95% CI [−1.000, −1.000]) REGRESSED" in (
        comparison.summary_lines()
    )
    assert comparison.summary_lines()[-1] == "REGRESSED: response_match_score"


def test_a_drop_within_the_tolerance_does_not_regress() -> None:
    comparison = compare_runs(scored("base", [0.9, 0.8, 0.7, 0.6]), scored("new", [0.89, 0.79, 0.69, 0.59]))
    [metric] = comparison.metrics
    assert metric.difference == pytest.approx(-0.01)
    assert metric.ci_high is not None and metric.ci_high < 0  # the drop is real, but within 0.05
    assert not metric.regressed
    assert not comparison.regressed
    assert comparison.summary_lines()[-1] == "no regression"


def test_a_noisy_drop_whose_interval_spans_zero_does_not_regress() -> None:
    # differences −0.6, +0.4, −0.5, +0.3: the mean drops by 0.1 (more than the tolerance) but the interval spans 0
    comparison = compare_runs(scored("base", [0.9, 0.5, 0.9, 0.6]), scored("new", [0.3, 0.9, 0.4, 0.9]))
    [metric] = comparison.metrics
    assert metric.difference == pytest.approx(-0.1)
    assert metric.ci_low is not None and metric.ci_high is not None
    assert metric.ci_low < -0.1 < 0 < metric.ci_high
    assert not metric.regressed and not metric.improved


def test_the_interval_equals_a_slow_loop_over_the_same_draws() -> None:
    differences = [-0.6, 0.4, -0.5, 0.3, 0.05]
    expected = loop_interval(differences, confidence=0.9, resamples=500, seed=7)
    actual = paired_bootstrap_interval(differences, confidence=0.9, resamples=500, seed=7)
    assert actual == pytest.approx(expected, abs=1e-12)
    comparison = compare_runs(
        scored("base", [0.9, 0.5, 0.9, 0.6, 0.5]),
        scored("new", [0.3, 0.9, 0.4, 0.9, 0.55]),
        confidence=0.9,
        resamples=500,
        seed=7,
    )
    [metric] = comparison.metrics
    assert (metric.ci_low, metric.ci_high) == pytest.approx(expected, abs=1e-12)


def test_the_interval_brackets_the_mean_and_narrows_with_more_cases() -> None:
    pattern = [-0.3, 0.1, -0.2, 0.0]
    few = paired_bootstrap_interval(pattern)
    many = paired_bootstrap_interval(pattern * 25)
    assert few[0] < -0.1 < few[1]
    assert many[0] < -0.1 < many[1]
    assert many[1] - many[0] < (few[1] - few[0]) / 3  # 25 times the cases: about a fifth of the width


def test_a_large_comparison_is_vectorised() -> None:
    differences = np.random.default_rng(1).normal(-0.02, 0.1, size=1000)
    low, high = paired_bootstrap_interval(differences, resamples=2000)
    assert low < differences.mean() < high
    assert high - low == pytest.approx(2 * 1.96 * differences.std() / math.sqrt(1000), rel=0.15)


def test_the_same_seed_gives_the_same_report() -> None:
    noise = np.random.default_rng(5).uniform(-0.3, 0.3, size=30)
    baseline, current = scored("base", [0.5] * 30), scored("new", [0.5 + float(x) for x in noise])
    first = compare_runs(baseline, current, seed=3)
    assert compare_runs(baseline, current, seed=3) == first
    other = compare_runs(baseline, current, seed=4).metrics[0]
    assert (other.ci_low, other.ci_high) != (first.metrics[0].ci_low, first.metrics[0].ci_high)


def test_a_tiny_samples_verdict_does_not_depend_on_the_order_the_case_runs_finished_in() -> None:
    # Differences 0.26, -0.22, -0.24, -0.70, -0.49. Paired in report order, the interval's upper bound went from
    # -0.027 (regressed) to +0.060 (not) over the orders of the five case runs: the verdict flipped.
    before, after = [0.7, 0.9, 0.9, 0.9, 0.9], [0.96, 0.68, 0.66, 0.2, 0.41]
    baseline, current = scored("base", before), scored("new", after)
    expected = loop_interval([c - b for b, c in zip(before, after, strict=True)], 0.95, 2000, 0)

    outcomes = {
        (metric.ci_low, metric.ci_high, metric.regressed)
        for order in itertools.permutations(current.cases)
        for metric in compare_runs(baseline, report("new", list(order))).metrics
    }
    again = compare_runs(baseline, current).metrics[0]

    assert len(outcomes) == 1
    ((low, high, regressed),) = outcomes
    assert (again.ci_low, again.ci_high, again.regressed) == (low, high, regressed)
    assert (low, high) == pytest.approx(expected, abs=1e-12)
    assert compare_runs(baseline, current).seed == BOOTSTRAP_SEED == 0


def test_per_metric_tolerances() -> None:
    before = {RESPONSE: 0.9, TRAJECTORY: 0.9}
    after = {RESPONSE: 0.8, TRAJECTORY: 0.8}
    baseline = report("base", [case(f"c{i}", before) for i in range(4)])
    current = report("new", [case(f"c{i}", after) for i in range(4)])
    by_name = {m.metric_name: m for m in compare_runs(baseline, current, tolerance={RESPONSE: 0.2}).metrics}
    assert (by_name[RESPONSE].tolerance, by_name[RESPONSE].regressed) == (0.2, False)
    assert (by_name[TRAJECTORY].tolerance, by_name[TRAJECTORY].regressed) == (0.05, True)  # the default
    assert not any(m.regressed for m in compare_runs(baseline, current, tolerance=0.2).metrics)


def test_an_improvement_is_flagged_symmetrically() -> None:
    comparison = compare_runs(scored("base", [0.5, 0.6, 0.5, 0.6]), scored("new", [0.8, 0.9, 0.8, 0.9]))
    [metric] = comparison.metrics
    assert metric.difference == pytest.approx(0.3)
    assert metric.improved and not metric.regressed
    assert not comparison.regressed
    assert comparison.summary_lines()[1].endswith("(+0.300, 95% CI [+0.300, +0.300]) IMPROVED")


def test_unscored_cases_are_left_out_of_the_pairing() -> None:
    comparison = compare_runs(scored("base", [1.0, 1.0, None, 1.0]), scored("new", [0.0, 0.0, 0.0, None]))
    [metric] = comparison.metrics
    assert (metric.paired_cases, metric.left_out) == (2, 2)
    assert (metric.baseline_mean, metric.current_mean, metric.difference) == (1.0, 0.0, -1.0)
    assert "(2 unscored cases left out)" in comparison.summary_lines()[1]


def test_repeated_runs_are_averaged_per_case_before_pairing() -> None:
    # c0 scores 1.0 and 0.0 in its two current runs (mean 0.5); c1 has one unscored run (mean of the other: 0.8)
    baseline = report("base", [case(eid, {RESPONSE: 1.0}, run_index=i) for eid in ("c0", "c1") for i in (0, 1)], 2)
    current = report(
        "new",
        [
            case("c0", {RESPONSE: 1.0}),
            case("c0", {RESPONSE: 0.0}, run_index=1),
            case("c1", {RESPONSE: 0.8}),
            case("c1", {RESPONSE: None}, run_index=1),
        ],
        2,
    )
    [metric] = compare_runs(baseline, current).metrics
    assert metric.paired_cases == 2
    assert metric.current_mean == pytest.approx((0.5 + 0.8) / 2)
    assert metric.difference == pytest.approx(-0.35)


def test_an_informational_metric_is_compared_but_never_gated() -> None:
    calls = "tool_call_count_v1"
    baseline = report("base", [case(f"c{i}", {calls: 1.0}, status=EvalStatus.INFORMATIONAL) for i in range(4)])
    current = report("new", [case(f"c{i}", {calls: 3.0}, status=EvalStatus.INFORMATIONAL) for i in range(4)])
    [metric] = compare_runs(baseline, current).metrics
    assert (metric.difference, metric.informational) == (2.0, True)
    assert not metric.improved and not metric.regressed


def test_one_shared_case_gives_the_difference_as_the_interval() -> None:
    comparison = compare_runs(scored("base", [0.9]), scored("new", [0.5]))
    [metric] = comparison.metrics
    assert metric.difference == pytest.approx(-0.4)
    assert metric.ci_low == metric.ci_high == metric.difference
    assert metric.regressed
    assert metric.note == "one paired case: the interval is the difference itself"


def test_identical_runs_show_no_difference() -> None:
    comparison = compare_runs(scored("base", [0.9, 0.5, 0.7]), scored("new", [0.9, 0.5, 0.7]))
    [metric] = comparison.metrics
    assert (metric.difference, metric.ci_low, metric.ci_high) == (0.0, 0.0, 0.0)
    assert not metric.regressed and not metric.improved and not comparison.regressed
    assert comparison.summary_lines()[1] == "response_match_score: 0.700 → 0.700 (0.000, 95% CI [0.000, 0.000])"


# -------------------------------------------------------------------------------------------------- cases
def test_cases_in_one_run_only_are_listed_not_compared() -> None:
    baseline = report("base", [case("x", {RESPONSE: 1.0}), case("y", {RESPONSE: 1.0})])
    current = report("new", [case("y", {RESPONSE: 1.0}), case("z", {RESPONSE: 0.0}, passed=False)])
    comparison = compare_runs(baseline, current)
    assert comparison.added == [CaseRef(eval_set_id="home", eval_id="z")]
    assert comparison.removed == [CaseRef(eval_set_id="home", eval_id="x")]
    assert [c.label for c in comparison.cases] == ["home/y"]
    assert comparison.metrics[0].paired_cases == 1
    assert not comparison.regressed
    assert "added: home/z" in comparison.summary_lines()
    assert "removed: home/x" in comparison.summary_lines()


def test_no_shared_cases_compares_nothing() -> None:
    comparison = compare_runs(report("base", [case("x", {RESPONSE: 1.0})]), report("new", [case("z", {RESPONSE: 0.0})]))
    assert (comparison.metrics, comparison.cases) == ([], [])
    assert not comparison.regressed
    assert "no shared cases: nothing was compared and nothing regressed" in comparison.notes


def test_flips_with_one_run_per_case() -> None:
    baseline = report("base", [case("a", {RESPONSE: 1.0}), case("b", {RESPONSE: 0.0}, passed=False)])
    current = report("new", [case("a", {RESPONSE: 1.0}, passed=False), case("b", {RESPONSE: 0.0})])
    comparison = compare_runs(baseline, current)
    assert [c.label for c in comparison.flipped_to_failing] == ["home/a"]
    assert [c.label for c in comparison.flipped_to_passing] == ["home/b"]
    assert [c.label for c in comparison.hard_regressions] == ["home/a"]  # one run: a flip is a hard regression
    assert comparison.regressed  # by the hard regression alone: the scores did not move
    lines = comparison.summary_lines()
    assert "flipped to failing: home/a" in lines
    assert "flipped to passing: home/b" in lines
    assert lines[-1] == "REGRESSED: 1 hard-regressed case(s)"


def test_hard_regression_and_flakiness_with_three_runs() -> None:
    baseline = repeated("base", {"gone": [True] * 3, "wobbly": [True] * 3, "steady": [True] * 3})
    current = repeated("new", {"gone": [False] * 3, "wobbly": [True, False, True], "steady": [True] * 3})
    comparison = compare_runs(baseline, current)
    gone, wobbly, steady = comparison.cases
    assert gone.hard_regression and gone.flipped_to_failing and not gone.flaky
    assert wobbly.flaky and wobbly.flipped_to_failing and not wobbly.hard_regression
    assert not (steady.flaky or steady.flipped_to_failing or steady.hard_regression)
    assert wobbly.baseline_pass_rate == 1.0
    assert wobbly.current_pass_rate == pytest.approx(2 / 3)
    assert comparison.regressed
    assert [c.label for c in comparison.flaky_cases] == ["home/wobbly"]
    assert "flaky: home/wobbly (2/3 passed)" in comparison.summary_lines()


def test_a_case_that_merely_became_flaky_is_not_a_regression() -> None:
    baseline = repeated("base", {"wobbly": [True] * 3})
    current = repeated("new", {"wobbly": [False, True, True]})
    comparison = compare_runs(baseline, current)
    assert comparison.flaky_cases and comparison.flipped_to_failing and not comparison.regressed


def test_pass_at_k_with_four_runs_and_one_pass() -> None:
    comparison = compare_runs(repeated("base", {"a": [True] * 4}), repeated("new", {"a": [False, False, True, False]}))
    [a] = comparison.cases
    assert a.pass_at_k == pytest.approx({1: 0.25, 2: 0.5, 3: 0.75, 4: 1.0})
    assert a.baseline_pass_at_k == {1: 1.0, 2: 1.0, 3: 1.0, 4: 1.0}
    assert comparison.pass_at_k == pytest.approx({1: 0.25, 2: 0.5, 3: 0.75, 4: 1.0})
    assert "pass@k: pass@1 0.250, pass@2 0.500, pass@3 0.750, pass@4 1.000" in comparison.summary_lines()


def test_report_pass_at_k_averages_the_cases_that_ran_k_times() -> None:
    # a: 2 runs, 1 pass (pass@1 0.5, pass@2 1.0); b: 1 run, passed (pass@1 1.0)
    runs = {"a": [True, False], "b": [True]}
    comparison = compare_runs(repeated("base", runs), repeated("new", runs))
    assert comparison.pass_at_k == {1: 0.75, 2: 1.0}


def test_pass_at_k_estimator() -> None:
    assert [pass_at_k(4, 1, k) for k in (1, 2, 4)] == [0.25, 0.5, 1.0]
    assert pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10)
    assert pass_at_ks(3, 0) == {1: 0.0, 2: 0.0, 3: 0.0}
    assert pass_at_ks(3, 3) == {1: 1.0, 2: 1.0, 3: 1.0}
    with pytest.raises(ValueError, match="k=5"):
        pass_at_k(4, 1, 5)


# ------------------------------------------------------------------------------------------------- output
def test_the_payload_is_json() -> None:
    baseline = repeated("base", {"gone": [True] * 2, "wobbly": [True] * 2})
    current = repeated("new", {"gone": [False] * 2, "wobbly": [True, False]})
    payload = json.loads(json.dumps(compare_runs(baseline, current).to_payload()))
    assert payload["regressed"] is True
    assert (payload["baseline_run_id"], payload["current_run_id"], payload["shared_cases"]) == ("base", "new", 2)
    assert payload["hard_regressions"] == ["home/gone"]
    assert payload["regressed_metrics"] == []
    assert payload["flipped_to_failing"] == ["home/gone", "home/wobbly"]
    assert payload["flaky"] == [
        {"case": "home/wobbly", "passes": 1, "runs": 2, "pass_rate": 0.5, "pass_at_k": {"1": 0.5, "2": 1.0}}
    ]
    assert payload["pass_at_k"] == {"1": 0.25, "2": 0.5}
    [metric] = payload["metrics"]
    assert metric["metric_name"] == RESPONSE
    assert (metric["difference"], metric["ci_low"], metric["ci_high"]) == (0.0, 0.0, 0.0)
    assert payload["summary"].endswith("REGRESSED: 1 hard-regressed case(s)")


def test_bad_settings_are_rejected() -> None:
    baseline = scored("base", [1.0])
    with pytest.raises(ValueError, match=r"confidence must be in \(0, 1\).*1\.5"):
        compare_runs(baseline, baseline, confidence=1.5)
    with pytest.raises(ValueError, match="resamples must be at least 1"):
        compare_runs(baseline, baseline, resamples=0)
    with pytest.raises(ValueError, match="tolerance for 'response_match_score'"):
        compare_runs(baseline, baseline, tolerance={RESPONSE: -0.1})
    with pytest.raises(ValueError, match="at least one difference"):
        paired_difference([], confidence=0.95, resamples=10, seed=0)
