"""A hand-built run report with every kind of row: multi-turn, a wrong argument, an agent failure, a pass, and
a metric that raised. The expected values in the tests are computed by hand from the numbers here."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from agent_eval.results.aggregate import build_report
from agent_eval.results.model import InvocationScore, MetricResult, RunReport
from agent_eval.schema import AgentRun, CacheOrigin, EvalCase, EvalConfig, EvalStatus, Invocation

TRAJECTORY = "tool_trajectory_avg_score"
RESPONSE = "response_match_score"
CONFIG = EvalConfig.model_validate(
    {"criteria": {TRAJECTORY: {"threshold": 1.0, "match_type": "EXACT"}, RESPONSE: {"threshold": 0.8}}}
)
STARTED = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
COMPLETED = datetime(2026, 12, 2, 12, 0, 2, 500000, tzinfo=UTC)

Call = tuple[str, dict[str, Any]]
LAMP: Call = ("set_device_info", {"device_id": "lamp", "updates": {"status": "ON"}})
OFFICE: Call = ("get_temperature", {"location": "Office"})
LIVING_ROOM: Call = ("set_temperature", {"location": "Living Room", "temperature": 23})
LIVING_ROOM_LOWER: Call = ("set_temperature", {"location": "living room", "temperature": 23})


def turn(
    user: str, response: str | None, calls: list[Call], *, events: bool = False, turn_id: str = "t1"
) -> Invocation:
    """One invocation; `events=True` records the calls as ADK's actual-run events instead of `tool_uses`."""
    uses = [{"name": name, "args": args} for name, args in calls]
    data: dict[str, Any] = {"tool_uses": uses}
    if events:
        parts = [{"function_call": use} for use in uses]
        data = {"invocation_events": [{"author": "home_agent", "content": {"role": "model", "parts": parts}}]}
    invocation: dict[str, Any] = {
        "invocation_id": turn_id,
        "user_content": {"role": "user", "parts": [{"text": user}]},
        "intermediate_data": data,
    }
    if response is not None:
        invocation["final_response"] = {"role": "model", "parts": [{"text": response}]}
    return Invocation.model_validate(invocation)


def metric(
    name: str,
    eval_id: str,
    score: float | None,
    status: EvalStatus,
    per_turn: list[float] | None = None,
    *,
    run_index: int = 0,
    **extra: Any,
) -> MetricResult:
    """A metric result with the config's threshold and per-invocation scores (default: one turn at `score`)."""
    threshold = 1.0 if name == TRAJECTORY else 0.8
    scores = per_turn if per_turn is not None else ([] if score is None else [score])
    per_invocation = [
        InvocationScore(score=s, status=EvalStatus.PASSED if s >= threshold else EvalStatus.FAILED) for s in scores
    ]
    return MetricResult(
        metric_name=name,
        eval_set_id="home",
        eval_id=eval_id,
        run_index=run_index,
        score=score,
        status=status,
        threshold=threshold,
        per_invocation=per_invocation,
        **extra,
    )


def _cases() -> list[tuple[EvalCase, AgentRun]]:
    two_expected = [
        turn("turn on the lamp", "The lamp is on.", [LAMP], turn_id="t1"),
        turn("how warm is the office?", "It is 22 degrees in the Office.", [OFFICE], turn_id="t2"),
    ]
    two_actual = [
        turn("turn on the lamp", "The lamp is on.", [LAMP], turn_id="t1"),
        turn("how warm is the office?", "22.", [OFFICE], turn_id="t2"),
    ]
    lower_expected = [turn("set the living room to 23", "Done: Living Room at 23.", [LIVING_ROOM])]
    lower_actual = [turn("set the living room to 23", "Done: Living Room at 23.", [LIVING_ROOM_LOWER])]
    fine = [turn("what is the office temperature?", "22 degrees.", [OFFICE])]
    fine_actual = [turn("what is the office temperature?", "22 degrees.", [OFFICE], events=True)]
    boom = [turn("boom please", "Sure.", [])]
    return [
        (EvalCase(eval_id="two_turns", conversation=two_expected), _run("two_turns", two_actual, 1.0)),
        (EvalCase(eval_id="lowercase", conversation=lower_expected), _run("lowercase", lower_actual, 0.25)),
        (EvalCase(eval_id="boom", conversation=boom), _run("boom", [], 0.5, error="ValueError: nope")),
        (EvalCase(eval_id="fine", conversation=fine), _run("fine", fine_actual, 0.25)),
        (EvalCase(eval_id="broken_metric", conversation=fine), _run("broken_metric", fine, 0.5)),
    ]


def _run(eval_id: str, invocations: list[Invocation], latency: float, error: str | None = None) -> AgentRun:
    return AgentRun(eval_set_id="home", eval_id=eval_id, invocations=invocations, latency_seconds=latency, error=error)


LOWERCASE_WHY = "expected set_temperature(location='Living Room', temperature=23)"
NOT_SCORED = "not scored: the agent failed (ValueError: nope)"
BROKEN = "ZeroDivisionError: division by zero"


def _metrics() -> list[MetricResult]:
    passed, failed, not_evaluated = EvalStatus.PASSED, EvalStatus.FAILED, EvalStatus.NOT_EVALUATED
    return [
        metric(TRAJECTORY, "two_turns", 1.0, passed, [1.0, 1.0]),
        metric(RESPONSE, "two_turns", 0.6, failed, [1.0, 0.2], explanation="turn 2: rouge1 0.200"),
        metric(TRAJECTORY, "lowercase", 0.0, failed, explanation=LOWERCASE_WHY),
        metric(RESPONSE, "lowercase", 1.0, passed),
        metric(TRAJECTORY, "boom", None, not_evaluated, explanation=NOT_SCORED),
        metric(RESPONSE, "boom", None, not_evaluated, explanation=NOT_SCORED),
        metric(TRAJECTORY, "fine", 1.0, passed),
        metric(RESPONSE, "fine", 0.8, passed),
        metric(TRAJECTORY, "broken_metric", 1.0, passed),
        metric(RESPONSE, "broken_metric", None, not_evaluated, error=BROKEN),
    ]


def sample_report(run_id: str = "run-1") -> RunReport:
    """Five case runs of eval set `home`: two_turns, lowercase, boom, fine, broken_metric (only `fine` passes)."""
    return build_report(
        run_id=run_id,
        runs=_cases(),
        metric_results=_metrics(),
        config=CONFIG,
        eval_set_ids=["home"],
        agent_reference="examples/home_automation/agent.py:root_agent",
        agent_fingerprint="abc123",
        num_runs=1,
        started_at=STARTED,
        completed_at=COMPLETED,
    )


def repeated_report(num_runs: int = 2) -> RunReport:
    """`fine` run `num_runs` times (every run passes)."""
    fine = [turn("what is the office temperature?", "22 degrees.", [OFFICE])]
    runs = [
        (EvalCase(eval_id="fine", conversation=fine), _run("fine", fine, 0.25).model_copy(update={"run_index": i}))
        for i in range(num_runs)
    ]
    results = [
        metric(name, "fine", 1.0, EvalStatus.PASSED, run_index=i) for i in range(num_runs) for name in (TRAJECTORY,)
    ]
    return build_report(
        run_id="repeated",
        runs=runs,
        metric_results=results,
        config=CONFIG,
        eval_set_ids=["home"],
        agent_reference="pkg.bot:agent",
        agent_fingerprint="abc123",
        num_runs=num_runs,
        started_at=STARTED,
        completed_at=COMPLETED,
    )


# ------------------------------------------------------------------------- small reports from statuses alone
def result(
    name: str,
    status: EvalStatus,
    *,
    eval_id: str = "a",
    run_index: int = 0,
    explanation: str | None = None,
    error: str | None = None,
) -> MetricResult:
    """A metric result with a score that matches its status (1.0 passed, 0.0 failed, 3.0 informational)."""
    score = {EvalStatus.PASSED: 1.0, EvalStatus.FAILED: 0.0, EvalStatus.INFORMATIONAL: 3.0}.get(status)
    return MetricResult(
        metric_name=name,
        eval_set_id="home",
        eval_id=eval_id,
        run_index=run_index,
        score=score,
        status=status,
        threshold=None if status is EvalStatus.INFORMATIONAL else 0.5,
        explanation=explanation,
        error=error,
    )


def agent_run(
    eval_id: str = "a", run_index: int = 0, error: str | None = None, cached_from: CacheOrigin | None = None
) -> AgentRun:
    """A case run of eval set `home` without invocations."""
    return AgentRun(eval_set_id="home", eval_id=eval_id, run_index=run_index, error=error, cached_from=cached_from)


def run_report(runs: list[AgentRun], results: list[MetricResult], num_runs: int = 1) -> RunReport:
    """Run `r` of eval set `home`: these case runs (one single-turn case each) with these metric results."""
    return build_report(
        run_id="r",
        runs=[(EvalCase(eval_id=run.eval_id, conversation=[turn("hi", "hello", [])]), run) for run in runs],
        metric_results=results,
        config=EvalConfig(),
        eval_set_ids=["home"],
        agent_reference="pkg.bot:agent",
        agent_fingerprint="abc123",
        num_runs=num_runs,
        started_at=STARTED,
        completed_at=COMPLETED,
    )


# ------------------------------------------------------------------------- configs and judge modes (issue 18)
ADK_DEFAULTS = EvalConfig().model_dump(mode="json", exclude_none=True)
PER_EVAL_SET_CONFIG: dict[str, Any] = {
    "per_eval_set": {
        "set20": {"criteria": {RESPONSE: {"threshold": 0.5}}},
        "set40": ADK_DEFAULTS,
        "set50": {"criteria": {"final_response_match_v2": {"threshold": 0.5}}},
    },
    "config_files": {"set20": "mt/test_config.json", "set40": None, "set50": None},
}
"""`runs.config` of a run whose eval sets used different configs: a file's, ADK's defaults, one given inline."""


def judged(name: str, mode: str, *, eval_id: str = "a") -> MetricResult:
    """A passed result of a judged metric scored in judge mode `mode` (`details["judge_mode"]`)."""
    return result(name, EvalStatus.PASSED, eval_id=eval_id).model_copy(update={"details": {"judge_mode": mode}})


def judged_report(mode_of_b: str = "adk-exact") -> RunReport:
    """Case runs `a` and `b`: `final_response_match_v2` ADK-exact (on `b` in `mode_of_b`), `safety_v1`
    agent-eval's, and `m`, not judged."""
    results = [
        result("m", EvalStatus.PASSED, eval_id="a"),
        judged("final_response_match_v2", "adk-exact", eval_id="a"),
        judged("safety_v1", "agent-eval", eval_id="a"),
        result("m", EvalStatus.PASSED, eval_id="b"),
        judged("final_response_match_v2", mode_of_b, eval_id="b"),
        judged("safety_v1", "agent-eval", eval_id="b"),
    ]
    return run_report([agent_run("a"), agent_run("b")], results)
