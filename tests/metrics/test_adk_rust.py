"""ADK-Rust's `tool_trajectory_score` and `response_similarity` against hand-computed values."""

from __future__ import annotations

from typing import Any

import pytest
from google.genai.types import Content, FunctionCall, Part

from agent_eval.errors import EvalInputError
from agent_eval.metrics import REGISTRY
from agent_eval.metrics.common import MetricNotApplicable
from agent_eval.metrics.similarity import (
    SimilarityAlgorithm,
    SimilarityOptions,
    normalize_text,
    response_similarity,
    similarity,
    similarity_tokens,
)
from agent_eval.metrics.trajectory.rust import args_match, tool_trajectory_score
from agent_eval.schema import EvalConfig, EvalMetric, EvalStatus, IntermediateData, Invocation

A = FunctionCall(name="a")
B = FunctionCall(name="b")
C = FunctionCall(name="c")
X = FunctionCall(name="x")
PARIS = FunctionCall(name="get_weather", args={"city": "Paris"})
PARIS_CELSIUS = FunctionCall(name="get_weather", args={"city": "Paris", "unit": "celsius"})
LONDON = FunctionCall(name="get_weather", args={"city": "London"})
NAME_ONLY = FunctionCall(name="get_weather")
POWER_ON = FunctionCall(name="set_device_info", args={"device_id": "d1", "updates": {"power": "on"}})
POWER_ON_LEVEL = FunctionCall(name="set_device_info", args={"device_id": "d1", "updates": {"power": "on", "level": 3}})
TEMP_INT = FunctionCall(name="set_temperature", args={"temperature": 21})
TEMP_FLOAT = FunctionCall(name="set_temperature", args={"temperature": 21.0})

# (id, expected, actual, score with strict_order, score without)
TRAJECTORIES: list[tuple[str, list[FunctionCall], list[FunctionCall], float, float]] = [
    ("both empty", [], [], 1.0, 1.0),
    ("expected empty", [], [A], 0.0, 0.0),
    ("actual empty", [A], [], 0.0, 0.0),
    ("identical", [A, B, C], [A, B, C], 1.0, 1.0),
    ("one extra in the middle", [A, B, C], [A, X, B, C], 3 / 4, 3 / 4),
    ("swapped", [A, B], [B, A], 1 / 2, 1.0),
    ("rotated", [A, B, C], [C, A, B], 2 / 3, 1.0),
    ("greedy skips the rest", [X, A, B], [A, B, X], 1 / 3, 1.0),  # the first match jumps past A and B
    ("expected duplicate", [A, A], [A], 1 / 2, 1 / 2),
    ("actual duplicate", [A], [A, A], 1 / 2, 1 / 2),
    ("nothing in common", [A, B], [C], 0.0, 0.0),
]


def trajectory_score(expected: list[FunctionCall], actual: list[FunctionCall], **options: bool) -> float:
    """The metric's score of one turn with these calls."""
    metric = eval_metric("tool_trajectory_score", **options)
    score = tool_trajectory_score(metric, [invocation(actual)], [invocation(expected)], None).overall_score
    assert score is not None
    return score


@pytest.mark.parametrize("row", TRAJECTORIES, ids=[row[0] for row in TRAJECTORIES])
def test_trajectory_score(row: tuple[str, list[FunctionCall], list[FunctionCall], float, float]) -> None:
    _, expected, actual, ordered, unordered = row
    assert trajectory_score(expected, actual) == pytest.approx(ordered, abs=1e-12)
    assert trajectory_score(expected, actual, strict_order=False) == pytest.approx(unordered, abs=1e-12)


# (id, expected, actual, matches with partial args, matches with strict args)
ARGS: list[tuple[str, FunctionCall, FunctionCall, bool, bool]] = [
    ("equal", PARIS, PARIS, True, True),
    ("extra actual arg", PARIS, PARIS_CELSIUS, True, False),
    ("missing actual arg", PARIS_CELSIUS, PARIS, False, False),
    ("other value", PARIS, LONDON, False, False),
    ("no expected args", NAME_ONLY, PARIS, True, False),
    ("nested values compared whole", POWER_ON, POWER_ON_LEVEL, False, False),
    ("int equals float", TEMP_INT, TEMP_FLOAT, True, True),
    ("other name", PARIS, FunctionCall(name="get_forecast", args={"city": "Paris"}), False, False),
]


@pytest.mark.parametrize("row", ARGS, ids=[row[0] for row in ARGS])
def test_argument_matching(row: tuple[str, FunctionCall, FunctionCall, bool, bool]) -> None:
    _, expected, actual, partial, strict = row
    assert trajectory_score([expected], [actual]) == float(partial)
    assert trajectory_score([expected], [actual], strict_args=True) == float(strict)


def test_args_match() -> None:
    assert args_match({"a": 1}, {"a": 1, "b": 2}, strict=False) is True
    assert args_match({"a": 1}, {"a": 1, "b": 2}, strict=True) is False
    assert args_match({"a": None}, {}, strict=False) is False
    assert args_match({}, {"b": 2}, strict=False) is True


# ------------------------------------------------------------------------------------------ trajectory metric
def eval_metric(name: str, threshold: float = 1.0, **options: Any) -> EvalMetric:
    config = EvalConfig.model_validate({"criteria": {name: {"threshold": threshold, **options}}})
    return config.eval_metrics()[0]


def invocation(calls: list[FunctionCall] | None = None, text: str | None = None) -> Invocation:
    return Invocation(
        user_content=Content(role="user", parts=[Part(text="hi")]),
        final_response=Content(role="model", parts=[Part(text=text)]) if text is not None else None,
        intermediate_data=IntermediateData(tool_uses=calls or []),
    )


def test_trajectory_metric_defaults_and_mean() -> None:
    metric = eval_metric("tool_trajectory_score", 0.7)
    actual = [invocation([A, X, B, C]), invocation([B, A])]
    expected = [invocation([A, B, C]), invocation([A, B])]
    result = tool_trajectory_score(metric, actual, expected, None)
    per = result.per_invocation_results
    assert [r.score for r in per] == [0.75, 0.5]
    assert result.overall_score == 0.625
    assert [r.eval_status for r in per] == [EvalStatus.PASSED, EvalStatus.FAILED]
    assert result.overall_eval_status == EvalStatus.FAILED
    assert per[0].explanation is None
    assert per[1].explanation == "1 of 2 call(s) matched; unmatched expected: b(); unmatched actual: b() at step 1"
    assert result.details == {
        "strict_order": True,
        "strict_args": False,
        "invocations": [
            {"matched": ["a()", "b()", "c()"], "missing": [], "unexpected": ["x() at step 2"]},
            {"matched": ["a()"], "missing": ["b()"], "unexpected": ["b() at step 1"]},
        ],
    }


@pytest.mark.parametrize(
    ("options", "score"),
    [
        ({}, 0.5),
        ({"strict_order": False}, 1.0),
        ({"strictOrder": False}, 1.0),
        ({"strict_order": False, "strict_args": True}, 0.5),
        ({"strictArgs": True, "strictOrder": False}, 0.5),
    ],
)
def test_trajectory_metric_options(options: dict[str, Any], score: float) -> None:
    metric = eval_metric("tool_trajectory_score", **options)
    # Swapped calls, and the second one carries an extra argument.
    result = tool_trajectory_score(metric, [invocation([PARIS_CELSIUS, A])], [invocation([A, PARIS])], None)
    assert result.overall_score == score


@pytest.mark.parametrize("option", ["strict_order", "strict_args"])
@pytest.mark.parametrize("value", ["yes", 1, None])
def test_trajectory_metric_rejects_non_boolean_flags(option: str, value: object) -> None:
    metric = eval_metric("tool_trajectory_score", **{option: value})
    with pytest.raises(EvalInputError) as caught:
        tool_trajectory_score(metric, [invocation([A])], [invocation([A])], None)
    assert caught.value.field == f"criteria.tool_trajectory_score.{option}"
    assert f"field 'criteria.tool_trajectory_score.{option}'" in str(caught.value)
    assert f"{option} must be true or false, got {value!r}" in str(caught.value)


def test_trajectory_metric_needs_expected() -> None:
    with pytest.raises(MetricNotApplicable):
        tool_trajectory_score(eval_metric("tool_trajectory_score"), [invocation([A])], None, None)


@pytest.mark.parametrize("name", ["tool_trajectory_score", "response_similarity"])
def test_registered(name: str) -> None:
    spec = REGISTRY.get(name)
    assert spec.requires_expected is True
    assert (spec.interval.min_value, spec.interval.max_value) == (0.0, 1.0)


# ------------------------------------------------------------------------------------------------ similarity
def score(expected: str, actual: str, algorithm: str, **flags: bool) -> float:
    options = SimilarityOptions(SimilarityAlgorithm(algorithm), **flags)
    return similarity(expected, actual, options)


SIMILARITIES: list[tuple[str, str, str, dict[str, bool], float]] = [
    # exact: on the normalized texts
    ("Hello   World", "hello world", "exact", {}, 1.0),
    ("Hello World", "hello world", "exact", {"ignore_case": False}, 0.0),
    ("Hello World", "hello world", "exact", {"normalize": False}, 0.0),
    ("hello  world", "hello world", "exact", {"normalize": False}, 0.0),
    ("Hello, world!", "hello world", "exact", {}, 0.0),
    ("Hello, world!", "hello world", "exact", {"ignore_punctuation": True}, 1.0),
    ("", "", "exact", {}, 1.0),
    # contains: substring either way, on characters; exactly one empty text scores 0
    ("the cat sat on the mat", "cat sat", "contains", {}, 1.0),
    ("cat sat", "The cat sat on the mat", "contains", {}, 1.0),
    ("cat", "concatenate", "contains", {}, 1.0),
    ("cat", "dog", "contains", {}, 0.0),
    ("", "anything", "contains", {}, 0.0),
    ("anything", "", "contains", {}, 0.0),
    ("", "", "contains", {}, 1.0),
    # levenshtein: 1 - distance / max length in characters
    ("kitten", "sitting", "levenshtein", {}, 1 - 3 / 7),
    ("flaw", "lawn", "levenshtein", {}, 1 - 2 / 4),
    ("Hello", "hello", "levenshtein", {}, 1.0),
    ("Hello", "hello", "levenshtein", {"ignore_case": False}, 1 - 1 / 5),
    ("a  b", "a b", "levenshtein", {"normalize": False}, 1 - 1 / 4),
    ("我喜欢猫", "我喜欢狗", "levenshtein", {}, 1 - 1 / 4),  # characters, not UTF-8 bytes
    ("", "", "levenshtein", {}, 1.0),
    ("", "abc", "levenshtein", {}, 0.0),
    # jaccard: token sets
    ("the quick brown fox", "the quick brown dog", "jaccard", {}, 3 / 5),
    ("a a b", "b a", "jaccard", {}, 1.0),
    ("Hello, world!", "hello world", "jaccard", {}, 0.0),  # "hello," != "hello"
    ("Hello, world!", "hello world", "jaccard", {"ignore_punctuation": True}, 1.0),
    ("我喜欢猫", "我喜欢狗", "jaccard", {}, 3 / 5),  # {我, 喜, 欢, 猫} vs {我, 喜, 欢, 狗}
    ("I like 猫", "i like 猫咪", "jaccard", {}, 3 / 4),
    ("", "", "jaccard", {}, 1.0),
    ("   ", "", "jaccard", {}, 1.0),
    ("", "cat", "jaccard", {}, 0.0),
    # rouge1 / rouge2: recall of the expected text's unique n-grams
    ("the cat sat", "the cat", "rouge1", {}, 2 / 3),
    ("the the cat", "the", "rouge1", {}, 1 / 2),
    ("the cat", "cat the dog", "rouge1", {}, 1.0),
    ("the cat sat", "the cat", "rouge2", {}, 1 / 2),
    ("the cat sat", "cat sat the", "rouge2", {}, 1 / 2),
    ("the cat sat on the mat", "the cat was on the mat", "rouge2", {}, 3 / 5),
    ("今天好", "今天不好", "rouge2", {}, 1 / 2),  # {今天, 天好} vs {今天, 天不, 不好}
    ("hello", "hello", "rouge2", {}, 1.0),  # no bigram on either side
    ("hello", "hello world", "rouge2", {}, 0.0),
    ("", "", "rouge1", {}, 1.0),
    ("", "cat", "rouge1", {}, 0.0),
    ("cat", "", "rouge1", {}, 0.0),
    # rouge_l: F1 of the token LCS
    ("the cat sat on the mat", "the cat was on the mat", "rouge_l", {}, 5 / 6),
    ("the cat sat", "the cat", "rouge_l", {}, 2 * (2 / 3) * 1 / (2 / 3 + 1)),  # P = 1, R = 2/3: 0.8
    ("a b c d", "d c b a", "rouge_l", {}, 1 / 4),
    ("我喜欢猫", "我喜欢狗", "rouge_l", {}, 3 / 4),
    ("", "", "rouge_l", {}, 1.0),
    ("", "cat", "rouge_l", {}, 0.0),
    ("cat", "", "rouge_l", {}, 0.0),
    ("cat", "dog", "rouge_l", {}, 0.0),
]


@pytest.mark.parametrize(
    ("expected", "actual", "algorithm", "flags", "value"),
    [pytest.param(*row, id=f"{row[2]}-{row[0]!r}-{row[1]!r}-{row[3]}") for row in SIMILARITIES],
)
def test_similarity(expected: str, actual: str, algorithm: str, flags: dict[str, bool], value: float) -> None:
    assert score(expected, actual, algorithm, **flags) == pytest.approx(value, abs=1e-12)


def test_default_algorithm_is_jaccard() -> None:
    assert similarity("the quick brown fox", "the quick brown dog") == pytest.approx(3 / 5)


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("日本語 text", ["日", "本", "語", "text"]),
        ("abc日本", ["abc", "日", "本"]),
        ("猫が好きです。", ["猫", "が", "好", "き", "で", "す", "。"]),  # kana too; punctuation kept
        ("カタカナ", ["カ", "タ", "カ", "ナ"]),
        ("한국어 단어", ["한", "국", "어", "단", "어"]),
        ("  a \n\t b  ", ["a", "b"]),
        ("café naïve", ["café", "naïve"]),
        ("", []),
    ],
)
def test_similarity_tokens(text: str, tokens: list[str]) -> None:
    assert similarity_tokens(text) == tokens


@pytest.mark.parametrize(
    ("text", "flags", "normalized"),
    [
        ("  Hello,\n  WORLD!  ", {}, "hello, world!"),
        ("  Hello,\n  WORLD!  ", {"ignore_case": False}, "Hello, WORLD!"),
        ("Don't panic: $5 & 10%!", {"ignore_punctuation": True}, "dont panic 5 10"),
        ("Naïve CAFÉ!!", {"ignore_punctuation": True}, "naïve café"),
        ("e\u0301clair_x", {"ignore_punctuation": True}, "e\u0301clairx"),  # combining mark kept, "_" removed
        ("你好，世界！", {"ignore_punctuation": True}, "你好世界"),
    ],
)
def test_normalize_text(text: str, flags: dict[str, bool], normalized: str) -> None:
    assert normalize_text(text, **flags) == normalized


# ------------------------------------------------------------------------------------------ similarity metric
def test_similarity_metric_defaults_and_mean() -> None:
    metric = eval_metric("response_similarity", 0.5)
    actual = [invocation(text="The quick brown dog"), invocation(text="a cat"), invocation()]
    expected = [invocation(text="the quick brown fox"), invocation(text="A CAT"), invocation(text="the cat")]
    result = response_similarity(metric, actual, expected, None)
    per = result.per_invocation_results
    assert [r.score for r in per] == pytest.approx([3 / 5, 1.0, 0.0])
    assert result.overall_score == pytest.approx((3 / 5 + 1.0) / 3)
    assert [r.eval_status for r in per] == [EvalStatus.PASSED, EvalStatus.PASSED, EvalStatus.FAILED]
    assert result.overall_eval_status == EvalStatus.PASSED
    assert [r.explanation for r in per] == [None, None, "jaccard similarity 0.000: expected 'the cat', got ''"]
    assert result.details == {
        "algorithm": "jaccard",
        "normalize": True,
        "ignore_case": True,
        "ignore_punctuation": False,
    }


@pytest.mark.parametrize(
    ("options", "value"),
    [
        ({"algorithm": "levenshtein"}, 1 - 3 / 7),
        ({"algorithm": "LEVENSHTEIN"}, 1 - 3 / 7),
        ({"algorithm": "levenshtein", "ignore_case": False}, 1 - 5 / 7),
        ({"algorithm": "levenshtein", "ignoreCase": False}, 1 - 5 / 7),
        ({"algorithm": "levenshtein", "normalize": False}, 1 - 5 / 7),  # ignore_case acts only when normalizing
        ({"algorithm": "rouge_l"}, 0.0),
    ],
)
def test_similarity_metric_options(options: dict[str, Any], value: float) -> None:
    metric = eval_metric("response_similarity", 0.5, **options)
    # "kITten" vs "sitting": 3 edits ignoring case (k/s, e/i, +g), 5 when case counts (also I/i, T/t).
    result = response_similarity(metric, [invocation(text="sitting")], [invocation(text="kITten")], None)
    assert result.overall_score == pytest.approx(value, abs=1e-12)


@pytest.mark.parametrize("value", ["rougeL", "cosine", "", 3])
def test_unknown_algorithm(value: object) -> None:
    metric = eval_metric("response_similarity", algorithm=value)
    with pytest.raises(EvalInputError) as caught:
        response_similarity(metric, [invocation(text="a")], [invocation(text="a")], None)
    assert caught.value.field == "criteria.response_similarity.algorithm"
    message = str(caught.value)
    assert f"unknown algorithm {value!r}" in message
    assert "choose one of exact, contains, levenshtein, jaccard, rouge1, rouge2, rouge_l" in message


@pytest.mark.parametrize("option", ["normalize", "ignore_case", "ignore_punctuation"])
def test_non_boolean_flags(option: str) -> None:
    metric = eval_metric("response_similarity", **{option: "true"})
    with pytest.raises(EvalInputError) as caught:
        response_similarity(metric, [invocation(text="a")], [invocation(text="a")], None)
    assert caught.value.field == f"criteria.response_similarity.{option}"
    assert f"{option} must be true or false, got 'true'" in str(caught.value)
