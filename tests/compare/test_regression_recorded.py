"""Runs of recorded traffic score different sessions each window: nothing pairs, so metrics are compared as two
samples (means, the difference of the means, a bootstrap interval of it), with the usual tolerance rule."""

from __future__ import annotations

import numpy as np
import pytest

from agent_eval.compare.regression import compare_runs
from agent_eval.results.model import RunReport
from agent_eval.results.stats import unpaired_difference
from tests.compare.test_regression import case, report
from tests.render.builders import RESPONSE


def recorded(run_id: str, prefix: str, values: list[float]) -> RunReport:
    """Sessions PREFIX0, PREFIX1, ... read from spans, one score each."""
    cases = [
        case(f"{prefix}{i}", {RESPONSE: value}, passed=value >= 0.5).model_copy(
            update={"recorded_from": [f"spans.jsonl:{i + 1}"]}
        )
        for i, value in enumerate(values)
    ]
    return report(run_id, cases)


def test_a_drop_across_other_sessions_regresses_as_samples() -> None:
    compared = compare_runs(recorded("a", "monday-", [1.0, 1.0, 1.0, 1.0]), recorded("b", "tuesday-", [0.0, 0.0, 0.0]))

    (metric,) = compared.metrics
    assert (metric.baseline_mean, metric.current_mean, metric.difference) == (1.0, 0.0, -1.0)
    assert (metric.ci_low, metric.ci_high) == (-1.0, -1.0)  # no spread on either side
    assert metric.regressed and compared.regressed
    assert metric.paired_cases == 0 and metric.note == "unpaired: 4 baseline against 3 current scores"
    assert compared.cases == [] and compared.added == [] and compared.removed == []
    assert compared.notes == [
        "recorded traffic: 4 baseline and 3 current sessions compared as samples, not case by case "
        "(pass rate 100.0% → 0.0%)"
    ]


def test_equal_samples_do_not_regress_and_a_noisy_small_drop_stays_within_its_interval() -> None:
    same = compare_runs(recorded("a", "x", [0.5, 1.0]), recorded("b", "y", [1.0, 0.5]))
    noisy = compare_runs(recorded("a", "x", [1.0, 0.0, 1.0, 0.0]), recorded("b", "y", [0.0, 1.0, 0.0]))

    assert same.metrics[0].difference == 0.0 and not same.regressed
    assert noisy.metrics[0].difference == pytest.approx(1 / 3 - 0.5)
    assert noisy.metrics[0].ci_low < 0.0 < noisy.metrics[0].ci_high and not noisy.regressed


def test_a_run_of_eval_files_is_still_compared_case_by_case() -> None:
    plain = report("a", [case("c0", {RESPONSE: 1.0})])

    compared = compare_runs(plain, recorded("b", "c", [0.0]))

    assert compared.metrics[0].paired_cases == 1 and compared.regressed  # c0 in both: paired as before


def test_the_unpaired_interval_is_the_quantiles_of_independent_resample_means() -> None:
    baseline, current = [0.2, 0.4, 0.9], [0.1, 0.3]

    compared = unpaired_difference(baseline, current, confidence=0.9, resamples=500, seed=7)

    rng = np.random.default_rng(7)  # the baseline's resamples first, then the current's, one generator
    before = np.asarray(baseline)[rng.integers(0, 3, size=(500, 3))].mean(axis=1)
    after = np.asarray(current)[rng.integers(0, 2, size=(500, 2))].mean(axis=1)
    low, high = np.quantile(after - before, [0.05, 0.95])
    assert (compared.low, compared.high) == (pytest.approx(low), pytest.approx(high))
    assert compared.difference == pytest.approx(0.2 - 0.5)
    assert compared.n == 2
