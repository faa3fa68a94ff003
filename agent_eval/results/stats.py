"""Statistics for comparing runs: per-case samples, the paired bootstrap interval of a mean difference, pass@k.

Internal: the public API is `agent_eval`'s; this module's names may change between releases.

Plain functions, vectorised with numpy where it matters. The rules they follow:

- `runs_by_case` groups a report's case results by `(eval_set_id, eval_id)`; `case_scores` gives each case's
  score per metric as the mean over its runs with a finite score (None when no run has one), cases in sorted
  `(eval_set_id, eval_id)` order whatever the order the case runs finished in, so that the bootstrap pairs
  (and so the interval and the verdict) of two given runs never change from one comparison to the next;
  `informational_metrics` are those with an INFORMATIONAL result and no PASSED or FAILED one.
- `paired_bootstrap_interval`: draws `resamples` resamples of the paired differences, each of `n` cases drawn
  with replacement by `numpy.random.default_rng(seed).integers(0, n, size=n)` (row after row, so a loop drawing
  one resample at a time sees the same indices); the interval is the `(1 - confidence) / 2` and
  `(1 + confidence) / 2` quantiles of the resampled means (numpy's default linear interpolation). One difference
  gives the degenerate interval `[d, d]`; identical differences give `[d, d]` too (every resample mean is `d`).
  Resamples are drawn in blocks of about 2**20 indices, so memory stays bounded for large eval sets.
  The seed is a constant, `BOOTSTRAP_SEED` (0, `compare_runs`' default, which the flow uses): with the pairs in
  a fixed order, the same two runs always give the same interval, on a tiny sample too.
- `paired_difference`: the means of the paired scores on each side, the mean difference (current − baseline)
  and its bootstrap interval.
- `unpaired_difference` (recorded traffic: each run scored other sessions, nothing pairs): each side's mean,
  the difference of the means, and the percentile interval of the difference of independently resampled means
  (the baseline's resamples drawn first, then the current's, from one generator seeded with `seed`).
- `pass_at_k`: the unbiased estimator of Chen et al. (2021), `1 - C(n - c, k) / C(n, k)` for `n` runs of which
  `c` passed, computed exactly with integers; it is 1.0 when fewer than `k` runs failed. `mean_pass_at_k`
  averages it over cases, each k over the cases that ran at least k times.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import TypeAlias

import numpy as np
from numpy.typing import NDArray

from agent_eval.results.model import CaseResult
from agent_eval.schema import EvalStatus

__all__ = [
    "BOOTSTRAP_SEED",
    "CaseKey",
    "CaseRuns",
    "PairedDifference",
    "case_scores",
    "check_confidence",
    "check_resamples",
    "check_tolerance",
    "informational_metrics",
    "mean_pass_at_k",
    "paired_bootstrap_interval",
    "paired_difference",
    "pass_at_k",
    "pass_at_ks",
    "runs_by_case",
    "unpaired_difference",
]

CaseKey: TypeAlias = tuple[str, str]
"""A case across its runs: `(eval_set_id, eval_id)`."""
CaseRuns: TypeAlias = Mapping[CaseKey, list[CaseResult]]
"""A report's case results grouped by case, one per run."""

BOOTSTRAP_SEED = 0
"""The seed of every regression verdict's bootstrap: a constant, so a comparison can be repeated exactly."""

_BLOCK_INDICES = 2**20


def runs_by_case(cases: Iterable[CaseResult]) -> dict[CaseKey, list[CaseResult]]:
    """The case results grouped by `(eval_set_id, eval_id)`, cases and runs in report order."""
    runs: dict[CaseKey, list[CaseResult]] = {}
    for case in cases:
        runs.setdefault((case.eval_set_id, case.eval_id), []).append(case)
    return runs


def case_scores(runs: CaseRuns, keys: Iterable[CaseKey]) -> dict[str, dict[CaseKey, float | None]]:
    """Per metric, per case of `keys` (in sorted order): the mean score over the case's runs with a finite score
    (None if none)."""
    scores: defaultdict[str, dict[CaseKey, list[float]]] = defaultdict(dict)
    for key in sorted(keys):
        for case in runs[key]:
            for result in case.metrics:
                scored = scores[result.metric_name].setdefault(key, [])
                if result.score is not None and math.isfinite(result.score):
                    scored.append(result.score)
    return {name: {key: fmean(v) if v else None for key, v in by_case.items()} for name, by_case in scores.items()}


@dataclass(frozen=True)
class PairedDifference:
    """Paired scores summarised: each side's mean, the mean difference (current − baseline) and its interval."""

    n: int
    baseline_mean: float
    current_mean: float
    difference: float
    low: float
    high: float


def informational_metrics(sides: Iterable[CaseRuns], keys: Sequence[CaseKey]) -> set[str]:
    """Metrics with an INFORMATIONAL result and no PASSED or FAILED one on these cases of any side."""
    results = [result for runs in sides for key in keys for case in runs[key] for result in case.metrics]
    gated = {result.metric_name for result in results if result.status in (EvalStatus.PASSED, EvalStatus.FAILED)}
    return {result.metric_name for result in results if result.status is EvalStatus.INFORMATIONAL} - gated


def paired_difference(
    pairs: Sequence[tuple[float, float]], *, confidence: float, resamples: int, seed: int
) -> PairedDifference:
    """The paired comparison of `(baseline, current)` scores, one pair per case.

    Raises:
        ValueError: no pairs, or bad bootstrap settings (see `paired_bootstrap_interval`).
    """
    scores = np.asarray(pairs, dtype=np.float64).reshape(-1, 2)
    differences = scores[:, 1] - scores[:, 0]
    low, high = paired_bootstrap_interval(differences, confidence=confidence, resamples=resamples, seed=seed)
    return PairedDifference(
        n=len(differences),
        baseline_mean=float(scores[:, 0].mean()),
        current_mean=float(scores[:, 1].mean()),
        difference=float(differences.mean()),
        low=low,
        high=high,
    )


def unpaired_difference(
    baseline: Sequence[float], current: Sequence[float], *, confidence: float, resamples: int, seed: int
) -> PairedDifference:
    """Two independent samples compared (`n` is the smaller sample's size): rule in the module docstring.

    Raises:
        ValueError: an empty side, or bad bootstrap settings.
    """
    if not baseline or not current:
        raise ValueError("unpaired_difference needs scores on both sides")
    check_confidence(confidence)
    check_resamples(resamples)
    before, after = np.asarray(baseline, dtype=np.float64), np.asarray(current, dtype=np.float64)
    rng = np.random.default_rng(seed)
    before_means = _bootstrap_means(before, resamples, rng)  # drawn first, as the module docstring says
    differences = _bootstrap_means(after, resamples, rng) - before_means
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(differences, [alpha, 1.0 - alpha])
    return PairedDifference(
        n=min(before.size, after.size),
        baseline_mean=float(before.mean()),
        current_mean=float(after.mean()),
        difference=float(after.mean() - before.mean()),
        low=float(low),
        high=float(high),
    )


def paired_bootstrap_interval(
    differences: Sequence[float] | NDArray[np.float64],
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float]:
    """The percentile bootstrap interval of the mean of paired differences (cases resampled with replacement).

    Args:
        differences: one difference (current − baseline) per paired case.
        confidence: the interval's coverage, in (0, 1).
        resamples: how many bootstrap resamples to draw (at least 1).
        seed: the seed of `numpy.random.default_rng`; the same seed gives the same interval.

    Returns:
        `(low, high)`; `(d, d)` for a single difference `d`.

    Raises:
        ValueError: no differences, a confidence outside (0, 1), or fewer than one resample.
    """
    values = np.asarray(differences, dtype=np.float64)
    if values.size == 0:
        raise ValueError("paired_bootstrap_interval needs at least one difference, got none")
    check_confidence(confidence)
    check_resamples(resamples)
    if values.size == 1:
        return float(values[0]), float(values[0])
    means = _bootstrap_means(values, resamples, np.random.default_rng(seed))
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return float(low), float(high)


def _bootstrap_means(values: NDArray[np.float64], resamples: int, rng: np.random.Generator) -> NDArray[np.float64]:
    """The means of `resamples` resamples of `values` (with replacement), drawn in memory-bounded blocks."""
    n = values.size
    rows_per_block = max(1, _BLOCK_INDICES // n)
    blocks = []
    for start in range(0, resamples, rows_per_block):
        rows = min(rows_per_block, resamples - start)
        indices = rng.integers(0, n, size=(rows, n))
        blocks.append(values[indices].mean(axis=1))
    return np.concatenate(blocks)


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimate: the chance that at least one of `k` runs drawn from `n` passed.

    Args:
        n: the number of runs of the case.
        c: how many of them passed (0 ≤ c ≤ n).
        k: how many runs are drawn (1 ≤ k ≤ n).

    Raises:
        ValueError: counts out of range.
    """
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass_at_k needs 0 <= c <= n and 1 <= k <= n, got n={n!r}, c={c!r}, k={k!r}")
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_at_ks(n: int, c: int) -> dict[int, float]:
    """pass@k for k = 1..n, for `n` runs of which `c` passed."""
    return {k: pass_at_k(n, c, k) for k in range(1, n + 1)}


def mean_pass_at_k(per_case: Iterable[Mapping[int, float]]) -> dict[int, float]:
    """pass@k averaged over cases, each k over the cases that have it (ran at least k times), k ascending."""
    values: defaultdict[int, list[float]] = defaultdict(list)
    for case in per_case:
        for k, value in case.items():
            values[k].append(value)
    return {k: fmean(values[k]) for k in sorted(values)}


def check_confidence(confidence: float) -> None:
    """Raise a ValueError unless `confidence` is in (0, 1)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), e.g. 0.95, got {confidence!r}")


def check_tolerance(tolerance: float | Mapping[str, float]) -> None:
    """Raise a ValueError unless the tolerance (or every per-metric tolerance) is a number >= 0."""
    values = tolerance.items() if isinstance(tolerance, Mapping) else [("tolerance", tolerance)]
    for name, value in values:
        if not value >= 0.0:
            raise ValueError(f"tolerance for {name!r} must be a number >= 0 (an absolute drop), got {value!r}")


def check_resamples(resamples: int) -> None:
    """Raise a ValueError unless `resamples` is at least 1."""
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, e.g. 2000, got {resamples!r}")
