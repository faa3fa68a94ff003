"""Cost per case run and per-turn latency against the baseline (issue 31, item 6).

Every report is built by hand with its total cost and each turn's seconds; the expected figures are computed by
hand from them in each test (percentiles: linear interpolation at (n − 1)·q of the sorted seconds; with 20 turns,
p50 sits halfway between the 10th and 11th, p95 at the 19th plus 0.05 of the way to the 20th).
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from agent_eval.compare.comparison import RegressionReport, no_baseline_payload
from agent_eval.compare.efficiency import (
    EfficiencyComparison,
    EfficiencyRules,
    compare_efficiency,
    percentile,
    relative_change,
)
from agent_eval.compare.regression import compare_runs
from agent_eval.results.model import RunReport
from tests.compare.efficiency_builders import case_run, run_cost, run_report, timed_run, turns_run

# baseline: p50 (1.0 + 1.2) / 2 = 1.1, p95 2.0 + 0.05 × 2.0 = 2.1; $0.42 over 20 case runs = $0.021
BASELINE = [1.0] * 10 + [1.2] * 5 + [1.4, 1.6, 1.8, 2.0, 4.0]
# current: p50 (1.0 + 1.4) / 2 = 1.2 (+9%), p95 3.4 + 0.05 × 2.6 = 3.53 (+68%); $0.58 over 20 = $0.029 (+38%)
SLOWER = [1.0] * 10 + [1.4] * 5 + [1.6, 1.8, 2.0, 3.4, 6.0]
BOTH_REPORTED = (
    "no failing regression: cost and latency regressions reported only (set regression.fail_on_cost_regression, "
    "regression.fail_on_latency_regression to fail the run)"
)


def _slower(rules: EfficiencyRules | None = None) -> RegressionReport:
    return compare_runs(turns_run("base", BASELINE, 0.42), turns_run("new", SLOWER, 0.58), efficiency=rules)


# ---------------------------------------------------------------------------------------------- figures
def test_cost_per_case_and_latency_percentiles_by_hand() -> None:
    comparison = _slower()

    cost, latency = comparison.efficiency.cost, comparison.efficiency.latency
    assert cost.compared and cost.note is None
    assert (cost.baseline_usd, cost.current_usd) == (pytest.approx(0.021), pytest.approx(0.029))
    assert cost.change == pytest.approx(0.029 / 0.021 - 1)  # +38.1%
    assert cost.regressed and not cost.fail_on_regression
    assert latency.compared and latency.note is None
    assert (latency.baseline_turns, latency.current_turns) == (20, 20)
    assert (latency.baseline_p50, latency.current_p50) == (pytest.approx(1.1), pytest.approx(1.2))
    assert (latency.baseline_p95, latency.current_p95) == (pytest.approx(2.1), pytest.approx(3.53))
    assert latency.p50_change == pytest.approx(1.2 / 1.1 - 1)  # +9%: within +50%
    assert latency.p95_change == pytest.approx(3.53 / 2.1 - 1)  # +68%: beyond, and 1.43 s more
    assert latency.regressed_percentiles == ["p95"] and latency.regressed
    assert comparison.efficiency.summary_lines() == [
        "cost regression: +38% per case, 0.021 → 0.029 USD",
        "latency regression: p95 per turn +68%, 2.10 → 3.53 s",
    ]


def test_percentiles_are_numpys_linear_ones() -> None:
    draw = random.Random(31)
    for size in (1, 2, 5, 20, 101):
        values = [draw.uniform(0.1, 9.0) for _ in range(size)]
        for q in (0.0, 0.5, 0.95, 1.0):
            assert percentile(values, q) == pytest.approx(float(np.quantile(values, q, method="linear")))
    with pytest.raises(ValueError, match="at least one value"):
        percentile([], 0.5)


def test_relative_change_from_and_to_zero() -> None:
    assert relative_change(0.02, 0.025) == pytest.approx(0.25)
    assert relative_change(2.0, 1.0) == -0.5
    assert relative_change(0.0, 0.0) == 0.0
    assert relative_change(0.0, 0.5) is None  # unbounded: exceeds any tolerance


def test_changes_within_the_tolerances_print_both_runs_and_the_change() -> None:
    # cost $0.021 → $0.022 (+4.8%); p50 1.20 → 1.31 (+9.2%), p95 1.40 → 1.52 (+8.6%)
    baseline = turns_run("base", [1.0] * 10 + [1.4] * 10, 0.42)
    current = turns_run("new", [1.1] * 10 + [1.52] * 10, 0.44)

    comparison = compare_runs(baseline, current)

    assert not comparison.efficiency.cost.regressed and not comparison.efficiency.latency.regressed
    assert comparison.summary_lines()[-3:] == [
        "cost per case: 0.021 → 0.022 USD (+5%)",
        "latency per turn: p50 1.20 → 1.31 s (+9%), p95 1.40 → 1.52 s (+9%)",
        "no regression",
    ]
    assert not comparison.alerted


def test_a_cheaper_and_faster_run_shows_falls_with_a_minus_sign() -> None:
    comparison = compare_runs(turns_run("base", SLOWER, 0.58), turns_run("new", BASELINE, 0.42))

    assert comparison.efficiency.summary_lines() == [
        "cost per case: 0.029 → 0.021 USD (−28%)",
        "latency per turn: p50 1.20 → 1.10 s (−8%), p95 3.53 → 2.10 s (−41%)",
    ]


# ------------------------------------------------------------------------------------------------- rules
def test_unknown_cost_is_never_compared_and_says_why() -> None:
    priced = turns_run("new", BASELINE, 4.2)  # ten times as dear: still no regression
    unpriced = turns_run("base", BASELINE, None)  # a model without a price
    no_tokens = run_report("base", [case_run("a", [1.0])], None)

    one_unknown = compare_runs(unpriced, priced).efficiency
    both_unknown = compare_runs(no_tokens, no_tokens).efficiency

    cost = one_unknown.cost
    assert (cost.compared, cost.regressed, cost.change) == (False, False, None)
    assert cost.note == "cost unknown in the baseline"
    assert (cost.baseline_usd, cost.current_usd) == (None, pytest.approx(0.21))
    assert one_unknown.summary_lines()[0] == "cost per case: not compared (cost unknown in the baseline)"
    assert both_unknown.cost.note == "cost unknown in the baseline and this run"
    assert not any(line.startswith("cost") for line in both_unknown.summary_lines())  # nothing to say


def test_cost_tolerance_is_strict_beyond_float_noise() -> None:
    base = timed_run("base", {"a": [1.0], "b": [1.0]}, 0.04)  # $0.02 per case run

    exactly = compare_runs(base, timed_run("new", {"a": [1.0], "b": [1.0]}, 0.05)).efficiency.cost  # +25% (float)
    beyond = compare_runs(base, timed_run("new", {"a": [1.0], "b": [1.0]}, 0.0501)).efficiency.cost  # +25.25%
    strict = EfficiencyRules(cost_tolerance=0.0)
    same = compare_runs(base, base, efficiency=strict).efficiency.cost
    rise = compare_runs(base, timed_run("new", {"a": [1.0], "b": [1.0]}, 0.0401), efficiency=strict).efficiency.cost

    assert exactly.change == pytest.approx(0.25) and not exactly.regressed
    assert beyond.regressed
    assert same.change == 0.0 and not same.regressed
    assert rise.regressed and rise.tolerance == 0.0


def test_latency_tolerance_is_strict_and_applies_to_p50_or_p95() -> None:
    base = turns_run("base", [1.0] * 10 + [2.0] * 10, None)  # p50 1.5, p95 2.0
    half_again = turns_run("new", [1.5] * 10 + [3.0] * 10, None)  # p50 2.25, p95 3.0: +50% each
    tighter = EfficiencyRules(latency_tolerance=0.49)

    at_tolerance = compare_runs(base, half_again).efficiency.latency
    below = compare_runs(base, half_again, efficiency=tighter).efficiency

    assert (at_tolerance.p50_change, at_tolerance.p95_change) == (0.5, 0.5)
    assert not at_tolerance.regressed and at_tolerance.regressed_percentiles == []
    assert below.latency.regressed_percentiles == ["p50", "p95"]
    assert below.summary_lines() == [
        "latency regression: p50 per turn +50%, 1.50 → 2.25 s; p95 per turn +50%, 2.00 → 3.00 s"
    ]


def test_a_rise_of_fast_turns_under_a_quarter_second_is_noise() -> None:
    base = turns_run("base", [0.01] * 10 + [0.02] * 10, None)  # p50 0.015, p95 0.02
    tripled = turns_run("new", [0.02] * 10 + [0.05] * 10, None)  # p50 0.035 (+133%), p95 0.05 (+150%)
    slow = turns_run("new", [0.02] * 10 + [0.3] * 10, None)  # p50 0.16: 0.145 s more; p95 0.3: 0.28 s more

    assert not compare_runs(base, tripled).efficiency.latency.regressed
    assert compare_runs(base, tripled).efficiency.summary_lines() == [
        "latency per turn: p50 0.015 → 0.035 s (+133%), p95 0.02 → 0.05 s (+150%)"  # 2 significant digits
    ]
    assert compare_runs(base, slow).efficiency.latency.regressed_percentiles == ["p95"]


def test_a_percentile_needs_a_turn_above_it_in_each_run() -> None:
    base = turns_run("base", [0.5] * 6, None)
    one_stall = turns_run("new", [0.5] * 5 + [9.0], None)  # p95 would be 6.875 s: the stall alone
    single = turns_run("new", [9.0], None)

    few = compare_runs(base, one_stall).efficiency
    one = compare_runs(base, single).efficiency

    assert few.latency.compared and not few.latency.regressed
    assert (few.latency.baseline_p50, few.latency.current_p50, few.latency.current_p95) == (0.5, 0.5, None)
    assert few.summary_lines() == [
        "latency per turn: p50 0.50 → 0.50 s (0%); p95 needs at least 20 timed turns in each run (6 and 6)"
    ]
    assert not one.latency.compared and not one.latency.regressed
    assert one.summary_lines() == [
        "latency per turn: not compared (p50 needs at least 2 timed turns in each run; p95 needs at least 20 "
        "timed turns in each run (6 and 1))"
    ]


def test_failed_reused_and_untimed_turns_are_left_out() -> None:
    noisy = [
        *turns_run("new", SLOWER, None).cases,
        case_run("failed", [30.0], error="ValueError: boom"),  # the agent failed
        case_run("reused", [40.0], cached=True),  # timed in an earlier evaluation
        case_run("untimed", [None, None]),  # an ADK session
    ]
    current = run_report("new", noisy, run_cost(0.69))

    efficiency = compare_runs(turns_run("base", BASELINE, 0.42), current).efficiency

    assert efficiency.latency.current_turns == 20
    assert (efficiency.latency.current_p50, efficiency.latency.current_p95) == (1.2, pytest.approx(3.53))
    assert not efficiency.cost.compared
    assert efficiency.cost.note == "1 of 23 case runs of this run reused earlier answers, which cost nothing now"


def test_no_timed_turn_leaves_latency_uncompared() -> None:
    untimed = timed_run("base", {"a": [None]}, None)
    timed = timed_run("new", {"a": [1.0]}, None)

    latency = compare_runs(untimed, timed).efficiency.latency

    assert (latency.compared, latency.regressed, latency.note) == (False, False, "no timed turn in the baseline")
    assert compare_runs(untimed, timed).efficiency.summary_lines() == [
        "latency per turn: not compared (no timed turn in the baseline)"
    ]
    assert compare_runs(untimed, untimed).efficiency.summary_lines() == []


def test_a_subset_rerun_compares_the_latency_of_its_case_runs_only_and_not_the_cost() -> None:
    baseline = turns_run("base", [1.0] * 20, 0.21)
    baseline = baseline.model_copy(update={"cases": [*baseline.cases, case_run("slow", [9.0])]})
    rerun = turns_run("new", [1.1] * 20, 0.3)

    efficiency = compare_runs(baseline, rerun, subset=True).efficiency

    assert efficiency.latency.baseline_turns == 20 and efficiency.latency.baseline_p95 == 1.0
    assert not efficiency.cost.compared and not efficiency.cost.regressed
    assert efficiency.cost.note == (
        "a rerun of a subset of the baseline's case runs: the baseline's cost is of all of them"
    )


def test_recorded_traffic_is_compared_alike() -> None:
    def recorded(run_id: str, seconds: float, usd: float) -> RunReport:
        cases = [case_run(f"{run_id}-{i}", [seconds], recorded=True) for i in range(20)]
        return run_report(run_id, cases, run_cost(usd))

    comparison = compare_runs(recorded("mon", 1.0, 0.2), recorded("tue", 2.0, 0.3))

    assert comparison.cases == []  # sessions compared as samples
    assert comparison.efficiency.cost.change == pytest.approx(0.5)  # $0.01 → $0.015 per session
    assert comparison.efficiency.latency.regressed_percentiles == ["p50", "p95"]  # 1.0 → 2.0 s


def test_turns_can_come_from_elsewhere_by_case_run() -> None:
    baseline, current = timed_run("base", {"a": [], "b": []}, None), timed_run("new", {"a": [], "b": []}, None)
    before = {("home", "a", 0): [1.0] * 10, ("home", "b", 0): [2.0] * 10}
    after = {("home", "a", 0): [1.0] * 10, ("home", "b", 0): [4.0] * 10}

    latency = compare_efficiency(baseline, current, turns=(before, after)).latency

    assert (latency.baseline_p50, latency.current_p50) == (1.5, 2.5)
    assert (latency.baseline_p95, latency.current_p95) == (2.0, 4.0)


def test_negative_tolerances_are_rejected() -> None:
    with pytest.raises(ValueError, match=r"cost_tolerance must be 0 or more \(0.25 = \+25%\), got -0.1"):
        EfficiencyRules(cost_tolerance=-0.1)
    with pytest.raises(ValueError, match="latency_tolerance must be 0 or more"):
        EfficiencyRules(latency_tolerance=float("nan"))


# --------------------------------------------------------------------------------------- verdict, payload
def test_cost_and_latency_regressions_alert_without_failing_the_run_by_default() -> None:
    comparison = _slower()

    assert not comparison.quality_regressed and not comparison.regressed
    assert comparison.cost_regressed and comparison.latency_regressed and comparison.alerted
    assert comparison.summary_lines()[-1] == BOTH_REPORTED


@pytest.mark.parametrize(
    ("rules", "verdict"),
    [
        (EfficiencyRules(fail_on_cost_regression=True), "REGRESSED: cost per case"),
        (EfficiencyRules(fail_on_latency_regression=True), "REGRESSED: latency per turn"),
        (
            EfficiencyRules(fail_on_cost_regression=True, fail_on_latency_regression=True),
            "REGRESSED: cost per case, latency per turn",
        ),
    ],
)
def test_fail_on_rules_count_a_regression_in_the_verdict(rules: EfficiencyRules, verdict: str) -> None:
    comparison = _slower(rules)

    assert comparison.regressed and not comparison.quality_regressed
    assert comparison.summary_lines()[-1] == verdict
    assert comparison.to_payload()["regressed"] is True


def test_a_fail_on_rule_without_a_regression_fails_nothing() -> None:
    rules = EfficiencyRules(fail_on_cost_regression=True, fail_on_latency_regression=True)

    comparison = compare_runs(turns_run("base", BASELINE, 0.42), turns_run("new", BASELINE, 0.42), efficiency=rules)

    assert not comparison.regressed and not comparison.alerted
    assert comparison.summary_lines()[-1] == "no regression"


def test_the_payload_has_each_kind_and_both_runs_figures() -> None:
    payload = json.loads(json.dumps(_slower().to_payload()))

    assert (payload["regressed"], payload["cost_regressed"], payload["latency_regressed"]) == (False, True, True)
    assert payload["efficiency"]["cost"] == {
        "compared": True,
        "baseline_usd": pytest.approx(0.021),
        "current_usd": pytest.approx(0.029),
        "change": pytest.approx(8 / 21),
        "tolerance": 0.25,
        "regressed": True,
        "fail_on_regression": False,
        "note": None,
    }
    assert payload["efficiency"]["latency"] == {
        "compared": True,
        "baseline_turns": 20,
        "current_turns": 20,
        "baseline_p50": pytest.approx(1.1),
        "current_p50": pytest.approx(1.2),
        "p50_change": pytest.approx(1 / 11),
        "baseline_p95": pytest.approx(2.1),
        "current_p95": pytest.approx(3.53),
        "p95_change": pytest.approx(1.43 / 2.1),
        "tolerance": 0.5,
        "regressed_percentiles": ["p95"],
        "regressed": True,
        "fail_on_regression": False,
        "note": None,
    }
    assert payload["summary"].splitlines()[-3:] == [
        "cost regression: +38% per case, 0.021 → 0.029 USD",
        "latency regression: p95 per turn +68%, 2.10 → 3.53 s",
        BOTH_REPORTED,
    ]


def test_the_no_baseline_payload_has_the_new_keys_empty() -> None:
    compared = _slower().to_payload()

    payload = no_baseline_payload("new", "no earlier completed run of this agent")

    assert (payload["cost_regressed"], payload["latency_regressed"], payload["efficiency"]) == (False, False, {})
    assert set(compared) - set(payload) == {"confidence"}  # as before: the no-baseline payload has no confidence
    assert set(payload) <= set(compared)


def test_a_comparison_of_an_earlier_release_loads_without_cost_and_latency() -> None:
    dumped = _slower().model_dump()
    del dumped["efficiency"]

    old = RegressionReport.model_validate(dumped)

    assert old.efficiency == EfficiencyComparison()
    assert not old.alerted and old.summary_lines()[-1] == "no regression"
    assert not any(line.startswith(("cost", "latency")) for line in old.summary_lines())
