"""ADK-Rust's `response_similarity` (`adk-eval`): the final response against the expected one.

`response_similarity`, options `algorithm` (exact, contains, levenshtein, jaccard, rouge1, rouge2, rouge_l;
default jaccard), `normalize` (default true), `ignore_case` (default true), `ignore_punctuation` (default
false), compares the agent's final response with the expected one. Normalizing lowercases (if `ignore_case`),
deletes every character that is not a letter, digit, combining mark or whitespace (if `ignore_punctuation`)
and collapses whitespace runs to one space; as in ADK-Rust, `ignore_case` and `ignore_punctuation` only act
when `normalize` is true. Tokens are the whitespace-separated words, with every CJK character (Han, kana,
Hangul syllables) a token of its own.
- `exact`: 1 if the texts are equal. `contains`: 1 if either text contains the other; deliberately 0 when
  exactly one text is empty (ADK-Rust gives 1: the empty string is contained in any text).
- `levenshtein`: 1 - edit_distance / max(len) in characters (ADK-Rust divides by UTF-8 bytes); both empty 1.
- `jaccard`: |S ∩ T| / |S ∪ T| on the token sets; both empty 1.
- `rouge1` / `rouge2`: recall of the expected text's unique n-grams; an expected text with no n-gram gives 1
  if the response has none either, else 0.
- `rouge_l`: F1 of the token LCS; an empty expected text gives 1 if the response is empty too, else 0.
"""

from __future__ import annotations

import enum
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, fields

from rapidfuzz.distance import LCSseq, Levenshtein

from agent_eval.errors import EvalInputError
from agent_eval.metrics.common import bool_option, needs_explanation
from agent_eval.metrics.registry import metric
from agent_eval.schema import EvalMetric, Invocation, content_text

__all__ = [
    "SIMILARITY_OPTION_KEYS",
    "SimilarityAlgorithm",
    "SimilarityOptions",
    "normalize_text",
    "response_similarity",
    "similarity",
    "similarity_tokens",
]

_CJK = re.compile("([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff])")


class SimilarityAlgorithm(enum.Enum):
    """ADK-Rust's similarity algorithms, by their config names."""

    EXACT = "exact"
    CONTAINS = "contains"
    LEVENSHTEIN = "levenshtein"
    JACCARD = "jaccard"
    ROUGE1 = "rouge1"
    ROUGE2 = "rouge2"
    ROUGE_L = "rouge_l"

    @classmethod
    def parse(cls, value: object, *, field: str) -> SimilarityAlgorithm:
        """The algorithm named `value` (case-insensitive).

        Raises:
            EvalInputError: an unknown name; the message lists the valid ones.
        """
        if isinstance(value, SimilarityAlgorithm):
            return value
        names = {algorithm.value: algorithm for algorithm in cls}
        if isinstance(value, str) and value.lower() in names:
            return names[value.lower()]
        raise EvalInputError(f"unknown algorithm {value!r}; choose one of {', '.join(names)}", field=field)


@dataclass(frozen=True)
class SimilarityOptions:
    """The options of `response_similarity`, with ADK-Rust's defaults."""

    algorithm: SimilarityAlgorithm = SimilarityAlgorithm.JACCARD
    normalize: bool = True
    ignore_case: bool = True
    ignore_punctuation: bool = False

    @classmethod
    def of(cls, eval_metric: EvalMetric) -> SimilarityOptions:
        """The options of a criterion.

        Raises:
            EvalInputError: an unknown algorithm or a flag that is not a boolean.
        """
        field = f"criteria.{eval_metric.metric_name}.algorithm"
        return cls(
            algorithm=SimilarityAlgorithm.parse(eval_metric.option("algorithm", "jaccard"), field=field),
            normalize=bool_option(eval_metric, "normalize", True),
            ignore_case=bool_option(eval_metric, "ignore_case", True),
            ignore_punctuation=bool_option(eval_metric, "ignore_punctuation", False),
        )

    def as_details(self) -> dict[str, str | bool]:
        """The options as a result's `details` record them."""
        return {
            "algorithm": self.algorithm.value,
            "normalize": self.normalize,
            "ignore_case": self.ignore_case,
            "ignore_punctuation": self.ignore_punctuation,
        }


SIMILARITY_OPTION_KEYS = frozenset(option.name for option in fields(SimilarityOptions))
"""The options of `response_similarity` (any other key is rejected when the config is resolved)."""


def _is_kept(char: str) -> bool:
    return char.isalnum() or char.isspace() or unicodedata.category(char).startswith("M")


def normalize_text(text: str, *, ignore_case: bool = True, ignore_punctuation: bool = False) -> str:
    """Lowercase (if `ignore_case`), drop punctuation and symbols (if `ignore_punctuation`), collapse whitespace."""
    if ignore_case:
        text = text.lower()
    if ignore_punctuation:
        text = "".join(char for char in text if _is_kept(char))
    return " ".join(text.split())


def similarity_tokens(text: str) -> list[str]:
    """The whitespace-separated words of `text`, every CJK character a token of its own."""
    return _CJK.sub(r" \1 ", text).split()


def _contains(expected: str, actual: str) -> float:
    if not expected or not actual:
        return float(expected == actual)
    return float(expected in actual or actual in expected)


def _levenshtein(expected: str, actual: str) -> float:
    return float(Levenshtein.normalized_similarity(expected, actual))


def _jaccard(expected: str, actual: str) -> float:
    left, right = set(similarity_tokens(expected)), set(similarity_tokens(actual))
    return len(left & right) / len(left | right) if left or right else 1.0


def _ngrams(text: str, n: int) -> set[tuple[str, ...]]:
    tokens = similarity_tokens(text)
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


def _rouge_n(expected: str, actual: str, n: int) -> float:
    reference, candidate = _ngrams(expected, n), _ngrams(actual, n)
    if not reference:
        return float(not candidate)
    return len(reference & candidate) / len(reference)


def _rouge_l(expected: str, actual: str) -> float:
    reference, candidate = similarity_tokens(expected), similarity_tokens(actual)
    if not reference:
        return float(not candidate)
    lcs = LCSseq.similarity(reference, candidate)
    if lcs == 0:
        return 0.0
    precision, recall = lcs / len(candidate), lcs / len(reference)
    return float(2 * precision * recall / (precision + recall))


_SCORERS: dict[SimilarityAlgorithm, Callable[[str, str], float]] = {
    SimilarityAlgorithm.EXACT: lambda expected, actual: float(expected == actual),
    SimilarityAlgorithm.CONTAINS: _contains,
    SimilarityAlgorithm.LEVENSHTEIN: _levenshtein,
    SimilarityAlgorithm.JACCARD: _jaccard,
    SimilarityAlgorithm.ROUGE1: lambda expected, actual: _rouge_n(expected, actual, 1),
    SimilarityAlgorithm.ROUGE2: lambda expected, actual: _rouge_n(expected, actual, 2),
    SimilarityAlgorithm.ROUGE_L: _rouge_l,
}


def similarity(expected: str, actual: str, options: SimilarityOptions | None = None) -> float:
    """ADK-Rust's response similarity of `actual` to the reference `expected` (see the module docstring)."""
    options = options or SimilarityOptions()
    if options.normalize:
        flags = {"ignore_case": options.ignore_case, "ignore_punctuation": options.ignore_punctuation}
        expected, actual = normalize_text(expected, **flags), normalize_text(actual, **flags)
    return _SCORERS[options.algorithm](expected, actual)


@metric(
    "response_similarity",
    description="Text similarity of the final response to the reference: exact, contains, levenshtein, jaccard, "
    "rouge1, rouge2 or rouge_l (ADK-Rust).",
    options=SimilarityOptions.of,
    option_keys=SIMILARITY_OPTION_KEYS,
    per_invocation=True,
    explain_when=needs_explanation,
    details=SimilarityOptions.as_details,
)
def response_similarity(actual: Invocation, expected: Invocation, *, options: SimilarityOptions) -> tuple[float, str]:
    """ADK-Rust's response similarity; `details` records the options used (see the module docstring).

    Raises:
        EvalInputError: an unknown `algorithm`, or a `normalize` / `ignore_case` / `ignore_punctuation` that is
            not a boolean.
    """
    reference, response = content_text(expected.final_response), content_text(actual.final_response)
    score = similarity(reference, response, options)
    return score, f"{options.algorithm.value} similarity {score:.3f}: expected {reference!r}, got {response!r}"
