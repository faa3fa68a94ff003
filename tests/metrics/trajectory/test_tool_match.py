"""`tool_trajectory_match` on Invocation objects, against hand-computed scores, alignments and explanations."""

from __future__ import annotations

import random
from typing import Any

import pytest
from google.genai.types import Content, FunctionCall, Part

from agent_eval.errors import EvalInputError
from agent_eval.metrics.common import MetricNotApplicable
from agent_eval.metrics.registry import REGISTRY
from agent_eval.metrics.trajectory.adk import MatchType, trajectory_matches
from agent_eval.metrics.trajectory.tool_match import as_calls, matcher_for, tool_trajectory_match
from agent_eval.schema import EvalConfig, EvalMetric, EvalStatus, EvaluationResult, IntermediateData, Invocation

ORDERS = ["exact", "in_order", "any_order", "superset", "subset"]
CLOSE_ENOUGH = "tests.metrics.comparators:close_enough"


def criterion(threshold: float = 1.0, **options: Any) -> EvalMetric:
    config = EvalConfig.model_validate({"criteria": {"tool_trajectory_match": {"threshold": threshold, **options}}})
    return config.eval_metrics()[0]


def invocation(calls: list[FunctionCall]) -> Invocation:
    return Invocation(
        user_content=Content(role="user", parts=[Part(text="hi")]),
        intermediate_data=IntermediateData(tool_uses=calls),
    )


def evaluate(eval_metric: EvalMetric, actual: list[Invocation], expected: list[Invocation] | None) -> EvaluationResult:
    """The metric, called as the scorer calls it (it is sync: no awaitable comes back)."""
    result = tool_trajectory_match(eval_metric, actual, expected, None)
    assert isinstance(result, EvaluationResult)
    return result


def run(expected: list[FunctionCall], actual: list[FunctionCall], **options: Any) -> EvaluationResult:
    return evaluate(criterion(**options), [invocation(actual)], [invocation(expected)])


def score(expected: list[FunctionCall], actual: list[FunctionCall], **options: Any) -> float | None:
    return run(expected, actual, **options).overall_score


def weather(city: str = "Paris", **extra: Any) -> FunctionCall:
    return FunctionCall(name="get_weather", args={"city": city, **extra})


def temperature(value: float = 21, location: str = "Bedroom", **extra: Any) -> FunctionCall:
    return FunctionCall(name="set_temperature", args={"location": location, "temperature": value, **extra})


def device(number: int) -> FunctionCall:
    return FunctionCall(name="get_device_info", args={"device_id": f"device_{number}"})


EXTRA = device(5)

# (rule, options, A, B, A accepted by the rule, B accepted, A rejected): the expected calls are [A, B].
RULES: list[tuple[str, dict[str, Any], FunctionCall, FunctionCall, FunctionCall, FunctionCall, FunctionCall]] = [
    ("args exact (1 == 1.0)", {}, weather(), temperature(21), weather(), temperature(21.0), weather("paris")),
    (
        "args ignore",
        {"args": {"mode": "ignore"}},
        weather(),
        temperature(),
        weather("Oslo"),
        FunctionCall(name="set_temperature"),
        FunctionCall(name="get_forecast", args={"city": "Paris"}),
    ),
    (
        "args subset",
        {"args": {"mode": "subset"}},
        weather(),
        temperature(),
        weather(units="metric"),
        temperature(mode="eco"),
        FunctionCall(name="get_weather", args={"units": "metric"}),
    ),
    (
        "ignore_keys",
        {"args": {"ignore_keys": ["request_id"]}},
        weather(request_id=1),
        temperature(),
        weather(request_id=2),
        temperature(request_id=3),
        weather("Oslo", request_id=1),
    ),
    (
        "keys ignore",
        {"args": {"keys": {"city": {"ignore": True}}}},
        weather(),
        temperature(),
        weather("Oslo"),
        temperature(),
        weather(country="FR"),
    ),
    (
        "fuzzy",
        {"args": {"keys": {"city": {"fuzzy": 0.85}, "location": {"fuzzy": 0.85}}}},
        weather(),
        temperature(),
        weather("Pariss"),
        temperature(location="Bedrom"),
        weather("Oslo"),
    ),
    (
        "case_insensitive",
        {"args": {"keys": {"city": {"case_insensitive": True}, "location": {"caseInsensitive": True}}}},
        weather(),
        temperature(),
        weather("PARIS"),
        temperature(location="bedroom"),
        weather("Pariss"),
    ),
    (
        "tolerance",
        {"args": {"keys": {"temperature": {"tolerance": 0.5}}}},
        temperature(21),
        weather(),
        temperature(21.4),
        weather(),
        temperature(21.6),
    ),
    (
        "rel_tolerance",
        {"args": {"keys": {"temperature": {"rel_tolerance": 0.01}}}},
        temperature(100),
        weather(),
        temperature(100.9),
        weather(),
        temperature(102),
    ),
    (
        "comparator",
        {"args": {"keys": {"temperature": {"comparator": CLOSE_ENOUGH}}}},
        temperature(21),
        weather(),
        temperature(21),
        weather(),
        temperature(31),
    ),
    (
        "per-tool override",
        {"tools": {"set_temperature": {"args": {"keys": {"temperature": {"tolerance": 0.5}}}}}},
        temperature(21),
        weather(),
        temperature(21.3),
        weather(),
        temperature(22),
    ),
]

# Hand-computed for expected [A, B]: (F1, binary) per order mode.
# [A', B']: every call matched in order.
IN_ORDER = dict.fromkeys(ORDERS, (1.0, 1.0))
# [B', A', extra]: ordered modes keep one crossing pair (W=1: P=1/3, R=1/2, F1=0.4); unordered ones both
# (W=2: P=2/3, R=1, F1=0.8); only any_order / superset hold (subset fails on the extra call).
CROSSED = {
    "exact": (0.4, 0.0),
    "in_order": (0.4, 0.0),
    "any_order": (0.8, 1.0),
    "superset": (0.8, 1.0),
    "subset": (0.8, 0.0),
}
# [B', A rejected, extra]: only B matches in every mode (W=1: F1=0.4), no mode holds.
REJECTED = dict.fromkeys(ORDERS, (0.4, 0.0))

TABLE = [
    pytest.param(options, expected, actual, order, scores[order], id=f"{name}-{scenario}-{order}")
    for name, options, a, b, a_ok, b_ok, a_bad in RULES
    for scenario, expected, actual, scores in (
        ("in order", [a, b], [a_ok, b_ok], IN_ORDER),
        ("crossed", [a, b], [b_ok, a_ok, EXTRA], CROSSED),
        ("rejected", [a, b], [b_ok, a_bad, EXTRA], REJECTED),
    )
    for order in ORDERS
]


@pytest.mark.parametrize(("options", "expected", "actual", "order", "scores"), TABLE)
def test_order_modes_by_argument_rules(
    options: dict[str, Any],
    expected: list[FunctionCall],
    actual: list[FunctionCall],
    order: str,
    scores: tuple[float, float],
) -> None:
    f1, binary = scores
    assert score(expected, actual, order=order, **options) == pytest.approx(f1)
    assert score(expected, actual, order=order, score="binary", **options) == binary


def test_precision_and_recall_are_selectable() -> None:
    expected, actual = [weather(), temperature()], [temperature(), weather(), EXTRA]
    assert score(expected, actual, order="any_order", score="precision") == pytest.approx(2 / 3)
    assert score(expected, actual, order="any_order", score="recall") == 1.0
    assert score(expected, actual, order="in_order", score="precision") == pytest.approx(1 / 3)
    assert score(expected, actual, order="in_order", score="recall") == 0.5


@pytest.mark.parametrize(
    ("order", "binary"), [("exact", 0.0), ("in_order", 1.0), ("any_order", 1.0), ("superset", 1.0), ("subset", 0.0)]
)
def test_a_retried_call(order: str, binary: float) -> None:
    # The agent called get_weather twice because the first call failed: recall 1, precision 1/2, F1 2/3.
    result = run([weather()], [weather(), weather()], order=order)
    details = result.details["invocations"][0]
    assert (details["precision"], details["recall"]) == (0.5, 1.0)
    assert result.overall_score == pytest.approx(2 / 3)
    assert result.per_invocation_results[0].explanation == "matched 1/1; extra get_weather(city='Paris')"
    assert score([weather()], [weather(), weather()], order=order, score="binary") == binary


def test_duplicated_expected_calls_need_as_many_actual_calls() -> None:
    result = run([weather(), weather()], [weather()], order="any_order")
    assert result.overall_score == pytest.approx(2 / 3)  # P = 1, R = 1/2
    assert result.per_invocation_results[0].explanation == "matched 1/2; missing get_weather(city='Paris')"
    assert score([weather(), weather()], [weather()], order="any_order", score="binary") == 0.0
    assert score([weather(), weather()], [weather()], order="subset", score="binary") == 1.0
    assert score([weather(), weather()], [weather(), weather()], order="exact", score="binary") == 1.0


def test_parallel_calls_need_an_unordered_mode() -> None:
    expected, actual = [weather("Paris"), weather("Oslo")], [weather("Oslo"), weather("Paris")]
    assert score(expected, actual, order="any_order") == 1.0
    result = run(expected, actual, order="in_order")
    assert result.overall_score == 0.5  # one of the two pairs keeps the order: P = R = 1/2
    assert result.per_invocation_results[0].explanation == "matched 1/2; out of order get_weather(city='Oslo')"


@pytest.mark.parametrize(
    ("expected", "actual", "f1", "binary"),
    [
        ([], [], 1.0, dict.fromkeys(ORDERS, 1.0)),
        ([], [weather()], 0.0, {**dict.fromkeys(ORDERS, 1.0), "exact": 0.0, "subset": 0.0}),
        ([weather()], [], 0.0, {**dict.fromkeys(ORDERS, 0.0), "subset": 1.0}),
    ],
    ids=["both empty", "expected empty", "actual empty"],
)
def test_empty_trajectories(
    expected: list[FunctionCall], actual: list[FunctionCall], f1: float, binary: dict[str, float]
) -> None:
    for order in ORDERS:
        assert score(expected, actual, order=order) == f1
        assert score(expected, actual, order=order, score="binary") == binary[order], order


def test_the_optimal_alignment_beats_greedy() -> None:
    # fuzzy 0.85: "Lyons" fits both expected cities (0.89 and 1.0), "Lyo" fits only "Lyon" (0.86; 0.75 for
    # "Lyons"). Greedy gives "Lyons" to "Lyon" and leaves "Lyons" unmatched; the optimum pairs both.
    options: dict[str, Any] = {"order": "any_order", "args": {"keys": {"city": {"fuzzy": 0.85}}}}
    expected, actual = [weather("Lyon"), weather("Lyons")], [weather("Lyons"), weather("Lyo")]
    matcher = matcher_for(criterion(**options))
    free, greedy = list(as_calls(actual)), 0.0
    for wanted in as_calls(expected):
        taken = next((call for call in free if matcher.similarity(wanted, call) > 0), None)
        if taken is not None:
            free.remove(taken)
            greedy += matcher.similarity(wanted, taken)
    assert greedy == 1.0  # greedy F1 would be 0.5
    result = run(expected, actual, **options)
    assert result.overall_score == 1.0
    assert sorted(result.details["invocations"][0]["matched"]) == [[0, 1, 1.0], [1, 0, 1.0]]


def test_a_custom_comparator_gives_partial_credit() -> None:
    options = {"args": {"keys": {"temperature": {"comparator": CLOSE_ENOUGH}}}}
    result = run([temperature(21)], [temperature(23)], **options)
    assert result.overall_score == pytest.approx(0.8)
    assert result.per_invocation_results[0].explanation == (
        "matched 1/1; partial set_temperature(location='Bedroom', temperature=23) for "
        "set_temperature(location='Bedroom', temperature=21) (0.80)"
    )
    assert score([temperature(21)], [temperature(23)], score="binary", **options) == 0.0


def test_alignment_in_details_and_explanation() -> None:
    expected = [weather(), temperature(21), device(1)]
    actual = [weather(), device(5), device(1)]
    result = run(expected, actual, threshold=0.5, order="in_order")
    two_thirds = pytest.approx(2 / 3)
    assert result.details == {
        "order": "in_order",
        "score": "f1",
        "invocations": [
            {
                "matched": [[0, 0, 1.0], [2, 2, 1.0]],
                "missing": [1],
                "extra": [1],
                "precision": two_thirds,
                "recall": two_thirds,
                "f1": two_thirds,
                "satisfied": False,
                "score": two_thirds,
            }
        ],
    }
    explanation = "matched 2/3; missing set_temperature(location='Bedroom', temperature=21); extra get_device_info(device_id='device_5')"  # noqa: E501
    assert result.per_invocation_results[0].explanation == explanation
    assert result.explanation == explanation
    assert result.overall_eval_status is EvalStatus.PASSED


def test_overall_is_the_mean_over_invocations() -> None:
    expected = [invocation([weather()]), invocation([weather(), temperature(), device(1)])]
    actual = [invocation([weather()]), invocation([weather(), temperature()])]
    result = evaluate(criterion(0.95, order="in_order"), actual, expected)
    assert result.overall_score == pytest.approx((1.0 + 0.8) / 2)  # turn 2: P = 1, R = 2/3, F1 = 0.8
    assert [r.eval_status for r in result.per_invocation_results] == [EvalStatus.PASSED, EvalStatus.FAILED]
    assert result.overall_eval_status is EvalStatus.FAILED
    assert result.explanation == "turn 2: matched 2/3; missing get_device_info(device_id='device_1')"
    assert result.per_invocation_results[0].explanation is None


def test_needs_expected_invocations() -> None:
    with pytest.raises(MetricNotApplicable):
        evaluate(criterion(), [invocation([])], None)
    with pytest.raises(ValueError, match="2 actual invocation"):
        evaluate(criterion(), [invocation([]), invocation([])], [invocation([])])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"order": "IN_ORDER"},
            "field 'criteria.tool_trajectory_match.order': Input should be 'exact', 'in_order', 'any_order', "
            "'subset' or 'superset' (got 'IN_ORDER')",
        ),
        (
            {"args": {"keys": {"temperature": {"comparator": "tests.metrics.comparators:nope"}}}},
            "field 'criteria.tool_trajectory_match.args.keys.temperature.comparator': module "
            "'tests.metrics.comparators' has no function 'nope'",
        ),
        (
            {"tools": {"get_weather": {"arg": {}}}},
            "field 'criteria.tool_trajectory_match.tools.get_weather.arg': unknown option 'arg'; valid options: args",
        ),
    ],
)
def test_bad_options_are_input_errors(options: dict[str, Any], message: str) -> None:
    with pytest.raises(EvalInputError) as raised:
        run([weather()], [weather()], **options)
    assert str(raised.value) == message


def test_is_registered_and_its_options_are_checked_up_front() -> None:
    spec = REGISTRY.get("tool_trajectory_match")
    assert spec.function is tool_trajectory_match
    assert spec.requires_expected
    good = {"threshold": 0.5, "order": "subset", "include_intermediate_responses_in_final": False}
    assert REGISTRY.resolve(EvalConfig.model_validate({"criteria": {"tool_trajectory_match": good}}))
    bad = EvalConfig.model_validate({"criteria": {"tool_trajectory_match": {"threshold": 0.5, "score": "auc"}}})
    with pytest.raises(EvalInputError) as raised:
        REGISTRY.resolve(bad, config_file="test_config.json")
    assert str(raised.value) == (
        "test_config.json: field 'criteria.tool_trajectory_match.score': Input should be 'f1', 'precision', "
        "'recall' or 'binary' (got 'auc')"
    )


@pytest.mark.parametrize("seed", range(50))
def test_binary_without_rules_gives_adks_verdict(seed: int) -> None:
    rng = random.Random(seed)
    pool = [weather(), weather("Oslo"), temperature(), device(1)]
    expected = [rng.choice(pool) for _ in range(rng.randint(0, 4))]
    actual = [rng.choice(pool) for _ in range(rng.randint(0, 4))]
    for order in ("exact", "in_order", "any_order"):
        for ignore in (False, True):
            options = {"order": order, "score": "binary", "args": {"mode": "ignore" if ignore else "exact"}}
            verdict = trajectory_matches(actual, expected, MatchType[order.upper()], ignore_args=ignore)
            assert score(expected, actual, **options) == float(verdict), (order, ignore)
