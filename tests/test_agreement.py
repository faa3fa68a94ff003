"""agent_eval.results.agreement: every figure against a hand-computed example or an independent reference
(scipy for Spearman, a slow Python loop for the bootstrap)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from pydantic import ValidationError
from scipy import stats as scipy_stats

from agent_eval.results import agreement
from agent_eval.results.agreement import (
    MIN_LABELS,
    BinaryAgreement,
    Confusion,
    binary_agreement,
    cohen_kappa,
    scored_agreement,
    self_consistency,
)
from agent_eval.results.stats import BOOTSTRAP_SEED


def _pairs(pass_pass: int, pass_fail: int, fail_pass: int, fail_fail: int) -> tuple[list[bool], list[bool]]:
    """(judge, human) lists with this confusion, in blocks."""
    judge = [True] * pass_pass + [False] * pass_fail + [True] * fail_pass + [False] * fail_fail
    human = [True] * (pass_pass + pass_fail) + [False] * (fail_pass + fail_fail)
    return judge, human


def _sample(n: int, agree: float, seed: int) -> tuple[list[bool], list[bool]]:
    """Seeded human labels (60% pass) and a judge that gives the same verdict with probability `agree`."""
    rng = np.random.default_rng(seed)
    human = rng.random(n) < 0.6
    judge = np.where(rng.random(n) < agree, human, ~human)
    return judge.tolist(), human.tolist()


def _slow_kappa(judge: list[bool], human: list[bool]) -> float | None:
    """Kappa the textbook way, in floats: (p_o - p_e) / (1 - p_e)."""
    n = len(judge)
    p_o = sum(j == h for j, h in zip(judge, human, strict=True)) / n
    p_judge, p_human = sum(judge) / n, sum(human) / n
    p_e = p_judge * p_human + (1 - p_judge) * (1 - p_human)
    return None if p_e == 1 else (p_o - p_e) / (1 - p_e)


def _slow_interval(
    judge: list[bool], human: list[bool], confidence: float, resamples: int, seed: int
) -> tuple[tuple[float, float] | None, int]:
    """The bootstrap interval one resample at a time (the same draws), and how many resamples were undefined."""
    rng = np.random.default_rng(seed)
    kappas, undefined = [], 0
    for _ in range(resamples):
        indices = rng.integers(0, len(judge), size=len(judge))
        kappa = _slow_kappa([judge[i] for i in indices], [human[i] for i in indices])
        if kappa is None:
            undefined += 1
        else:
            kappas.append(kappa)
    if len(kappas) < 2:
        return None, undefined
    alpha = (1 - confidence) / 2
    return (float(np.quantile(kappas, alpha)), float(np.quantile(kappas, 1 - alpha))), undefined


# --- binary_agreement: the figures ---------------------------------------------------------------------------


def test_hand_computed_symmetric_example() -> None:
    # 30 pairs, confusion 12/3/2/13: human pass 15, human fail 15; judge pass 12 + 2 = 14, judge fail 16.
    # p_o = (12 + 13) / 30 = 25/30; p_e = (14 * 15 + 16 * 15) / 30**2 = 450/900 = 0.5;
    # kappa = (25/30 - 0.5) / (1 - 0.5) = 2/3. true_pass_rate = 12/15 = 0.8, true_fail_rate = 13/15,
    # balanced accuracy = (12/15 + 13/15) / 2 = 25/30.
    judge, human = _pairs(12, 3, 2, 13)
    result = binary_agreement(judge, human)
    assert result.n == 30
    assert result.confusion == Confusion(pass_pass=12, pass_fail=3, fail_pass=2, fail_fail=13)
    assert result.agreement == pytest.approx(25 / 30, abs=1e-15)
    assert result.kappa == pytest.approx(2 / 3, abs=1e-15)
    assert result.true_pass_rate == pytest.approx(0.8, abs=1e-15)
    assert result.true_fail_rate == pytest.approx(13 / 15, abs=1e-15)
    assert result.balanced_accuracy == pytest.approx(25 / 30, abs=1e-15)
    assert result.insufficient is None
    assert cohen_kappa(judge, human) == pytest.approx(2 / 3, abs=1e-15)


def test_hand_computed_unbalanced_example() -> None:
    # 40 pairs, confusion 20/5/6/9: human pass 25, human fail 15; judge pass 20 + 6 = 26, judge fail 14.
    # p_o = (20 + 9) / 40 = 0.725; p_e = (26 * 25 + 14 * 15) / 40**2 = (650 + 210) / 1600 = 0.5375;
    # kappa = (0.725 - 0.5375) / (1 - 0.5375) = 0.1875 / 0.4625 = 15/37 ≈ 0.4054.
    # true_pass_rate = 20/25 = 0.8, true_fail_rate = 9/15 = 0.6, balanced accuracy = 0.7.
    judge, human = _pairs(20, 5, 6, 9)
    result = binary_agreement(judge, human)
    assert result.agreement == pytest.approx(0.725, abs=1e-15)
    assert result.kappa == pytest.approx(15 / 37, abs=1e-15)
    assert result.true_pass_rate == pytest.approx(0.8, abs=1e-15)
    assert result.true_fail_rate == pytest.approx(0.6, abs=1e-15)
    assert result.balanced_accuracy == pytest.approx(0.7, abs=1e-15)


def test_pair_order_does_not_matter() -> None:
    judge, human = _pairs(20, 5, 6, 9)
    shuffled = np.random.default_rng(3).permutation(len(judge))
    mixed = binary_agreement([judge[i] for i in shuffled], [human[i] for i in shuffled])
    point = binary_agreement(judge, human)
    assert (mixed.kappa, mixed.agreement, mixed.confusion) == (point.kappa, point.agreement, point.confusion)


def test_perfect_agreement_is_exactly_one() -> None:
    judge, human = _pairs(17, 0, 0, 8)
    result = binary_agreement(judge, human)
    assert result.kappa == 1.0
    assert result.kappa_interval == (1.0, 1.0)  # every defined resample agrees perfectly too
    assert (result.agreement, result.balanced_accuracy, result.true_pass_rate, result.true_fail_rate) == (1, 1, 1, 1)


def test_inverted_labels_give_negative_kappa() -> None:
    # Balanced and inverted (0/10/10/0): p_o = 0, p_e = (10 * 10 + 10 * 10) / 400 = 0.5, kappa = -0.5 / 0.5 = -1.
    judge, human = _pairs(0, 10, 10, 0)
    assert binary_agreement(judge, human).kappa == -1.0
    # Unbalanced and inverted (0/15/5/0): judge pass 5, human pass 15; p_e = (5 * 15 + 15 * 5) / 400 = 0.375,
    # kappa = (0 - 0.375) / 0.625 = -0.6.
    judge, human = _pairs(0, 15, 5, 0)
    result = binary_agreement(judge, human)
    assert result.kappa == pytest.approx(-0.6, abs=1e-15)
    assert result.kappa_interval is not None
    assert result.kappa_interval[1] < 0
    assert result.balanced_accuracy == 0.0


def test_chance_level_labels_give_kappa_near_zero() -> None:
    rng = np.random.default_rng(11)
    human = (rng.random(4000) < 0.5).tolist()
    judge = (rng.random(4000) < 0.7).tolist()  # independent of the human labels
    result = binary_agreement(judge, human)
    assert result.kappa is not None
    assert abs(result.kappa) < 0.05
    assert result.kappa_interval is not None
    assert result.kappa_interval[0] < 0 < result.kappa_interval[1]


def test_a_judge_that_always_passes_has_kappa_zero() -> None:
    # Judge pass 25 of 25, human pass 15: p_o = 15/25, p_e = 1 * 15/25 + 0 * 10/25 = 15/25, kappa = 0.
    judge, human = _pairs(15, 0, 10, 0)
    result = binary_agreement(judge, human)
    assert result.kappa == 0.0
    assert (result.true_pass_rate, result.true_fail_rate, result.balanced_accuracy) == (1.0, 0.0, 0.5)


# --- cohen_kappa ------------------------------------------------------------------------------------------------


def test_kappa_matches_the_textbook_formula_on_random_samples() -> None:
    for seed in range(20):
        judge, human = _sample(57, 0.8, seed)
        assert cohen_kappa(judge, human) == pytest.approx(_slow_kappa(judge, human), abs=1e-12)


def test_kappa_is_undefined_when_chance_agreement_is_one() -> None:
    # Both sides pass everything: p_o = 1, p_e = 1 * 1 + 0 * 0 = 1, so (p_o - p_e) / (1 - p_e) = 0/0.
    assert cohen_kappa([True] * 5, [True] * 5) is None
    assert cohen_kappa([False] * 5, [False] * 5) is None
    assert cohen_kappa([], []) is None
    # One side constant, the other not: p_e = P(human pass) < 1, so kappa is defined (0 here, as above).
    assert cohen_kappa([True] * 4, [True, True, False, False]) == 0.0


# --- the bootstrap interval ---------------------------------------------------------------------------------


def test_interval_contains_the_point_kappa_and_is_reproducible() -> None:
    judge, human = _sample(200, 0.85, 5)
    result = binary_agreement(judge, human)
    assert result.kappa is not None and result.kappa_interval is not None
    low, high = result.kappa_interval
    assert low < result.kappa < high
    assert binary_agreement(judge, human) == result  # same seed (the default): the same interval
    assert binary_agreement(judge, human, seed=BOOTSTRAP_SEED) == result
    assert binary_agreement(judge, human, seed=1).kappa_interval != result.kappa_interval
    narrower = binary_agreement(judge, human, confidence=0.5).kappa_interval
    assert narrower is not None and low < narrower[0] < narrower[1] < high


@pytest.mark.parametrize(
    ("judge", "human", "some_undefined"),
    [
        (*_sample(40, 0.85, 2), False),
        # 19 human passes, 1 fail, judge equal: a resample that misses the one "fail" pair (chance 0.95**20 ≈ 36%)
        # has every verdict "pass" on both sides, so its kappa is undefined and it is dropped.
        ([True] * 19 + [False], [True] * 19 + [False], True),
        (*_pairs(9, 3, 2, 7), False),  # 21 pairs: an odd row length
    ],
)
def test_interval_equals_a_slow_reference_loop(judge: list[bool], human: list[bool], some_undefined: bool) -> None:
    for confidence, resamples, seed in [(0.95, 60, 0), (0.9, 101, 7), (0.8, 3, 2)]:
        expected, undefined = _slow_interval(judge, human, confidence, resamples, seed)
        if resamples > 50:
            assert (undefined > 0) == some_undefined
        got = binary_agreement(judge, human, confidence=confidence, resamples=resamples, seed=seed, min_labels=20)
        assert got.kappa_interval is not None and expected is not None
        assert got.kappa_interval == pytest.approx(expected, abs=1e-12)


def test_blocks_draw_the_same_resamples(monkeypatch: pytest.MonkeyPatch) -> None:
    judge, human = _sample(50, 0.85, 4)
    whole = binary_agreement(judge, human, resamples=300)
    monkeypatch.setattr(agreement, "_BLOCK_INDICES", 120)  # 2 rows per block, 150 blocks
    assert binary_agreement(judge, human, resamples=300) == whole
    monkeypatch.setattr(agreement, "_BLOCK_INDICES", 1)  # fewer indices than one row: still one row per block
    assert binary_agreement(judge, human, resamples=300) == whole


def test_interval_is_none_with_fewer_than_two_defined_resamples() -> None:
    judge, human = _sample(30, 0.85, 6)
    result = binary_agreement(judge, human, resamples=1)
    assert result.kappa_interval is None
    assert result.kappa == cohen_kappa(judge, human)


def test_bad_bootstrap_settings_raise() -> None:
    judge, human = _sample(30, 0.85, 6)
    with pytest.raises(ValueError, match=r"confidence must be in \(0, 1\)"):
        binary_agreement(judge, human, confidence=1.0)
    with pytest.raises(ValueError, match="resamples must be at least 1"):
        binary_agreement(judge, human, resamples=0)


# --- insufficient labels ----------------------------------------------------------------------------------------


def _assert_no_figures(result: BinaryAgreement) -> None:
    figures = (result.agreement, result.balanced_accuracy, result.kappa, result.kappa_interval)
    assert (*figures, result.true_pass_rate, result.true_fail_rate) == (None,) * 6


def test_nineteen_labels_are_too_few() -> None:
    judge, human = _pairs(8, 2, 1, 8)
    assert MIN_LABELS == 20
    result = binary_agreement(judge, human)
    assert result.insufficient == "19 labels (at least 20 needed)"
    _assert_no_figures(result)
    assert result.n == 19
    assert result.confusion == Confusion(pass_pass=8, pass_fail=2, fail_pass=1, fail_fail=8)
    assert binary_agreement(judge, human, min_labels=19).insufficient is None
    assert binary_agreement(*_pairs(9, 2, 1, 8)).insufficient is None  # 20 labels are enough


def test_too_few_labels_edge_counts() -> None:
    assert binary_agreement([True], [False]).insufficient == "1 label (at least 20 needed)"
    assert binary_agreement([], []).insufficient == "0 labels (at least 20 needed)"
    assert binary_agreement([], [], min_labels=0).insufficient == "0 labels (at least 1 needed)"
    assert binary_agreement([True, False], [True, False], min_labels=2).kappa == 1.0


def test_one_human_class_is_insufficient() -> None:
    result = binary_agreement(*_pairs(20, 5, 0, 0))
    assert result.insufficient == "no human 'fail' label among 25"
    _assert_no_figures(result)
    assert result.confusion == Confusion(pass_pass=20, pass_fail=5, fail_pass=0, fail_fail=0)
    result = binary_agreement(*_pairs(0, 0, 4, 22))
    assert result.insufficient == "no human 'pass' label among 26"
    _assert_no_figures(result)
    # Both hold: the count is the first reason given.
    assert binary_agreement(*_pairs(10, 0, 0, 0)).insufficient == "10 labels (at least 20 needed)"


# --- scored_agreement -------------------------------------------------------------------------------------------


def test_scored_hand_computed_example() -> None:
    # judge 1 2 3 4 5 -> ranks 1 2 3 4 5; human 5 6 7 8 7 -> ranks 1 2 3.5 5 3.5 (the two 7s share (3 + 4) / 2).
    # Centred (mean 3): dx = -2 -1 0 1 2, dy = -2 -1 0.5 2 0.5; sum dx*dy = 4 + 1 + 0 + 2 + 1 = 8,
    # sum dx^2 = 10, sum dy^2 = 4 + 1 + 0.25 + 4 + 0.25 = 9.5; rho = 8 / sqrt(95) ≈ 0.8208.
    # MAE = (4 + 4 + 4 + 4 + 2) / 5 = 3.6.
    result = scored_agreement([1, 2, 3, 4, 5], [5, 6, 7, 8, 7], min_labels=5)
    assert result.n == 5
    assert result.spearman_rho == pytest.approx(8 / math.sqrt(95), abs=1e-15)
    assert result.mean_absolute_error == pytest.approx(3.6, abs=1e-15)
    assert result.insufficient is None


@pytest.mark.parametrize("seed", range(8))
def test_spearman_matches_scipy_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    human = rng.integers(1, 6, size=300).astype(float)  # a 1-5 rating: many ties
    judge = np.clip(human + rng.integers(-1, 2, size=300), 1, 5) / 5  # another scale, ties too
    result = scored_agreement(judge.tolist(), human.tolist())
    expected = scipy_stats.spearmanr(judge, human).statistic
    assert result.spearman_rho == pytest.approx(expected, abs=1e-12)
    assert result.mean_absolute_error == pytest.approx(float(np.mean(np.abs(judge - human))), abs=1e-12)


def test_spearman_matches_scipy_without_ties_and_reversed() -> None:
    rng = np.random.default_rng(9)
    human = rng.random(50)
    judge = human + rng.normal(0, 0.3, size=50)
    result = scored_agreement(judge.tolist(), human.tolist())
    assert result.spearman_rho == pytest.approx(scipy_stats.spearmanr(judge, human).statistic, abs=1e-12)
    assert scored_agreement((-human).tolist(), human.tolist()).spearman_rho == -1.0
    assert scored_agreement(human.tolist(), human.tolist()).spearman_rho == 1.0


def test_spearman_is_none_for_a_constant_side() -> None:
    result = scored_agreement([0.5] * 20, [float(i % 5) for i in range(20)])
    assert result.spearman_rho is None
    assert result.mean_absolute_error == pytest.approx(sum(abs(0.5 - i % 5) for i in range(20)) / 20, abs=1e-15)
    assert result.insufficient is None
    assert scored_agreement([float(i) for i in range(20)], [1.0] * 20).spearman_rho is None


def test_scored_too_few_labels() -> None:
    result = scored_agreement([1.0] * 19, [2.0] * 19)
    assert (result.n, result.spearman_rho, result.mean_absolute_error) == (19, None, None)
    assert result.insufficient == "19 labels (at least 20 needed)"


def test_scored_rejects_non_finite_scores() -> None:
    with pytest.raises(ValueError, match=r"scored_agreement needs finite scores, got nan at human index 2"):
        scored_agreement([1.0] * 20, [1.0, 2.0, math.nan] + [1.0] * 17)
    with pytest.raises(ValueError, match=r"got inf at judge index 0"):
        scored_agreement([math.inf] + [1.0] * 19, [1.0] * 20)


# --- self_consistency -------------------------------------------------------------------------------------------


def test_self_consistency_with_unusable_samples_and_ties() -> None:
    samples: list[list[bool | None]] = [
        [True, True, True, False],  # majority pass: 3/4 = 0.75
        [True, None, False, None],  # 2 usable, a tie: 0.5
        [False, False, None],  # 2 usable, both fail: 1.0
        [True, None, None],  # 1 usable sample: left out
        [],  # none: left out
    ]
    # mean over the 3 items with at least 2 usable samples: (0.75 + 0.5 + 1.0) / 3 = 0.75
    assert self_consistency(samples) == pytest.approx(0.75, abs=1e-15)
    # 5 samples, 2 pass and 3 fail: majority fail, 3/5 = 0.6; a 3-3 tie counts 0.5: (0.6 + 0.5) / 2 = 0.55
    assert self_consistency([[True, True, False, False, False], [True, False] * 3]) == pytest.approx(0.55)


def test_self_consistency_is_none_without_repeated_samples() -> None:
    assert self_consistency([]) is None
    assert self_consistency([[True], [None, False], [None, None]]) is None
    assert self_consistency([[True, True]]) == 1.0


# --- errors and the models --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: binary_agreement([True, False, True], [True, False]),
            "binary_agreement needs one human label per judged item, got 3 judge verdicts and 2 human labels",
        ),
        (
            lambda: cohen_kappa([True], []),
            "cohen_kappa needs one human label per judged item, got 1 judge verdict and 0 human labels",
        ),
        (
            lambda: scored_agreement([1.0, 2.0], [1.0, 2.0, 3.0]),
            "scored_agreement needs one human label per judged item, got 2 judge scores and 3 human scores",
        ),
    ],
)
def test_length_mismatch_raises(call: Callable[[], object], message: str) -> None:
    with pytest.raises(ValueError) as error:
        call()
    assert str(error.value) == message


def test_models_are_frozen_and_serialise() -> None:
    result = binary_agreement(*_pairs(12, 3, 2, 13))
    with pytest.raises(ValidationError):
        result.confusion.pass_pass = 0  # type: ignore[misc]
    with pytest.raises(ValidationError):
        result.kappa = 0.0  # type: ignore[misc]
    assert BinaryAgreement.model_validate_json(result.model_dump_json()) == result
