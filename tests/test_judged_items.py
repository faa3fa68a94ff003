"""agent_eval.results.judged_items: which items of a case run a judge scored, their content keys (equal for equal
content whatever run or case judged it, different when anything the judge saw differs), the judge's verdict at
the threshold and the per-sample scores."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import pytest

from agent_eval.results.judged_items import JudgedItem, item_key, judged_items
from agent_eval.results.model import CaseResult, MetricResult
from agent_eval.schema import AgentRun, EvalStatus, Invocation, Rubric, RubricContent
from tests.judges.stored_runs import (
    RESPONSE,
    RUBRIC,
    RUBRIC_TEXTS,
    SET,
    judged,
    not_judged,
    rubric_judged,
    turn,
)

LAMP = ("set_device_info", {"device_id": "lamp", "updates": {"status": "ON"}})
OFFICE = ("get_temperature", {"location": "Office"})
EXPECTED = [
    turn("turn on the lamp", "The lamp is on.", [LAMP], turn_id="t1"),
    turn("how warm is the office?", "It is 22 degrees in the Office.", [OFFICE], turn_id="t2"),
]
ACTUAL = [
    turn("turn on the lamp", "The lamp is on.", [LAMP], turn_id="t1"),
    turn("how warm is the office?", "22.", [OFFICE], turn_id="t2"),
]


def case(
    metrics: Sequence[MetricResult] = (),
    *,
    actual: Sequence[Invocation] = ACTUAL,
    expected: Sequence[Invocation] | None = EXPECTED,
    eval_id: str = "two_turns",
    eval_set_id: str = SET,
    run_index: int = 0,
) -> CaseResult:
    return CaseResult(
        eval_set_id=eval_set_id,
        eval_id=eval_id,
        run_index=run_index,
        status=EvalStatus.PASSED,
        agent_run=AgentRun(eval_set_id=eval_set_id, eval_id=eval_id, run_index=run_index, invocations=list(actual)),
        expected_invocations=None if expected is None else list(expected),
        metrics=list(metrics),
    )


def two_metrics(eval_id: str = "two_turns", eval_set_id: str = SET, run_index: int = 0) -> list[MetricResult]:
    """final_response_match_v2 on 2 turns, a deterministic metric, a rubric metric with 2 rubrics on 2 turns."""
    where: dict[str, Any] = {"eval_set_id": eval_set_id, "run_index": run_index}
    return [
        judged(eval_id, [1.0, 0.0], samples=[[1.0, 1.0, 0.0], [0.0, None, 0.0]], **where),
        not_judged(eval_id, [1.0, 1.0], **where),
        rubric_judged(
            eval_id,
            [{"names_room": 1.0, "polite": 0.0}, {"names_room": 0.0, "polite": 1.0}],
            samples=[{"names_room": [1.0, 1.0, 1.0], "polite": [0.0, 1.0, 0.0]}, {}],
            **where,
        ),
    ]


Where = tuple[str, int, str | None]
"""An item's metric, turn and rubric id."""


def keys(case_result: CaseResult, texts: dict[str, str] | None = None) -> dict[Where, str]:
    return {(i.metric_name, i.turn, i.rubric_id): i.key for i in judged_items(case_result, texts)}


# ------------------------------------------------------------------------------------ items, order, verdicts


def test_every_judged_turn_and_rubric_is_an_item_in_metric_turn_rubric_order() -> None:
    items = judged_items(case(two_metrics()), RUBRIC_TEXTS)

    assert [(i.metric_name, i.turn, i.rubric_id) for i in items] == [
        (RESPONSE, 0, None),
        (RESPONSE, 1, None),
        (RUBRIC, 0, "names_room"),
        (RUBRIC, 0, "polite"),
        (RUBRIC, 1, "names_room"),
        (RUBRIC, 1, "polite"),
    ]
    assert [(i.judge_score, i.judge_passed) for i in items] == [
        (1.0, True),
        (0.0, False),
        (1.0, True),
        (0.0, False),
        (0.0, False),
        (1.0, True),
    ]
    assert [i.samples for i in items] == [[1.0, 1.0, 0.0], [0.0, None, 0.0], [1.0, 1.0, 1.0], [0.0, 1.0, 0.0], [], []]
    assert {(i.eval_set_id, i.eval_id, i.run_index) for i in items} == {(SET, "two_turns", 0)}
    assert len({i.key for i in items}) == 6
    assert all(len(i.key) == 64 and set(i.key) <= set("0123456789abcdef") for i in items)


def test_a_metric_with_no_judge_model_gives_no_item() -> None:
    assert judged_items(case([not_judged("two_turns", [1.0, 0.0])])) == []
    # the same scores with a judge model are items
    assert len(judged_items(case([judged("two_turns", [1.0, 0.0])]))) == 2


def test_a_judged_metric_with_no_turn_scored_gives_no_item() -> None:
    unscored = judged("two_turns", []).model_copy(update={"status": EvalStatus.NOT_EVALUATED})
    assert judged_items(case([unscored])) == []


@pytest.mark.parametrize(
    ("threshold", "score", "passed"),
    [
        (0.75, 0.75, True),  # at the threshold: passes
        (0.75, 0.7499, False),
        (0.75, 1.0, True),
        (None, 0.5, True),  # no threshold: 0.5
        (None, 0.4999, False),
        (1.0, 0.99, False),
        (0.0, 0.0, True),
        (0.75, None, None),  # no score: no verdict
    ],
)
def test_the_judges_verdict_is_its_score_at_the_threshold(
    threshold: float | None, score: float | None, passed: bool | None
) -> None:
    [item] = judged_items(case([judged("two_turns", [score], threshold=threshold)], actual=ACTUAL[:1]))

    assert (item.judge_score, item.judge_passed) == (score, passed)


@pytest.mark.parametrize(("score", "passed"), [(0.5, True), (0.49, False), (None, None)])
def test_a_rubric_verdict_passes_at_half_whatever_the_metric_threshold(
    score: float | None, passed: bool | None
) -> None:
    metric = rubric_judged("two_turns", [{"names_room": score}], threshold=0.9)

    [item] = judged_items(case([metric], actual=ACTUAL[:1]))

    assert (item.rubric_id, item.judge_score, item.judge_passed) == ("names_room", score, passed)


def test_samples_are_the_per_sample_scores_none_for_an_unusable_one() -> None:
    details = {
        "judge_model": "m",
        "invocations": [
            {
                "samples": [
                    {"score": 1.0, "label": "yes"},
                    {"error": "no verdict in the answer"},
                    {"score": 0},
                    {"score": True},  # not a number
                    {"score": "0.5"},  # not a number
                    "garbage",
                ]
            },
            {"score": 0.0},  # no samples
        ],
    }
    metric = judged("two_turns", [1.0, 0.0]).model_copy(update={"details": details})

    first, second = judged_items(case([metric]))

    assert first.samples == [1.0, None, 0.0, None, None, None]
    assert second.samples == []


def test_a_turn_with_more_scores_than_details_has_no_samples() -> None:
    metric = judged("two_turns", [1.0, 0.0]).model_copy(update={"details": {"judge_model": "m"}})

    assert [i.samples for i in judged_items(case([metric]))] == [[], []]


# ------------------------------------------------------------------------------------------------- keys


def test_the_key_is_the_sha256_of_the_canonical_json_of_what_the_judge_saw() -> None:
    one = case([judged("c", [1.0])], actual=ACTUAL[1:], expected=EXPECTED[1:], eval_id="c")
    seen = {
        "metric": RESPONSE,
        "rubric_id": None,
        "rubric": None,
        "history": [],
        "user": "how warm is the office?",
        "response": "22.",
        "tool_calls": [{"name": "get_temperature", "args": {"location": "Office"}}],
        "reference": "It is 22 degrees in the Office.",
        "expected_tool_calls": [{"name": "get_temperature", "args": {"location": "Office"}}],
    }
    text = json.dumps(seen, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    [item] = judged_items(one)

    assert item.key == hashlib.sha256(text.encode()).hexdigest()


def test_the_second_turns_key_holds_the_first_turn_as_history() -> None:
    [_, second] = judged_items(case([judged("two_turns", [1.0, 0.0])]))
    content = {
        "history": [["turn on the lamp", "The lamp is on."]],
        "user": "how warm is the office?",
        "response": "22.",
        "tool_calls": [{"name": "get_temperature", "args": {"location": "Office"}}],
        "reference": "It is 22 degrees in the Office.",
        "expected_tool_calls": [{"name": "get_temperature", "args": {"location": "Office"}}],
    }

    assert second.key == item_key(RESPONSE, None, None, content)


def test_equal_content_has_equal_keys_in_other_runs_cases_and_eval_sets() -> None:
    here = judged_items(case(two_metrics()), RUBRIC_TEXTS)
    elsewhere = judged_items(
        case(two_metrics("copy", "other_set", 2), eval_id="copy", eval_set_id="other_set", run_index=2), RUBRIC_TEXTS
    )

    assert [i.key for i in here] == [i.key for i in elsewhere]
    assert {(i.eval_set_id, i.eval_id, i.run_index) for i in elsewhere} == {("other_set", "copy", 2)}


def test_scores_and_samples_are_not_part_of_the_key() -> None:
    other_scores = [
        judged("two_turns", [0.0, 1.0], samples=[[0.0], [1.0]]),
        rubric_judged("two_turns", [{"names_room": 0.0, "polite": 1.0}, {"names_room": 1.0, "polite": 0.0}]),
    ]

    assert keys(case(other_scores), RUBRIC_TEXTS) == keys(case(two_metrics()), RUBRIC_TEXTS)


def _changed(actual: Sequence[Invocation] = ACTUAL, expected: Sequence[Invocation] = EXPECTED) -> dict[Where, str]:
    return keys(case(two_metrics(), actual=actual, expected=expected), RUBRIC_TEXTS)


def _differing(before: dict[Where, str], after: dict[Where, str]) -> set[Where]:
    assert before.keys() == after.keys()
    return {where for where in before if before[where] != after[where]}


SECOND_TURN = {(RESPONSE, 1, None), (RUBRIC, 1, "names_room"), (RUBRIC, 1, "polite")}
EVERY_TURN = SECOND_TURN | {(RESPONSE, 0, None), (RUBRIC, 0, "names_room"), (RUBRIC, 0, "polite")}


def test_another_answer_changes_that_turns_keys_only() -> None:
    other = [ACTUAL[0], turn("how warm is the office?", "23.", [OFFICE], turn_id="t2")]

    assert _differing(_changed(), _changed(actual=other)) == SECOND_TURN


def test_another_tool_call_argument_changes_that_turns_keys() -> None:
    other = [ACTUAL[0], turn("how warm is the office?", "22.", [("get_temperature", {"location": "Kitchen"})])]
    another_call = [ACTUAL[0], turn("how warm is the office?", "22.", [OFFICE, OFFICE])]

    assert _differing(_changed(), _changed(actual=other)) == SECOND_TURN
    assert _differing(_changed(), _changed(actual=another_call)) == SECOND_TURN


def test_another_reference_changes_that_turns_keys() -> None:
    answer = [EXPECTED[0], turn("how warm is the office?", "It is 23 degrees.", [OFFICE], turn_id="t2")]
    calls = [EXPECTED[0], turn("how warm is the office?", "It is 22 degrees in the Office.", [], turn_id="t2")]

    assert _differing(_changed(), _changed(expected=answer)) == SECOND_TURN
    assert _differing(_changed(), _changed(expected=calls)) == SECOND_TURN


def test_another_earlier_turn_changes_the_later_turns_keys_too() -> None:
    first_answer = [turn("turn on the lamp", "Lamp on.", [LAMP]), ACTUAL[1]]
    first_question = [turn("turn the lamp on", "The lamp is on.", [LAMP]), ACTUAL[1]]

    assert _differing(_changed(), _changed(actual=first_answer)) == EVERY_TURN
    assert _differing(_changed(), _changed(actual=first_question)) == EVERY_TURN


def test_a_case_without_a_reference_is_keyed_apart_from_one_with_it() -> None:
    with_reference = keys(case([judged("two_turns", [1.0, 0.0])]))
    without = keys(case([judged("two_turns", [1.0, 0.0])], expected=None))

    assert _differing(with_reference, without) == {(RESPONSE, 0, None), (RESPONSE, 1, None)}


def test_another_rubric_text_changes_that_rubrics_keys_only() -> None:
    reworded = {**RUBRIC_TEXTS, "polite": "The answer is friendly."}

    assert _differing(keys(case(two_metrics()), RUBRIC_TEXTS), keys(case(two_metrics()), reworded)) == {
        (RUBRIC, 0, "polite"),
        (RUBRIC, 1, "polite"),
    }


def test_the_same_rubric_text_from_the_case_or_the_criterion_gives_the_same_key() -> None:
    rubric = Rubric(rubric_id="names_room", rubric_content=RubricContent(text_property=RUBRIC_TEXTS["names_room"]))
    with_rubrics = [EXPECTED[0].model_copy(update={"rubrics": [rubric]}), EXPECTED[1]]
    metric = rubric_judged("two_turns", [{"names_room": 1.0}])

    from_case = judged_items(case([metric], actual=ACTUAL, expected=with_rubrics))
    from_criterion = judged_items(case([metric]), {"names_room": RUBRIC_TEXTS["names_room"]})
    unknown = judged_items(case([metric]))

    assert from_case[0].key == from_criterion[0].key
    assert unknown[0].key != from_case[0].key  # keyed by its id alone
    # the criterion's text wins over the case's
    overridden = judged_items(case([metric], expected=with_rubrics), {"names_room": "Another text."})
    assert overridden[0].key != from_case[0].key


def test_the_metric_and_the_rubric_id_are_part_of_the_key() -> None:
    response = judged("two_turns", [1.0, 1.0])
    renamed = response.model_copy(update={"metric_name": "final_response_match_v3"})
    [first, *_] = judged_items(case([response]))
    [other, *_] = judged_items(case([renamed]))
    rubric_a = judged_items(case([rubric_judged("two_turns", [{"a": 1.0}])]), {"a": "Same text."})
    rubric_b = judged_items(case([rubric_judged("two_turns", [{"b": 1.0}])]), {"b": "Same text."})

    assert first.key != other.key
    assert rubric_a[0].key != rubric_b[0].key


def test_an_item_is_a_frozen_record() -> None:
    [item, *_] = judged_items(case([judged("two_turns", [1.0, 0.0])]))

    assert isinstance(item, JudgedItem)
    with pytest.raises(AttributeError):
        item.judge_passed = False  # type: ignore[misc]
