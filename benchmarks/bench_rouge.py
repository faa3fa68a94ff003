"""Benchmark of `response_match_score`'s ROUGE-1: ours against `rouge-score`, on the same random English pairs.

What is measured: 20,000 (reference, candidate) pairs of 5-40 words drawn from a ~2,000-word vocabulary
(seeded: 500 made-up stems, each with three inflections such as -s, -ed, -ing, -ly; capitals and punctuation
sprinkled in; half the candidates reuse words of their reference so scores spread over [0, 1]). Each pair
is scored by `agent_eval.metrics.response.rouge1_fmeasure` and by
`rouge_score.rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True).score(reference, candidate)`; the script
asserts that every score is identical (|difference| < 1e-12) and prints cases/second and the speed ratio.

Two workloads, each timed for both implementations:
- cold: 20,000 distinct references and candidates; our `tokenize` and `_stem` caches are cleared right before
  our timed run, so nothing computed earlier (e.g. while checking results) is reused.
- repeated references: 20,000 fresh candidates against 1,000 distinct references (an eval set of 1,000
  cases scored over 20 runs, as references repeat across runs); our caches are cleared before the timed run
  too, so only repetition within the run helps.
Each timing is the best of `--repeat` runs (caches cleared before each of ours).

Usage (from the repository root):
    python benchmarks/bench_rouge.py [--pairs 20000] [--repeat 3] [--seed 7]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable, Sequence

from rouge_score import rouge_scorer

from agent_eval.metrics import response

Pair = tuple[str, str]
STEMS, MIN_WORDS, MAX_WORDS, DISTINCT_REFERENCES = 500, 5, 40, 1_000
TARGET_RATIO = 10.0
_ONSETS = ["b", "c", "d", "f", "g", "h", "l", "m", "n", "p", "r", "s", "t", "v", "w", "br", "ch", "st", "tr", "pl"]
_VOWELS = ["a", "e", "i", "o", "u", "ai", "ea", "ou"]
_CODAS = ["", "n", "r", "s", "t", "l", "nd", "rt", "ck", "st"]
_SUFFIXES = ["s", "ed", "ing", "er", "ly", "ness", "ation", "ful", "es", "ies"]


def vocabulary(rng: random.Random) -> list[str]:
    """~2,000 words: `STEMS` made-up stems, each with three inflections of it."""
    stems: set[str] = set()
    while len(stems) < STEMS:
        syllables = rng.randint(1, 3)
        stems.add("".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(syllables)) + rng.choice(_CODAS))
    words = []
    for stem in sorted(stems):
        words.append(stem)
        words.extend(stem + suffix for suffix in rng.sample(_SUFFIXES, 3))
    return words


def sentence(rng: random.Random, words: Sequence[str], pool: Sequence[str] = ()) -> str:
    """5-40 words, from `pool` (the reference's words) half the time when given; some capitals and punctuation."""
    chosen = []
    for _ in range(rng.randint(MIN_WORDS, MAX_WORDS)):
        word = rng.choice(pool) if pool and rng.random() < 0.5 else rng.choice(words)
        if rng.random() < 0.08:
            word = word.capitalize()
        if rng.random() < 0.1:
            word += rng.choice([",", ".", "!", "?", ";"])
        chosen.append(word)
    return " ".join(chosen)


def candidate(rng: random.Random, words: Sequence[str], reference: str) -> str:
    """A response to `reference`: half the time it reuses the reference's words."""
    return sentence(rng, words, reference.split() if rng.random() < 0.5 else ())


def make_pairs(seed: int, count: int) -> tuple[list[Pair], list[Pair]]:
    """The cold workload (distinct references) and the repeated-references one (fresh candidates)."""
    rng = random.Random(seed)
    words = vocabulary(rng)
    references = [sentence(rng, words) for _ in range(count)]
    cold = [(reference, candidate(rng, words, reference)) for reference in references]
    repeated = [references[i % DISTINCT_REFERENCES] for i in range(count)]
    return cold, [(reference, candidate(rng, words, reference)) for reference in repeated]


def ours(pairs: Sequence[Pair]) -> list[float]:
    """Our scores, with our caches cleared first."""
    response.tokenize.cache_clear()
    response._stem.cache_clear()
    return [response.rouge1_fmeasure(reference, candidate) for reference, candidate in pairs]


def theirs(pairs: Sequence[Pair]) -> list[float]:
    """`rouge-score`'s scores (a fresh scorer; it keeps no cache)."""
    scorer = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)
    return [scorer.score(reference, candidate)["rouge1"].fmeasure for reference, candidate in pairs]


def best_time(
    function: Callable[[Sequence[Pair]], list[float]], pairs: Sequence[Pair], repeat: int
) -> tuple[float, list[float]]:
    """The fastest of `repeat` runs, and the scores of the last one."""
    best, scores = float("inf"), []
    for _ in range(repeat):
        start = time.perf_counter()
        scores = function(pairs)
        best = min(best, time.perf_counter() - start)
    return best, scores


def compare(name: str, pairs: Sequence[Pair], repeat: int) -> float:
    """Time both on `pairs`, check the scores agree, print one line; returns the speed ratio."""
    our_time, our_scores = best_time(ours, pairs, repeat)
    their_time, their_scores = best_time(theirs, pairs, repeat)
    worst = max(abs(a - b) for a, b in zip(our_scores, their_scores, strict=True))
    if worst >= 1e-12:
        sys.exit(f"{name}: scores differ by up to {worst!r}")
    ratio, mean = their_time / our_time, sum(our_scores) / len(our_scores)
    print(
        f"{name:<18} {len(pairs):>6} pairs (mean F {mean:.3f})  ours {len(pairs) / our_time:>8,.0f} cases/s  "
        f"rouge-score {len(pairs) / their_time:>6,.0f} cases/s  ratio {ratio:5.1f}x  (max |diff| {worst:.1e})"
    )
    return ratio


def main() -> None:
    """Run both workloads and report; exits non-zero if a score differs."""
    parser = argparse.ArgumentParser(description="ROUGE-1: agent_eval against rouge-score")
    parser.add_argument("--pairs", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    cold, repeated = make_pairs(args.seed, args.pairs)
    cold_ratio = compare("cold cache", cold, args.repeat)
    compare(f"{DISTINCT_REFERENCES:,} references", repeated, args.repeat)
    verdict = "meets" if cold_ratio >= TARGET_RATIO else "misses"
    print(f"cold ratio {cold_ratio:.1f}x {verdict} the {TARGET_RATIO:.0f}x target")


if __name__ == "__main__":
    main()
