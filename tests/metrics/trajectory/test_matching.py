"""The alignment engine of `tool_trajectory_match`: option parsing, pair similarity, optimal alignments."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from agent_eval.errors import EvalInputError
from agent_eval.metrics.trajectory.matching import (
    Call,
    Matcher,
    ordered_alignment,
    parse_options,
    precision_recall_f1,
    unordered_alignment,
)

FIELD = "criteria.tool_trajectory_match"


def matcher(**options: Any) -> Matcher:
    return Matcher(parse_options(options, field=FIELD))


def weather(city: str = "Paris", **extra: Any) -> Call:
    return ("get_weather", {"city": city, **extra})


def temperature(value: float = 21, location: str = "Bedroom", **extra: Any) -> Call:
    return ("set_temperature", {"location": location, "temperature": value, **extra})


# ------------------------------------------------------------------------------------------ alignments
def test_ordered_alignment_is_a_weighted_lcs() -> None:
    assert ordered_alignment([[1.0, 0.0], [0.0, 1.0]]) == [(0, 0, 1.0), (1, 1, 1.0)]
    # Crossing pairs: only one of them can be kept in order.
    assert len(ordered_alignment([[0.0, 1.0], [1.0, 0.0]])) == 1
    assert ordered_alignment([]) == []
    assert ordered_alignment([[], []]) == []


def test_ordered_alignment_beats_first_match() -> None:
    # Taking the first positive pair (0, 0) leaves 0.5; skipping it pairs (0, 1) and (1, 2) for 2.0.
    similarities = [[0.5, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    pairs = ordered_alignment(similarities)
    assert pairs == [(0, 1, 1.0), (1, 2, 1.0)]


def test_ordered_alignment_prefers_the_higher_weight() -> None:
    assert ordered_alignment([[0.3, 0.9]]) == [(0, 1, 0.9)]


def test_unordered_alignment_is_a_maximum_weight_matching() -> None:
    # Greedy row by row: row 0 takes column 0 and row 1 is left with nothing (total 1); optimal is 2.
    assert sorted(unordered_alignment([[1.0, 1.0], [1.0, 0.0]])) == [(0, 1, 1.0), (1, 0, 1.0)]
    assert sorted(unordered_alignment([[0.2, 0.9], [0.8, 0.3]])) == [(0, 1, 0.9), (1, 0, 0.8)]
    assert unordered_alignment([[0.0, 0.0]]) == []
    assert unordered_alignment([]) == []


def brute_force(similarities: list[list[float]], ordered: bool) -> float:
    """The best total similarity over every one-to-one pairing (order-preserving when `ordered`)."""
    width = len(similarities[0]) if similarities else 0
    best = 0.0
    for choice in itertools.product([None, *range(width)], repeat=len(similarities)):
        used = [j for j in choice if j is not None]
        if len(set(used)) < len(used) or (ordered and used != sorted(used)):
            continue
        best = max(best, sum(similarities[i][j] for i, j in enumerate(choice) if j is not None))
    return best


@pytest.mark.parametrize("seed", range(200))
def test_alignments_are_optimal(seed: int) -> None:
    rng = random.Random(seed)
    rows, columns = rng.randint(0, 4), rng.randint(1, 4)
    similarities = [[rng.choice([0.0, 0.0, 0.5, 1.0]) for _ in range(columns)] for _ in range(rows)]
    for ordered, align in ((True, ordered_alignment), (False, unordered_alignment)):
        pairs = align(similarities)
        assert len({i for i, _, _ in pairs}) == len({j for _, j, _ in pairs}) == len(pairs)
        assert sum(s for _, _, s in pairs) == pytest.approx(brute_force(similarities, ordered))


@pytest.mark.parametrize("seed", range(100))
def test_trimming_the_common_prefix_and_suffix_keeps_the_ordered_optimum(seed: int) -> None:
    rng = random.Random(seed)
    calls = [weather("Paris"), weather("Pariss"), weather("Oslo"), temperature(21), temperature(23)]
    expected = [rng.choice(calls) for _ in range(rng.randint(0, 7))]
    actual = [rng.choice(calls) for _ in range(rng.randint(0, 7))]
    fuzzy = matcher(order="in_order", args={"keys": {"city": {"fuzzy": 0.85}}})
    pairs = fuzzy.align(expected, actual).matched
    assert [i for i, _, _ in pairs] == sorted({i for i, _, _ in pairs})
    assert [j for _, j, _ in pairs] == sorted({j for _, j, _ in pairs})
    assert all(s == fuzzy.similarity(expected[i], actual[j]) for i, j, s in pairs)
    best = sum(s for _, _, s in ordered_alignment(fuzzy.similarities(expected, actual)))
    assert sum(s for _, _, s in pairs) == best


@pytest.mark.parametrize(
    ("weight", "expected", "actual", "scores"),
    [
        (0.0, 0, 0, (1.0, 1.0, 1.0)),
        (0.0, 0, 3, (0.0, 0.0, 0.0)),
        (0.0, 2, 0, (0.0, 0.0, 0.0)),
        (1.0, 1, 2, (0.5, 1.0, 2 / 3)),
        (2.0, 4, 2, (1.0, 0.5, 2 / 3)),
        (0.0, 2, 2, (0.0, 0.0, 0.0)),
        (1.8, 2, 2, (0.9, 0.9, 0.9)),
    ],
)
def test_precision_recall_f1(weight: float, expected: int, actual: int, scores: tuple[float, ...]) -> None:
    assert precision_recall_f1(weight, expected, actual) == pytest.approx(scores)


# ----------------------------------------------------------------------------------------- similarity
CLOSE_ENOUGH = "tests.metrics.comparators:close_enough"
IGNORE_ARGS = {"args": {"mode": "ignore"}}
SUBSET = {"args": {"mode": "subset"}}


def rule(key: str, **rule: Any) -> dict[str, Any]:
    """Options with one key rule, e.g. `rule("city", fuzzy=0.85)`."""
    return {"args": {"keys": {key: rule}}}


SIMILARITY = [
    ("default: equal", {}, weather(), weather(), 1.0),
    ("default: 1 == 1.0", {}, temperature(21), temperature(21.0), 1.0),
    ("default: other value", {}, weather(), weather("Oslo"), 0.0),
    ("default: extra key", {}, weather(), weather(units="metric"), 0.0),
    ("default: missing key", {}, weather(units="metric"), weather(), 0.0),
    ("other name", IGNORE_ARGS, weather(), ("get_forecast", {"city": "Paris"}), 0.0),
    ("ignore: names only", IGNORE_ARGS, weather(), ("get_weather", {}), 1.0),
    ("subset: extra key", SUBSET, weather(), weather(units="metric"), 1.0),
    ("subset: missing key", SUBSET, weather(units="metric"), weather(), 0.0),
    (
        "subset: nested",
        SUBSET,
        ("book", {"guest": {"name": "Ann"}}),
        ("book", {"guest": {"name": "Ann", "age": 7}}),
        1.0,
    ),
    ("subset: big ints stay exact", SUBSET, ("f", {"id": 2**60}), ("f", {"id": 2**60 + 1}), 0.0),
    ("ignore_keys", {"args": {"ignore_keys": ["request_id"]}}, weather(request_id=1), weather(request_id=2), 1.0),
    ("ignore_keys: one side", {"args": {"ignoreKeys": ["request_id"]}}, weather(request_id=1), weather(), 1.0),
    ("keys ignore", rule("city", ignore=True), weather(), weather("Oslo"), 1.0),
    ("fuzzy: 0.909 >= 0.85", rule("city", fuzzy=0.85), weather(), weather("Pariss"), 1.0),
    ("fuzzy: 0.857 < 0.86", rule("location", fuzzy=0.86), temperature(), temperature(location="bedroom"), 0.0),
    ("fuzzy: exactly 0.85", rule("q", fuzzy=0.85), ("s", {"q": "a" * 20}), ("s", {"q": "a" * 17 + "bbb"}), 1.0),
    ("fuzzy: not a string", rule("city", fuzzy=0.5), weather(), ("get_weather", {"city": 5}), 0.0),
    ("case_insensitive", rule("city", caseInsensitive=True), weather(), weather("PARIS"), 1.0),
    (
        "case_insensitive: list",
        rule("tags", case_insensitive=True),
        ("t", {"tags": ["A", "b"]}),
        ("t", {"tags": ["a", "B"]}),
        1.0,
    ),
    (
        "case_insensitive: length",
        rule("tags", case_insensitive=True),
        ("t", {"tags": ["A"]}),
        ("t", {"tags": ["a", "b"]}),
        0.0,
    ),
    ("case_insensitive + fuzzy", rule("city", case_insensitive=True, fuzzy=0.9), weather(), weather("PARISS"), 1.0),
    ("tolerance: 0.4 <= 0.5", rule("temperature", tolerance=0.5), temperature(21), temperature(21.4), 1.0),
    ("tolerance: 0.6 > 0.5", rule("temperature", tolerance=0.5), temperature(21), temperature(21.6), 0.0),
    ("rel_tolerance: 0.9%", rule("temperature", relTolerance=0.01), temperature(100), temperature(100.9), 1.0),
    ("rel_tolerance: 2%", rule("temperature", rel_tolerance=0.01), temperature(100), temperature(102), 0.0),
    ("comparator: partial", rule("temperature", comparator=CLOSE_ENOUGH), temperature(21), temperature(23), 0.8),
    (
        "comparator: dotted path",
        rule("temperature", comparator=CLOSE_ENOUGH.replace(":", ".")),
        temperature(21),
        temperature(21),
        1.0,
    ),
    (
        "comparator: other key differs",
        rule("temperature", comparator=CLOSE_ENOUGH),
        temperature(21),
        temperature(23, "Kitchen"),
        0.0,
    ),
]


@pytest.mark.parametrize(
    ("options", "expected", "actual", "similarity"),
    [pytest.param(*row[1:], id=row[0]) for row in SIMILARITY],
)
def test_similarity(options: dict[str, Any], expected: Call, actual: Call, similarity: float) -> None:
    assert matcher(**options).similarity(expected, actual) == pytest.approx(similarity)


def test_a_pair_scores_its_weakest_key() -> None:
    rules = {
        "temperature": {"comparator": "tests.metrics.comparators:close_enough"},
        "x": {"comparator": "tests.metrics.comparators:close_enough"},
    }
    pair = matcher(args={"keys": rules})
    assert pair.similarity(("f", {"temperature": 21, "x": 0}), ("f", {"temperature": 22, "x": 3})) == pytest.approx(0.7)


def test_a_comparator_out_of_range_is_an_error() -> None:
    broken = matcher(args={"keys": {"city": {"comparator": "tests.metrics.comparators:out_of_range"}}})
    with pytest.raises(ValueError, match=r"returned 2.0; it must return a bool or a float in \[0, 1\]"):
        broken.similarity(weather(), weather())


def test_tool_rules_are_laid_over_the_defaults() -> None:
    options = {
        "args": {"ignore_keys": ["request_id"], "keys": {"city": {"case_insensitive": True}}},
        "tools": {
            "set_temperature": {"args": {"mode": "subset", "keys": {"temperature": {"tolerance": 0.5}}}},
            "get_weather": {"args": {"keys": {"request_id": {}}}},
        },
    }
    rules = matcher(**options)
    # set_temperature: its own mode and tolerance, the default ignore_keys still apply.
    assert rules.similarity(temperature(21, request_id=1), temperature(21.3, request_id=2, mode="eco")) == 1.0
    assert rules.similarity(temperature(21), temperature(21.6)) == 0.0
    # get_weather: the default case rule still applies, but request_id is compared again.
    assert rules.similarity(weather(request_id=1), weather("PARIS", request_id=1)) == 1.0
    assert rules.similarity(weather(request_id=1), weather(request_id=2)) == 0.0
    # Any other tool: the defaults only (exact mode, no tolerance).
    assert rules.similarity(("other", {"t": 21, "request_id": 1}), ("other", {"t": 21.3})) == 0.0


# -------------------------------------------------------------------------------------------- options
def test_defaults_and_camel_case() -> None:
    options = parse_options({}, field=FIELD)
    assert (options.order, options.score, options.args.mode) == ("exact", "f1", "exact")
    camel = parse_options({"args": {"ignoreKeys": ["a"], "keys": {"b": {"relTolerance": 0.1}}}}, field=FIELD)
    assert camel.args.ignore_keys == ["a"]
    assert camel.args.keys["b"].rel_tolerance == 0.1


BAD_OPTIONS = [
    (
        {"order": "sorted"},
        "field 'criteria.tool_trajectory_match.order': Input should be 'exact', 'in_order', 'any_order', "
        "'subset' or 'superset' (got 'sorted')",
    ),
    (
        {"score": "accuracy"},
        "field 'criteria.tool_trajectory_match.score': Input should be 'f1', 'precision', 'recall' or 'binary' "
        "(got 'accuracy')",
    ),
    (
        {"match_type": "EXACT"},
        "field 'criteria.tool_trajectory_match.match_type': unknown option 'match_type'; valid options: "
        "include_intermediate_responses_in_final, order, score, args, tools",
    ),
    (
        {"args": {"keys": {"city": {"fuzzzy": 0.8}}}},
        "field 'criteria.tool_trajectory_match.args.keys.city.fuzzzy': unknown option 'fuzzzy'; valid options: "
        "ignore, fuzzy, tolerance, rel_tolerance, case_insensitive, comparator",
    ),
    (
        {"tools": {"get_weather": {"args": {"mode": "fuzzy"}}}},
        "field 'criteria.tool_trajectory_match.tools.get_weather.args.mode': Input should be 'exact', 'ignore' or "
        "'subset' (got 'fuzzy')",
    ),
    (
        {"args": {"keys": {"city": {"fuzzy": 0}}}},
        "field 'criteria.tool_trajectory_match.args.keys.city.fuzzy': Input should be greater than 0 (got 0)",
    ),
    (
        {"args": {"keys": {"t": {"tolerance": -1}}}},
        "field 'criteria.tool_trajectory_match.args.keys.t.tolerance': Input should be greater than or equal to 0 "
        "(got -1)",
    ),
    (
        {"args": {"keys": {"city": {"ignore": True, "fuzzy": 0.8}}}},
        "field 'criteria.tool_trajectory_match.args.keys.city': 'ignore' cannot be combined with other rules",
    ),
    (
        {"args": {"keys": {"t": {"comparator": "tests.metrics.comparators:close_enough", "tolerance": 1}}}},
        "field 'criteria.tool_trajectory_match.args.keys.t': 'comparator' cannot be combined with other rules",
    ),
    (
        {"args": {"keys": {"t": {"comparator": "no_such_package.mod:f"}}}},
        "field 'criteria.tool_trajectory_match.args.keys.t.comparator': cannot import module 'no_such_package.mod': "
        "No module named 'no_such_package'",
    ),
    (
        {"tools": {"x": {"args": {"keys": {"t": {"comparator": "tests.metrics.comparators:missing"}}}}}},
        "field 'criteria.tool_trajectory_match.tools.x.args.keys.t.comparator': module 'tests.metrics.comparators' "
        "has no function 'missing'",
    ),
    (
        {"args": "exact"},
        "field 'criteria.tool_trajectory_match.args': Input should be a valid dictionary or instance of ArgsRules "
        "(got 'exact')",
    ),
]


@pytest.mark.parametrize(("options", "message"), BAD_OPTIONS)
def test_bad_options_name_the_field_and_the_choices(options: dict[str, Any], message: str) -> None:
    with pytest.raises(EvalInputError) as raised:
        parse_options(options, field=FIELD)
    assert str(raised.value) == message
