"""How well an LLM judge agrees with human labels: Cohen's kappa with a bootstrap interval, Spearman's rho,
the judge's self-consistency.

Internal: the public API is `agent_eval`'s; this module's names may change between releases.

Plain functions on paired sequences (item `i` of `judge` and item `i` of `human` judge the same item), vectorised
with numpy where it matters. The rules they follow:

- A verdict is a bool: True is "pass", False is "fail". Sequences of different lengths raise a ValueError.
- `Confusion` counts the pairs by (human label, judge verdict): `pass_fail` is a human "pass" the judge failed.
- `cohen_kappa`: `kappa = (p_o - p_e) / (1 - p_e)`, with `p_o` the share of pairs whose verdicts are equal and
  `p_e = P(judge pass) * P(human pass) + P(judge fail) * P(human fail)` from the two marginals. It is computed
  from the integer counts as `(n * equal - S) / (n**2 - S)` with `S = judge_pass * human_pass + judge_fail *
  human_fail` (exact integers, one division), so perfect agreement gives exactly 1.0. Undefined (None) when
  `p_e == 1` (both sides give one and the same verdict to every item) and for no pairs.
- `binary_agreement`: `agreement` is `p_o`; `true_pass_rate` is the share of human "pass" items the judge
  passed, `true_fail_rate` the share of human "fail" items it failed, `balanced_accuracy` their mean.
  It is insufficient (`insufficient` says why, every figure is None, the confusion is still given) when there are
  fewer than `min_labels` pairs (at least 1): "12 labels (at least 20 needed)"; or when the human labels have
  one class only, as kappa and balanced accuracy mean nothing then: "no human 'fail' label among 25" (or
  'pass'). The fewer-labels reason wins when both hold. With both human classes present kappa is always defined.
- The kappa interval is a percentile bootstrap: `resamples` resamples of the `n` (judge, human) pairs, drawn with
  replacement by `numpy.random.default_rng(seed).integers(0, n, size=(rows, n))` in blocks of about 2**20
  indices (row after row, so a loop drawing one resample at a time with `size=n` sees the same indices; memory
  stays bounded for large label sets); each resample's kappa is computed by the rule above, all rows of a block
  at once. Resamples whose kappa is undefined (every drawn pair shows the same verdict on both sides) are
  dropped, so the interval comes from the defined ones only. The interval is the `(1 - confidence) / 2` and
  `(1 + confidence) / 2` quantiles of the defined kappas (numpy's default linear interpolation); None when fewer
  than 2 resamples are defined. The seed defaults to `BOOTSTRAP_SEED`: identical inputs always give identical
  results.
- `scored_agreement` (numeric scores, e.g. a 1-5 rating): `spearman_rho` is the Pearson correlation of the
  average ranks (tied values share the mean of the ranks they span, as `scipy.stats.spearmanr` does); None when
  either side is constant. `mean_absolute_error` is the mean of `|judge - human|`. Insufficient when fewer than
  `min_labels` pairs (at least 1), as for binary labels. A non-finite score raises a ValueError.
- `self_consistency`: for each judged item, the judge's verdicts over repeated samples (None = an unusable
  sample, ignored). An item's consistency is the share of its usable samples equal to its majority verdict,
  `max(passes, fails) / (passes + fails)`, so a tie counts 0.5. The result is the mean over the items with at
  least 2 usable samples; None when no item has.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import fmean

import numpy as np
from numpy.typing import NDArray

from agent_eval.results.agreement_model import BinaryAgreement, Confusion, JudgeAgreement, ScoredAgreement
from agent_eval.results.stats import BOOTSTRAP_SEED, check_confidence, check_resamples

__all__ = [
    "MIN_LABELS",
    "BinaryAgreement",
    "Confusion",
    "JudgeAgreement",
    "ScoredAgreement",
    "binary_agreement",
    "cohen_kappa",
    "kappa_gain",
    "scored_agreement",
    "self_consistency",
]

MIN_LABELS = 20
"""Fewer labelled items than this: "too few labels", no figure is shown."""

_BLOCK_INDICES = 2**20


def cohen_kappa(judge: Sequence[bool], human: Sequence[bool]) -> float | None:
    """Cohen's kappa of paired verdicts; None when undefined (chance agreement 1, or no pairs).

    Raises:
        ValueError: the sequences differ in length.
    """
    _check_lengths("cohen_kappa", judge, human, ("verdict", "label"))
    judge_pass, human_pass = sum(map(bool, judge)), sum(map(bool, human))
    equal = sum(bool(j) == bool(h) for j, h in zip(judge, human, strict=True))
    return _kappa(len(judge), equal, judge_pass, human_pass)


def binary_agreement(
    judge: Sequence[bool],
    human: Sequence[bool],
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = BOOTSTRAP_SEED,
    min_labels: int = MIN_LABELS,
) -> BinaryAgreement:
    """The judge's pass/fail verdicts against human labels: rules in the module docstring.

    Args:
        judge: the judge's verdict per item (True = pass).
        human: the human label of the same items, in the same order.
        confidence: the kappa interval's coverage, in (0, 1).
        resamples: how many bootstrap resamples to draw (at least 1).
        seed: the seed of `numpy.random.default_rng`; the same seed gives the same interval.
        min_labels: fewer pairs than this give no figure.

    Raises:
        ValueError: the sequences differ in length, or bad bootstrap settings.
    """
    _check_lengths("binary_agreement", judge, human, ("verdict", "label"))
    check_confidence(confidence)
    check_resamples(resamples)
    judged, labelled = np.asarray(judge, dtype=bool), np.asarray(human, dtype=bool)
    confusion = _confusion(judged, labelled)
    n = judged.size
    reason = _too_few(n, min_labels) or _one_class(confusion, n)
    if reason is not None:
        return BinaryAgreement(
            n=n,
            agreement=None,
            balanced_accuracy=None,
            kappa=None,
            kappa_interval=None,
            true_pass_rate=None,
            true_fail_rate=None,
            confusion=confusion,
            insufficient=reason,
        )
    true_pass_rate = confusion.pass_pass / (confusion.pass_pass + confusion.pass_fail)
    true_fail_rate = confusion.fail_fail / (confusion.fail_pass + confusion.fail_fail)
    equal = confusion.pass_pass + confusion.fail_fail
    return BinaryAgreement(
        n=n,
        agreement=equal / n,
        balanced_accuracy=(true_pass_rate + true_fail_rate) / 2.0,
        kappa=_kappa(n, equal, confusion.pass_pass + confusion.fail_pass, confusion.pass_pass + confusion.pass_fail),
        kappa_interval=_kappa_interval(judged, labelled, confidence, resamples, seed),
        true_pass_rate=true_pass_rate,
        true_fail_rate=true_fail_rate,
        confusion=confusion,
        insufficient=None,
    )


def scored_agreement(
    judge: Sequence[float], human: Sequence[float], *, min_labels: int = MIN_LABELS
) -> ScoredAgreement:
    """The judge's numeric scores against human scores: Spearman's rho and the mean absolute error.

    Raises:
        ValueError: the sequences differ in length, or a score is not finite.
    """
    _check_lengths("scored_agreement", judge, human, ("score", "score"))
    judged, labelled = np.asarray(judge, dtype=np.float64), np.asarray(human, dtype=np.float64)
    for side, values in (("judge", judged), ("human", labelled)):
        if not np.isfinite(values).all():
            bad = int(np.flatnonzero(~np.isfinite(values))[0])
            raise ValueError(f"scored_agreement needs finite scores, got {float(values[bad])!r} at {side} index {bad}")
    n = judged.size
    reason = _too_few(n, min_labels)
    if reason is not None:
        return ScoredAgreement(n=n, spearman_rho=None, mean_absolute_error=None, insufficient=reason)
    return ScoredAgreement(
        n=n,
        spearman_rho=_spearman(judged, labelled),
        mean_absolute_error=float(np.abs(judged - labelled).mean()),
        insufficient=None,
    )


def self_consistency(samples: Sequence[Sequence[bool | None]]) -> float | None:
    """The mean share of an item's usable sample verdicts that equal its majority verdict (a tie counts 0.5),
    over the items with at least 2 usable samples; None when there is none."""
    shares = []
    for verdicts in samples:
        usable = [verdict for verdict in verdicts if verdict is not None]
        if len(usable) >= 2:
            passes = sum(map(bool, usable))
            shares.append(max(passes, len(usable) - passes) / len(usable))
    return fmean(shares) if shares else None


def _check_lengths(function: str, judge: Sequence[object], human: Sequence[object], what: tuple[str, str]) -> None:
    """Raise a ValueError unless both sides have one entry per item (`what`: the judge's and the human's word)."""
    if len(judge) != len(human):
        raise ValueError(
            f"{function} needs one human label per judged item, got {_count(len(judge), 'judge ' + what[0])} and "
            f"{_count(len(human), 'human ' + what[1])}"
        )


def _count(n: int, noun: str) -> str:
    """`1 label`, `2 labels`."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def kappa_gain(
    before: Sequence[bool],
    after: Sequence[bool],
    human: Sequence[bool],
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float | None, tuple[float, float] | None]:
    """How much a judge's kappa rose from `before` to `after` (two verdicts per item, against the same `human`
    labels), with the paired percentile bootstrap interval of the gain: each resample draws the same items for
    both sides (`numpy.random.default_rng(seed).integers(0, n, size=(rows, n))`, as `binary_agreement` draws),
    resamples where either kappa is undefined are dropped, and the interval is None with fewer than 2 left.

    Raises:
        ValueError: the three sequences differ in length, or a bad confidence or resamples.
    """
    _check_lengths("kappa_gain", before, human, ("verdict before", "label"))
    _check_lengths("kappa_gain", after, human, ("verdict after", "label"))
    check_confidence(confidence)
    check_resamples(resamples)
    first, second = cohen_kappa(before, human), cohen_kappa(after, human)
    gain = None if first is None or second is None else second - first
    labelled = np.asarray(human, dtype=bool)
    if labelled.size == 0:
        return gain, None
    rng = np.random.default_rng(seed)
    gains = _bootstrap_gains(np.asarray(before, dtype=bool), np.asarray(after, dtype=bool), labelled, resamples, rng)
    if gains.size < 2:
        return gain, None
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(gains, [alpha, 1.0 - alpha])
    return gain, (float(low), float(high))


def _bootstrap_gains(
    before: NDArray[np.bool_],
    after: NDArray[np.bool_],
    labelled: NDArray[np.bool_],
    resamples: int,
    rng: np.random.Generator,
) -> NDArray[np.float64]:
    """The defined kappa gains of `resamples` paired resamples, drawn in memory-bounded blocks."""
    n = labelled.size
    rows_per_block = max(1, _BLOCK_INDICES // n)
    blocks = []
    for start in range(0, resamples, rows_per_block):
        indices = rng.integers(0, n, size=(min(rows_per_block, resamples - start), n))
        kappa_before, defined_before = _resampled_kappas(before, labelled, indices)
        kappa_after, defined_after = _resampled_kappas(after, labelled, indices)
        defined = defined_before & defined_after
        blocks.append(kappa_after[defined] - kappa_before[defined])
    return np.concatenate(blocks)


def _resampled_kappas(
    judged: NDArray[np.bool_], labelled: NDArray[np.bool_], indices: NDArray[np.int64]
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Each row's kappa (0 where undefined) and whether it is defined."""
    n = judged.size
    judge_passes = np.take(judged.astype(np.int8), indices).sum(axis=1, dtype=np.int64)
    human_passes = np.take(labelled.astype(np.int8), indices).sum(axis=1, dtype=np.int64)
    chance = judge_passes * human_passes + (n - judge_passes) * (n - human_passes)
    denominator = n * n - chance
    defined = denominator != 0
    numerator = n * np.take((judged == labelled).astype(np.int8), indices).sum(axis=1, dtype=np.int64) - chance
    kappas = np.divide(numerator, denominator, out=np.zeros(numerator.shape, dtype=np.float64), where=defined)
    return kappas, defined


def _kappa(n: int, equal: int, judge_pass: int, human_pass: int) -> float | None:
    """Kappa from integer counts: `(n * equal - S) / (n**2 - S)`; None when the denominator is 0."""
    chance = judge_pass * human_pass + (n - judge_pass) * (n - human_pass)
    denominator = n * n - chance
    return (n * equal - chance) / denominator if denominator else None


def _confusion(judged: NDArray[np.bool_], labelled: NDArray[np.bool_]) -> Confusion:
    """The confusion counts of paired bool arrays."""
    return Confusion(
        pass_pass=int(np.count_nonzero(labelled & judged)),
        pass_fail=int(np.count_nonzero(labelled & ~judged)),
        fail_pass=int(np.count_nonzero(~labelled & judged)),
        fail_fail=int(np.count_nonzero(~labelled & ~judged)),
    )


def _too_few(n: int, min_labels: int) -> str | None:
    """ "12 labels (at least 20 needed)" when `n` is below `min_labels` (or 0), else None."""
    needed = max(min_labels, 1)
    if n >= needed:
        return None
    return f"{_count(n, 'label')} (at least {needed} needed)"


def _one_class(confusion: Confusion, n: int) -> str | None:
    """ "no human 'fail' label among 25" when the human labels have one class only, else None."""
    human_pass = confusion.pass_pass + confusion.pass_fail
    if human_pass == n:
        return f"no human 'fail' label among {n}"
    if human_pass == 0:
        return f"no human 'pass' label among {n}"
    return None


def _kappa_interval(
    judged: NDArray[np.bool_], labelled: NDArray[np.bool_], confidence: float, resamples: int, seed: int
) -> tuple[float, float] | None:
    """The percentile bootstrap interval of kappa over the defined resamples; None when fewer than 2."""
    kappas = _bootstrap_kappas(judged, labelled, resamples, np.random.default_rng(seed))
    if kappas.size < 2:
        return None
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(kappas, [alpha, 1.0 - alpha])
    return float(low), float(high)


def _bootstrap_kappas(
    judged: NDArray[np.bool_], labelled: NDArray[np.bool_], resamples: int, rng: np.random.Generator
) -> NDArray[np.float64]:
    """The defined kappas of `resamples` resamples of the pairs (with replacement), drawn in memory-bounded
    blocks, every row of a block at once."""
    n = judged.size
    rows_per_block = max(1, _BLOCK_INDICES // n)
    judge_pass, human_pass, equal = (side.astype(np.int8) for side in (judged, labelled, judged == labelled))
    blocks = []
    for start in range(0, resamples, rows_per_block):
        indices = rng.integers(0, n, size=(min(rows_per_block, resamples - start), n))
        judge_passes = np.take(judge_pass, indices).sum(axis=1, dtype=np.int64)
        human_passes = np.take(human_pass, indices).sum(axis=1, dtype=np.int64)
        chance = judge_passes * human_passes + (n - judge_passes) * (n - human_passes)
        denominator = n * n - chance
        defined = denominator != 0
        numerator = n * np.take(equal, indices).sum(axis=1, dtype=np.int64) - chance
        blocks.append(numerator[defined] / denominator[defined])
    return np.concatenate(blocks)


def _spearman(judged: NDArray[np.float64], labelled: NDArray[np.float64]) -> float | None:
    """The Pearson correlation of the average ranks; None when either side is constant."""
    if judged.size < 2 or (judged == judged[0]).all() or (labelled == labelled[0]).all():
        return None
    x, y = _average_ranks(judged), _average_ranks(labelled)
    x -= x.mean()
    y -= y.mean()
    rho = float((x * y).sum() / math.sqrt(float((x * x).sum()) * float((y * y).sum())))
    return min(1.0, max(-1.0, rho))


def _average_ranks(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """1-based ranks; tied values share the mean of the ranks they span."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts_group = np.concatenate(([True], ordered[1:] != ordered[:-1]))
    starts = np.flatnonzero(starts_group)
    ends = np.append(starts[1:], values.size)  # a group spans sorted positions starts[g] .. ends[g] - 1
    group_rank = (starts + 1 + ends) / 2.0
    ranks = np.empty(values.size, dtype=np.float64)
    ranks[order] = group_rank[np.cumsum(starts_group) - 1]
    return ranks
