"""Gates that trust only calibrated judges: the config's `judge.min_agreement`.

A judged criterion of an eval set whose config sets a floor (`JudgeConfig.agreement_floor`) is *calibrated* when
the judge identity that scores it in this run (`runs.judges`) has a stored check (`agent-eval judges check`, the
`judge-check` deployment) and the newest check of that identity has a kappa at least the floor. An uncalibrated
criterion still scores and shows, but its results are INFORMATIONAL: it fails no case, and the comparison with
the baseline does not let it regress (`RunReport.uncalibrated_judges`). The reason is one line, e.g.
`final_response_match_v2: judge not calibrated (kappa 0.41 [0.22, 0.58] on 37 labels, floor 0.60): informational`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.engine import Engine

from agent_eval.results.agreement_model import kappa_text
from agent_eval.results.model import MetricResult
from agent_eval.results.run_configs import identity_key
from agent_eval.schema import EvalStatus
from agent_eval.store.labels import judge_checks
from agent_eval.store.models import JudgeCheckRecord

__all__ = ["gate_results", "uncalibrated_judges"]

Floors = Mapping[str, Mapping[str, float]]
"""Per eval set id, per gated criterion, its floor (`EvalPlan.judge_floors`)."""


def uncalibrated_judges(
    judges: Mapping[str, Mapping[str, Mapping[str, Any]]], floors: Floors, engine: Engine
) -> dict[tuple[str, str], str]:
    """Per (eval set id, criterion) whose judge is not calibrated, why (one line); one query per identity."""
    found: dict[tuple[str, str], str] = {}
    checks: dict[tuple[str, str], JudgeCheckRecord | None] = {}
    for eval_set_id, gated in floors.items():
        for metric, floor in gated.items():
            identity = (judges.get(eval_set_id) or {}).get(metric)
            key = (metric, identity_key(identity) if identity is not None else "")
            if key not in checks:
                newest = judge_checks(engine, metric=metric, judge_key=key[1], limit=1) if identity else []
                checks[key] = newest[0] if newest else None
            reason = _reason(metric, checks[key], floor)
            if reason is not None:
                found[(eval_set_id, metric)] = reason
    return found


def gate_results(results: Sequence[MetricResult], uncalibrated: Mapping[tuple[str, str], str]) -> list[MetricResult]:
    """The results, those of uncalibrated criteria made INFORMATIONAL (a result that did not score stays as it is),
    each saying why in its explanation and in `details["uncalibrated_judge"]`."""
    return [_gated(result, uncalibrated.get((result.eval_set_id, result.metric_name))) for result in results]


def _gated(result: MetricResult, reason: str | None) -> MetricResult:
    if reason is None or result.status not in (EvalStatus.PASSED, EvalStatus.FAILED):
        return result
    explanation = f"{reason}; {result.explanation}" if result.explanation else reason
    details = {**result.details, "uncalibrated_judge": reason}
    return result.model_copy(
        update={"status": EvalStatus.INFORMATIONAL, "explanation": explanation, "details": details}
    )


def _reason(metric: str, check: JudgeCheckRecord | None, floor: float) -> str | None:
    if check is None:
        why = f"no check of this judge yet: `agent-eval judges check {metric}`"
    elif check.kappa is None:
        why = f"its last check measured no kappa on {check.labels} labels"
    elif check.kappa >= floor:
        return None
    else:
        low, high = check.kappa_low, check.kappa_high
        interval = (low, high) if low is not None and high is not None else None
        why = f"kappa {kappa_text(check.kappa, interval)} on {check.labels} labels"
    return f"{metric}: judge not calibrated ({why}, floor {floor:.2f}): informational"
