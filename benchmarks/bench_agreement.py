"""Benchmark of the judge-agreement statistics: `binary_agreement` (kappa and its bootstrap interval) and
`scored_agreement` (Spearman's rho, mean absolute error) on a large label set.

The data: `--labels` (default 10,000) seeded human labels (60% pass) and a synthetic judge that gives the same
verdict 85% of the time; for the scored workload, human ratings 1-5 and the judge's rating moved by one point
15% of the time (clipped to 1-5), so both sides have many ties.

What is measured: the median wall time of `--repeat` runs (default 5) of `binary_agreement` with `--resamples`
(default 2000) bootstrap resamples, and of `scored_agreement`; and the peak growth of numpy's and Python's
allocations (`tracemalloc`, which numpy reports to) during one further run of each, above what was allocated
before it. It checks that every run gives the same result (the bootstrap is seeded) and exits 1 otherwise.

Usage (from the repository root):
    python benchmarks/bench_agreement.py [--labels 10000] [--resamples 2000] [--repeat 5] [--seed 7]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable

import numpy as np

from agent_eval.results.agreement import binary_agreement, scored_agreement

AGREE, HUMAN_PASS = 0.85, 0.6


def binary_labels(count: int, seed: int) -> tuple[list[bool], list[bool]]:
    """`(judge, human)`: the judge gives the human's verdict with probability `AGREE`."""
    rng = np.random.default_rng(seed)
    human = rng.random(count) < HUMAN_PASS
    judge = np.where(rng.random(count) < AGREE, human, ~human)
    return judge.tolist(), human.tolist()


def scored_labels(count: int, seed: int) -> tuple[list[float], list[float]]:
    """`(judge, human)` ratings 1-5: the judge's is one point off with probability `1 - AGREE`."""
    rng = np.random.default_rng(seed)
    human = rng.integers(1, 6, size=count)
    shift = np.where(rng.random(count) < AGREE, 0, rng.choice([-1, 1], size=count))
    return np.clip(human + shift, 1, 5).astype(float).tolist(), human.astype(float).tolist()


def median_time(run: Callable[[], object], repeat: int) -> tuple[float, list[object]]:
    """The median wall time of `repeat` runs, and every run's result."""
    times, results = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        results.append(run())
        times.append(time.perf_counter() - start)
    return statistics.median(times), results


def peak_growth(run: Callable[[], object]) -> int:
    """The peak of traced allocations during one run, above those before it, in bytes."""
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    run()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak - before


def main() -> None:
    """Time both functions, print a table; exits 1 if repeated runs differ."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--labels", type=int, default=10_000)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    judge, human = binary_labels(args.labels, args.seed)
    judge_scores, human_scores = scored_labels(args.labels, args.seed)
    runs: dict[str, Callable[[], object]] = {
        f"binary_agreement ({args.resamples:,} resamples)": lambda: binary_agreement(
            judge, human, resamples=args.resamples
        ),
        "scored_agreement": lambda: scored_agreement(judge_scores, human_scores),
    }
    print(f"{args.labels:,} labels, judge agrees {AGREE:.0%}, seed {args.seed}, median of {args.repeat}")
    print(f"{'function':<36} {'median ms':>10} {'peak MiB':>9}  result")
    differs = False
    for name, run in runs.items():
        seconds, results = median_time(run, args.repeat)
        differs |= any(result != results[0] for result in results)
        peak = peak_growth(run) / 2**20
        print(f"{name:<36} {seconds * 1000:>10.1f} {peak:>9.1f}  {summary(results[0])}")
    if differs:
        sys.exit("repeated runs gave different results")


def summary(result: object) -> str:
    """The headline figures of a result."""
    figures = result.model_dump(exclude={"confusion", "n", "insufficient"})  # type: ignore[attr-defined]
    return ", ".join(f"{key} {_figure(value)}" for key, value in figures.items())


def _figure(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    if isinstance(value, tuple):
        return "[" + ", ".join(f"{v:.4f}" for v in value) + "]"
    return str(value)


if __name__ == "__main__":
    main()
