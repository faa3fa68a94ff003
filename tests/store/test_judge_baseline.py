"""`choose_baseline` and judge identities on a real store (SQLite and PostgreSQL): a run is compared only with an
earlier run whose judged criteria were scored by the same judges (`runs.judges`), and the reason names the
metric and what differs; a run stored before identities were recorded (`judges` None) is taken as alike."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy.engine import Engine

from agent_eval.store import get_engine
from agent_eval.store.queries import BaselineChoice, choose_baseline, find_baseline, get_run
from tests.judges.stored_runs import (
    ADK_EXACT_JUDGE,
    AGENT_EVAL_JUDGE,
    RESPONSE,
    RUBRIC,
    SET,
    JudgedCase,
    judged,
    rubric_judged,
    store_cases,
    turn,
)

LATEST = "latest completed run of the same agent, eval set versions and criteria"
OLD, NOW = "0" * 8 + "a" * 24, "f" * 8 + "b" * 24
CASES = [
    JudgedCase(
        "kitchen",
        [turn("is the kitchen light on?", "Yes.")],
        [judged("kitchen", [1.0]), rubric_judged("kitchen", [{"names_room": 0.0, "polite": 1.0}])],
    )
]


@pytest.fixture
def engine(store_url: str) -> Engine:
    return get_engine(store_url)


def save(engine: Engine, run_id: str, minutes: int, judges: dict[str, Any] | None) -> str:
    store_cases(engine, run_id, CASES, minutes=minutes, judges=judges)
    return run_id


def judges_of(response: dict[str, Any] | None, rubric: dict[str, Any] | None = None) -> dict[str, Any]:
    by_metric = {name: dict(i) for name, i in ((RESPONSE, response), (RUBRIC, rubric)) if i is not None}
    return {SET: by_metric}


def test_the_judges_are_stored_with_the_run(engine: Engine) -> None:
    save(engine, NOW, 0, judges_of(AGENT_EVAL_JUDGE, ADK_EXACT_JUDGE))
    save(engine, OLD, -5, None)

    assert get_run(NOW, engine).judges == {SET: {RESPONSE: AGENT_EVAL_JUDGE, RUBRIC: ADK_EXACT_JUDGE}}
    assert get_run(OLD, engine).judges is None


def test_another_judge_mode_means_no_baseline_and_the_reason_names_metric_and_mode(engine: Engine) -> None:
    save(engine, OLD, 0, judges_of({**AGENT_EVAL_JUDGE, "mode": "adk-exact"}, AGENT_EVAL_JUDGE))
    save(engine, NOW, 10, judges_of(AGENT_EVAL_JUDGE, AGENT_EVAL_JUDGE))

    assert choose_baseline(NOW, engine) == BaselineChoice(
        None,
        "the latest run of the same criteria (00000000, 2026-12-02 12:00 UTC) was scored by another judge: "
        f"{RESPONSE}: mode agent-eval (was adk-exact)",
    )
    assert find_baseline(NOW, engine) is None


def test_adk_exact_then_agent_eval_names_mode_and_prompts_of_each_judged_metric(engine: Engine) -> None:
    save(engine, OLD, 0, judges_of(ADK_EXACT_JUDGE, ADK_EXACT_JUDGE))
    save(engine, NOW, 10, judges_of(AGENT_EVAL_JUDGE, AGENT_EVAL_JUDGE))

    choice = choose_baseline(NOW, engine)

    change = "mode agent-eval (was adk-exact), prompts prompts 0123456789ab (was google-adk 1.18.0)"
    assert choice == BaselineChoice(
        None,
        "the latest run of the same criteria (00000000, 2026-12-02 12:00 UTC) was scored by another judge: "
        f"{RESPONSE}: {change}; {RUBRIC}: {change}",
    )


@pytest.mark.parametrize(
    ("before", "now", "difference"),
    [
        ({**AGENT_EVAL_JUDGE, "samples": 3}, {**AGENT_EVAL_JUDGE, "samples": 5}, "samples 5 (was 3)"),
        (
            AGENT_EVAL_JUDGE,
            {**AGENT_EVAL_JUDGE, "model": "gemini-2.5-pro"},
            "model gemini-2.5-pro (was gemini-2.5-flash)",
        ),
        (
            AGENT_EVAL_JUDGE,
            {**AGENT_EVAL_JUDGE, "config": {"temperature": 0.0}},
            "config {'temperature': 0.0} (was None)",
        ),
        (None, AGENT_EVAL_JUDGE, "judged only in one of the runs"),
    ],
)
def test_the_reason_says_what_differs(
    engine: Engine, before: dict[str, Any] | None, now: dict[str, Any], difference: str
) -> None:
    save(engine, OLD, 0, judges_of(before, AGENT_EVAL_JUDGE))
    save(engine, NOW, 10, judges_of(now, AGENT_EVAL_JUDGE))

    choice = choose_baseline(NOW, engine)

    assert choice.run_id is None
    assert choice.reason.endswith(f"was scored by another judge: {RESPONSE}: {difference}")


def test_the_same_judges_make_the_earlier_run_the_baseline(engine: Engine) -> None:
    save(engine, OLD, 0, judges_of(AGENT_EVAL_JUDGE, ADK_EXACT_JUDGE))
    save(engine, NOW, 10, judges_of(dict(AGENT_EVAL_JUDGE), dict(ADK_EXACT_JUDGE)))

    assert choose_baseline(NOW, engine) == BaselineChoice(OLD, f"{LATEST}, 2026-12-02 12:00 UTC")


def test_an_earlier_run_of_a_release_without_judge_identities_is_still_the_baseline(engine: Engine) -> None:
    save(engine, OLD, 0, None)
    save(engine, NOW, 10, judges_of(AGENT_EVAL_JUDGE, AGENT_EVAL_JUDGE))

    assert choose_baseline(NOW, engine) == BaselineChoice(OLD, f"{LATEST}, 2026-12-02 12:00 UTC")


def test_a_run_without_judge_identities_takes_an_earlier_run_with_them(engine: Engine) -> None:
    save(engine, OLD, 0, judges_of(ADK_EXACT_JUDGE))
    save(engine, NOW, 10, None)

    assert choose_baseline(NOW, engine) == BaselineChoice(OLD, f"{LATEST}, 2026-12-02 12:00 UTC")


def test_an_older_run_of_the_same_judges_is_the_baseline_when_the_latest_had_another(engine: Engine) -> None:
    save(engine, OLD, 0, judges_of(AGENT_EVAL_JUDGE))
    save(engine, "5" * 32, 5, judges_of(ADK_EXACT_JUDGE))
    save(engine, NOW, 10, judges_of(AGENT_EVAL_JUDGE))

    assert choose_baseline(NOW, engine) == BaselineChoice(OLD, f"{LATEST}, 2026-12-02 12:00 UTC")
