"""ADK's `response_match_score`: ROUGE-1 F-measure of the final response against the reference.

Tokenization is ADK 2.x's Unicode-aware tokenizer: NFKC, lowercase, every CJK character its own token, Thai /
Lao / Khmer / Myanmar split into grapheme clusters, any other non-word character a separator, and ASCII words
Porter-stemmed (NLTK's stemmer, as `rouge-score` uses) when longer than 3 characters. Precision and recall are
clipped unigram-count overlaps; the F-measure of empty against empty is 0, as in `rouge-score`. The text of a
content is its text parts joined with a newline. Overall score = mean over invocations.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections import Counter
from functools import lru_cache
from typing import Any

from agent_eval.metrics.common import below_threshold
from agent_eval.metrics.registry import metric
from agent_eval.schema import Invocation, content_text

__all__ = ["STEMMING_METRICS", "preload_stemmer", "response_match_score", "rouge1_fmeasure", "tokenize"]

_ASCII_WORD = re.compile(r"[a-z0-9]+")


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    """NLTK's Porter stemmer, made on first use: `import nltk` costs ~1.5 s (it imports scipy.stats)."""
    from nltk.stem import porter

    return porter.PorterStemmer()


STEMMING_METRICS = frozenset({"response_match_score"})
"""The metrics that stem words (ROUGE): a run that scores one loads the stemmer while its agent works."""


def preload_stemmer() -> None:
    """Import NLTK's stemmer on a background thread now (a run with a stemming metric calls this at its start),
    so that the ~1.5 s import overlaps the agent's invocations instead of delaying the scores."""
    threading.Thread(target=_stemmer, name="agent-eval-preload-stemmer", daemon=True).start()


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return str(_stemmer().stem(word)) if len(word) > 3 else word


def _is_cjk(code: int) -> bool:
    return 0x4E00 <= code <= 0x9FFF or 0x3040 <= code <= 0x30FF or 0xAC00 <= code <= 0xD7AF


def _is_non_spaced(code: int) -> bool:
    return 0x0E00 <= code <= 0x0EFF or 0x1780 <= code <= 0x17FF or 0x1000 <= code <= 0x109F


def _split_unicode(text: str) -> list[str]:
    """ADK's character classes: CJK alone, non-spaced scripts by grapheme cluster, word runs, separators."""
    pieces: list[str] = []
    for char in text:
        code = ord(char)
        is_mark = unicodedata.category(char).startswith("M")
        if _is_cjk(code):
            pieces.extend((" ", char, " "))
        elif _is_non_spaced(code):
            pieces.append(char if is_mark else " " + char)
        elif char.isalnum() or is_mark:
            pieces.append(char)
        else:
            pieces.append(" ")
    return "".join(pieces).split()


@lru_cache(maxsize=16384)
def tokenize(text: str) -> tuple[str, ...]:
    """The tokens ADK's `response_match_score` compares (see the module docstring)."""
    if text.isascii():
        return tuple(_stem(word) for word in _ASCII_WORD.findall(text.lower()))
    words = _split_unicode(unicodedata.normalize("NFKC", text).lower())
    tokens: list[str] = []
    for word in words:
        if word.isascii():
            tokens.extend(_stem(w) for w in _ASCII_WORD.findall(word))
        else:
            tokens.append(word)
    return tuple(tokens)


def rouge1_fmeasure(reference: str, candidate: str) -> float:
    """ROUGE-1 F-measure of `candidate` against `reference`, equal to `rouge-score`'s with ADK's tokenizer."""
    target, prediction = tokenize(reference), tokenize(candidate)
    if not target or not prediction:
        return 0.0
    overlap = sum((Counter(target) & Counter(prediction)).values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(prediction), overlap / len(target)
    return 2 * precision * recall / (precision + recall)


@metric(
    "response_match_score",
    description="ROUGE-1 F-measure of the final response against the reference (ADK, Unicode-aware).",
    per_invocation=True,
    explain_when=below_threshold,
)
def response_match_score(actual: Invocation, expected: Invocation) -> tuple[float, str]:
    """ADK's response match metric (see the module docstring); a failing turn says what was compared."""
    reference, response = content_text(expected.final_response), content_text(actual.final_response)
    score = rouge1_fmeasure(reference, response)
    return score, f"ROUGE-1 F {score:.3f}: expected {reference!r}, got {response!r}"
