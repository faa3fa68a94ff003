"""`compare_runs` compares like with like, per eval set: where the two runs scored an eval set with other
criteria, only the metrics measured alike are compared and no pass/fail flip counts (no invented regression)."""

from __future__ import annotations

from typing import Any

from agent_eval.compare.regression import compare_runs, no_baseline_payload
from agent_eval.results.aggregate import summarize
from agent_eval.results.model import CaseResult, MetricResult, RunReport
from agent_eval.schema import AgentRun, EvalStatus
from tests.render.builders import COMPLETED, RESPONSE, STARTED, TRAJECTORY

LOOSE: dict[str, Any] = {"criteria": {RESPONSE: {"threshold": 0.5}, TRAJECTORY: {"threshold": 1.0}}}
STRICT: dict[str, Any] = {
    "criteria": {RESPONSE: {"threshold": 0.95}, TRAJECTORY: {"threshold": 1.0, "match_type": "ANY_ORDER"}}
}


def _case(eval_set_id: str, eval_id: str, passed: bool, response: float) -> CaseResult:
    status = EvalStatus.PASSED if passed else EvalStatus.FAILED
    metrics = [
        MetricResult(
            metric_name=name, eval_set_id=eval_set_id, eval_id=eval_id, run_index=0, score=score, status=status
        )
        for name, score in ((RESPONSE, response), (TRAJECTORY, 1.0 if passed else 0.0))
    ]
    run = AgentRun(eval_set_id=eval_set_id, eval_id=eval_id, run_index=0)
    return CaseResult(
        eval_set_id=eval_set_id, eval_id=eval_id, run_index=0, status=status, agent_run=run, metrics=metrics
    )


def _report(run_id: str, config: dict[str, Any], passed: bool) -> RunReport:
    """Eval sets `same` and `changed`, two cases each, all passing or all failing."""
    cases = [_case(s, f"c{i}", passed, 0.9) for s in ("same", "changed") for i in range(2)]
    return RunReport(
        run_id=run_id,
        eval_set_ids=["same", "changed"],
        agent_reference="pkg.bot:agent",
        agent_fingerprint="abc123",
        config=config,
        config_hash="hash",
        num_runs=1,
        started_at=STARTED,
        completed_at=COMPLETED,
        cases=cases,
        summary=summarize(cases),
    )


def test_flips_count_only_in_the_eval_set_scored_with_the_same_criteria() -> None:
    baseline = _report("base", {"per_eval_set": {"same": LOOSE, "changed": LOOSE}}, passed=True)
    current = _report("now", {"per_eval_set": {"same": LOOSE, "changed": STRICT}}, passed=False)

    comparison = compare_runs(baseline, current, baseline_reason="pinned with --baseline")

    assert [case.label for case in comparison.hard_regressions] == ["same/c0", "same/c1"]
    assert [case.label for case in comparison.flipped_to_failing] == ["same/c0", "same/c1"]
    trajectory = next(m for m in comparison.metrics if m.metric_name == TRAJECTORY)
    assert trajectory.paired_cases == 2  # only eval set `same`: `changed` measured it with other options
    response = next(m for m in comparison.metrics if m.metric_name == RESPONSE)
    assert response.paired_cases == 4  # a threshold alone changed in `changed`: its scores still compare
    assert comparison.notes == [
        f"eval set changed: the baseline used other criteria; compared only {RESPONSE} (measured alike); left out: "
        f"{TRAJECTORY} (other options); pass/fail flips not compared (they need the same criteria)"
    ]
    assert comparison.summary_lines()[0] == "baseline base: pinned with --baseline"


def test_one_config_for_both_runs_compares_everything() -> None:
    comparison = compare_runs(_report("base", LOOSE, passed=True), _report("now", LOOSE, passed=False))

    assert len(comparison.hard_regressions) == 4 and comparison.notes == []


def test_the_no_baseline_payload_says_why_and_did_not_regress() -> None:
    payload = no_baseline_payload("now", "no earlier completed run of this agent")

    assert (payload["regressed"], payload["baseline_run_id"]) == (False, None)
    assert payload["summary"] == "no comparable baseline: no earlier completed run of this agent"
