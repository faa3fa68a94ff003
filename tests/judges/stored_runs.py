"""Hand-built judged runs for the judges' tests: turns, judged metric results (per-turn scores, per-sample
scores, rubric verdicts) and stored runs with the judge identities the test chooses, without running a flow.

The details follow the shape the judged metrics write (`agent_eval.metrics.judged.voting.judged_result`):
`judge_model`, `num_samples` and one `invocations[turn]` per turn with its `samples` (and, for a rubric metric,
`rubrics[rubric_id]["samples"]`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from agent_eval.results.aggregate import build_report
from agent_eval.results.model import InvocationScore, MetricResult, RunReport
from agent_eval.schema import AgentRun, EvalCase, EvalConfig, EvalSet, EvalStatus, Invocation, RubricScore
from agent_eval.store import RunCreate, complete_run, start_run
from agent_eval.store.models import CaseRecord, JudgedItemRecord, LabelRecord

START = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
AGENT = "pkg.home:agent"
SET = "home"
RESPONSE = "final_response_match_v2"
RUBRIC = "rubric_based_final_response_quality_v1"
TRAJECTORY = "tool_trajectory_avg_score"
THRESHOLD = 0.5
JUDGE_MODEL = "gemini-2.5-flash"
RUBRIC_TEXTS = {"names_room": "The answer names the room.", "polite": "The answer is polite."}
CONFIG: dict[str, Any] = {
    "criteria": {
        RESPONSE: {"threshold": THRESHOLD, "judge_model_options": {"judge_model": JUDGE_MODEL, "num_samples": 3}},
        RUBRIC: {
            "threshold": THRESHOLD,
            "judge_model_options": {"judge_model": JUDGE_MODEL, "num_samples": 3},
            "rubrics": [
                {"rubric_id": rubric_id, "rubric_content": {"text_property": text}}
                for rubric_id, text in RUBRIC_TEXTS.items()
            ],
        },
    }
}
AGENT_EVAL_JUDGE: dict[str, Any] = {
    "model": JUDGE_MODEL,
    "mode": "agent-eval",
    "prompts": "prompts 0123456789ab",
    "samples": 3,
    "config": None,
}
ADK_EXACT_JUDGE: dict[str, Any] = {**AGENT_EVAL_JUDGE, "mode": "adk-exact", "prompts": "google-adk 1.18.0"}

Call = tuple[str, dict[str, Any]]
Samples = Sequence[float | None]
"""Per sample, its score (None: an unusable sample, stored as `{"error": ...}` as the judges write it)."""


def turn(user: str, response: str, calls: Sequence[Call] = (), *, turn_id: str = "t1") -> Invocation:
    """One invocation: the user's text, the agent's answer and its tool calls."""
    return Invocation.model_validate(
        {
            "invocation_id": turn_id,
            "user_content": {"role": "user", "parts": [{"text": user}]},
            "final_response": {"role": "model", "parts": [{"text": response}]},
            "intermediate_data": {"tool_uses": [{"name": name, "args": args} for name, args in calls]},
        }
    )


def sample_details(samples: Samples) -> list[dict[str, Any]]:
    """Samples as a judge's details hold them: usable ones with a score and label, unusable ones with an error."""
    return [
        {"error": "the answer has no verdict"}
        if score is None
        else {"score": score, "label": "yes" if score >= 0.5 else "no", "rationale": "r"}
        for score in samples
    ]


def judged(
    eval_id: str,
    scores: Sequence[float | None],
    *,
    name: str = RESPONSE,
    samples: Sequence[Samples] | None = None,
    threshold: float | None = THRESHOLD,
    eval_set_id: str = SET,
    run_index: int = 0,
) -> MetricResult:
    """A judged metric's result on a case run: one score per turn, each turn's samples (default: none)."""
    per_turn = [InvocationScore(score=s, status=_status(s, threshold)) for s in scores]
    turns = [{"score": s, "samples": sample_details(samples[i]) if samples else []} for i, s in enumerate(scores)]
    usable = [s for s in scores if s is not None]
    overall = sum(usable) / len(usable) if usable else None
    return MetricResult(
        metric_name=name,
        eval_set_id=eval_set_id,
        eval_id=eval_id,
        run_index=run_index,
        score=overall,
        status=_status(overall, threshold),
        threshold=threshold,
        per_invocation=per_turn,
        details={"judge_model": JUDGE_MODEL, "num_samples": 3, "invocations": turns},
    )


def rubric_judged(
    eval_id: str,
    turns: Sequence[Mapping[str, float | None]],
    *,
    samples: Sequence[Mapping[str, Samples]] | None = None,
    name: str = RUBRIC,
    threshold: float | None = THRESHOLD,
    eval_set_id: str = SET,
    run_index: int = 0,
) -> MetricResult:
    """A rubric metric's result: per turn, each rubric's verdict (and its samples)."""
    per_turn, details = [], []
    for index, rubrics in enumerate(turns):
        scores = [s for s in rubrics.values() if s is not None]
        score = sum(scores) / len(scores) if scores else None
        rubric_scores = [RubricScore(rubric_id=rubric_id, score=s) for rubric_id, s in rubrics.items()]
        per_turn.append(InvocationScore(score=score, status=_status(score, threshold), rubric_scores=rubric_scores))
        by_rubric = samples[index] if samples else {}
        details.append(
            {
                "score": score,
                "rubrics": {
                    rubric_id: {"score": s, "samples": sample_details(by_rubric.get(rubric_id, []))}
                    for rubric_id, s in rubrics.items()
                },
            }
        )
    usable = [t.score for t in per_turn if t.score is not None]
    overall = sum(usable) / len(usable) if usable else None
    return MetricResult(
        metric_name=name,
        eval_set_id=eval_set_id,
        eval_id=eval_id,
        run_index=run_index,
        score=overall,
        status=_status(overall, threshold),
        threshold=threshold,
        per_invocation=per_turn,
        details={"judge_model": JUDGE_MODEL, "num_samples": 3, "invocations": details},
    )


def not_judged(eval_id: str, scores: Sequence[float], *, eval_set_id: str = SET, run_index: int = 0) -> MetricResult:
    """A deterministic metric's result (its details name no judge model)."""
    return MetricResult(
        metric_name=TRAJECTORY,
        eval_set_id=eval_set_id,
        eval_id=eval_id,
        run_index=run_index,
        score=sum(scores) / len(scores),
        status=EvalStatus.PASSED,
        threshold=1.0,
        per_invocation=[InvocationScore(score=s, status=EvalStatus.PASSED) for s in scores],
        details={"matched": True},
    )


def _status(score: float | None, threshold: float | None) -> EvalStatus:
    if score is None:
        return EvalStatus.NOT_EVALUATED
    return EvalStatus.PASSED if score >= (threshold if threshold is not None else 0.5) else EvalStatus.FAILED


class JudgedCase:
    """A case of the eval set with what the agent did (`actual`, default: the expected turns) and its results."""

    def __init__(
        self,
        eval_id: str,
        expected: Sequence[Invocation],
        metrics: Sequence[MetricResult],
        actual: Sequence[Invocation] | None = None,
    ) -> None:
        self.eval_id = eval_id
        self.expected = list(expected)
        self.actual = list(actual) if actual is not None else list(expected)
        self.metrics = list(metrics)


def eval_set_of(cases: Sequence[JudgedCase], eval_set_id: str = SET) -> EvalSet:
    return EvalSet(
        eval_set_id=eval_set_id,
        eval_cases=[EvalCase(eval_id=case.eval_id, conversation=case.expected) for case in cases],
    )


def judged_report(
    run_id: str,
    cases: Sequence[JudgedCase],
    *,
    minutes: int = 0,
    judges: Mapping[str, Any] | None = None,
    config: Mapping[str, Any] = CONFIG,
    eval_set_id: str = SET,
) -> RunReport:
    """A completed run's report over one eval set, started `minutes` after START, with these judge identities
    (`runs.judges`: {eval_set_id: {metric: identity}}; None: a run of a release that did not record them)."""
    eval_set = eval_set_of(cases, eval_set_id)
    runs = [
        (case, AgentRun(eval_set_id=eval_set_id, eval_id=case.eval_id, invocations=judged_case.actual))
        for case, judged_case in zip(eval_set.eval_cases, cases, strict=True)
    ]
    started = START + timedelta(minutes=minutes)
    report = build_report(
        run_id=run_id,
        runs=runs,
        metric_results=[metric for case in cases for metric in case.metrics],
        config=EvalConfig.model_validate(dict(config)),
        eval_set_ids=[eval_set_id],
        agent_reference=AGENT,
        agent_fingerprint="f00d",
        num_runs=1,
        started_at=started,
        completed_at=started + timedelta(seconds=3),
    )
    return report.model_copy(update={"judges": None if judges is None else dict(judges)})


def store_report(report: RunReport, engine: Engine, eval_sets: Sequence[EvalSet] = ()) -> str:
    """Store a finished run as the flow does: `start_run` (with its judge identities) then `complete_run`."""
    start_run(
        RunCreate(
            id=report.run_id,
            agent_reference=report.agent_reference,
            agent_fingerprint=report.agent_fingerprint,
            config=report.config,
            config_hash=report.config_hash,
            eval_set_ids=report.eval_set_ids,
            num_runs=report.num_runs,
            started_at=report.started_at,
            updated_at=report.started_at,
            judges=report.judges,
        ),
        eval_sets,
        engine,
    )
    return complete_run(report, engine)


def store_cases(
    engine: Engine,
    run_id: str,
    cases: Sequence[JudgedCase],
    *,
    minutes: int = 0,
    judges: Mapping[str, Any] | None = None,
    config: Mapping[str, Any] = CONFIG,
) -> RunReport:
    """Build and store a judged run; its report."""
    report = judged_report(run_id, cases, minutes=minutes, judges=judges, config=config)
    store_report(report, engine, [eval_set_of(cases)])
    return report


def identities(identity: Mapping[str, Any], *metrics: str, eval_set_id: str = SET) -> dict[str, Any]:
    """`runs.judges` with one identity for each of `metrics` on one eval set."""
    return {eval_set_id: {metric: dict(identity) for metric in metrics or (RESPONSE,)}}


def stored_key(
    engine: Engine, run_id: str, eval_id: str, metric: str, *, turn: int = 0, rubric_id: str | None = None
) -> str:
    """The content key of a stored judged item (`turn` 0-based, as stored)."""
    statement = (
        select(JudgedItemRecord.item_key)
        .join(CaseRecord, col(CaseRecord.id) == col(JudgedItemRecord.case_result_id))
        .where(
            col(JudgedItemRecord.run_id) == run_id,
            col(CaseRecord.eval_id) == eval_id,
            col(JudgedItemRecord.metric_name) == metric,
            col(JudgedItemRecord.turn) == turn,
            col(JudgedItemRecord.rubric_id) == rubric_id
            if rubric_id is not None
            else col(JudgedItemRecord.rubric_id).is_(None),
        )
    )
    with Session(engine) as session:
        keys = session.exec(statement).all()
    assert len(keys) == 1, f"{len(keys)} stored items for {run_id} {eval_id} {metric} {turn} {rubric_id}"
    return keys[0]


def label_rows(engine: Engine) -> list[dict[str, Any]]:
    """Every row of `judge_labels` (but its id and time), by item key then labeller."""
    with Session(engine) as session:
        records = session.exec(select(LabelRecord).order_by(col(LabelRecord.item_key), col(LabelRecord.labeller)))
        return [record.model_dump(exclude={"id", "labelled_at"}) for record in records.all()]
