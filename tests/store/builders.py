"""Small eval sets and run reports for the store tests, with scores chosen by the test."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from sqlalchemy.engine import Engine

from agent_eval.results.aggregate import build_report
from agent_eval.results.model import InvocationScore, MetricResult, RunReport
from agent_eval.schema import AgentRun, EvalCase, EvalConfig, EvalSet, EvalStatus, Invocation, TokenUsage
from agent_eval.store import RunCreate, complete_run, start_run

START = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
THRESHOLD = 0.5
AGENT = "pkg.mod:agent"

Scores = dict[str, dict[str, float | None]]
"""metric name → eval id → score (the same on every run index); None: not scored."""


def invocation(text: str) -> Invocation:
    """One turn: the user says `text`, the agent calls `lookup` and echoes it."""
    return Invocation.model_validate(
        {
            "invocation_id": "t1",
            "user_content": {"role": "user", "parts": [{"text": text}]},
            "final_response": {"role": "model", "parts": [{"text": f"echo {text} — ünïcödé ✓"}]},
            "intermediate_data": {"tool_uses": [{"name": "lookup", "args": {"q": text, "n": 2.5}}]},
        }
    )


def eval_set(eval_set_id: str = "set", eval_ids: tuple[str, ...] = ("a", "b", "c"), version: str = "") -> EvalSet:
    """An eval set of single-turn cases; a different `version` changes the content (and its hash)."""
    cases = [EvalCase(eval_id=eval_id, conversation=[invocation(eval_id + version)]) for eval_id in eval_ids]
    return EvalSet(eval_set_id=eval_set_id, eval_cases=cases)


def agent_run(eval_set_id: str, case: EvalCase, run_index: int, error: str | None = None) -> AgentRun:
    """What the echo agent did on a case (nothing, with `error`, when it failed)."""
    return AgentRun(
        eval_set_id=eval_set_id,
        eval_id=case.eval_id,
        run_index=run_index,
        invocations=[] if error else [invocation(case.eval_id)],
        latency_seconds=0.25,
        error=error,
        token_usage=None if error else TokenUsage(input_tokens=3, output_tokens=4, total_tokens=7),
        final_session_state=None if error else {"turns": 1},
    )


def case_runs(
    eval_sets: list[EvalSet], num_runs: int = 1, errors: dict[str, str] | None = None
) -> list[tuple[EvalCase, AgentRun]]:
    """Every case run in the flow's order (run index, eval set, case)."""
    errors = errors or {}
    return [
        (case, agent_run(s.eval_set_id, case, run_index, errors.get(case.eval_id)))
        for run_index in range(num_runs)
        for s in eval_sets
        for case in s.eval_cases
    ]


def metric_results(runs: list[tuple[EvalCase, AgentRun]], scores: Scores) -> list[MetricResult]:
    """One result per metric and case run: PASSED at or above `THRESHOLD`, FAILED below, else NOT_EVALUATED."""
    return [
        _metric(name, run, by_case.get(run.eval_id) if not run.failed else None)
        for name, by_case in scores.items()
        for _case, run in runs
    ]


def _metric(name: str, run: AgentRun, score: float | None) -> MetricResult:
    status = EvalStatus.NOT_EVALUATED
    if score is not None:
        status = EvalStatus.PASSED if score >= THRESHOLD else EvalStatus.FAILED
    return MetricResult(
        metric_name=name,
        eval_set_id=run.eval_set_id,
        eval_id=run.eval_id,
        run_index=run.run_index,
        score=score,
        status=status,
        threshold=THRESHOLD,
        explanation=None if score is not None else "not scored: the agent failed",
        per_invocation=[InvocationScore(score=score, status=status)] if score is not None else [],
        details={"judge_samples": [{"verdict": "yes"}]} if score is not None else {},
    )


def make_report(
    run_id: str,
    eval_sets: list[EvalSet],
    scores: Scores,
    *,
    errors: dict[str, str] | None = None,
    num_runs: int = 1,
    started_at: datetime = START,
    agent: str = AGENT,
) -> RunReport:
    """A finished run's report over `eval_sets` with the given scores and agent errors."""
    runs = case_runs(eval_sets, num_runs, errors)
    return build_report(
        run_id=run_id,
        runs=runs,
        metric_results=metric_results(runs, scores),
        config=EvalConfig(),
        eval_set_ids=[s.eval_set_id for s in eval_sets],
        agent_reference=agent,
        agent_fingerprint="abc123",
        num_runs=num_runs,
        started_at=started_at,
        completed_at=started_at + timedelta(seconds=2),
    )


def run_start(report: RunReport, tags: list[str] | None = None) -> RunCreate:
    """The run row the flow would insert at the start of `report`'s run."""
    return RunCreate(
        id=report.run_id,
        agent_reference=report.agent_reference,
        agent_fingerprint=report.agent_fingerprint,
        git_commit="0123456789abcdef0123456789abcdef01234567",
        config=report.config,
        config_hash=report.config_hash,
        eval_set_ids=report.eval_set_ids,
        num_runs=report.num_runs,
        started_at=report.started_at,
        updated_at=report.started_at,
        tags=tags or [],
    )


def save_report(
    report: RunReport,
    engine: Engine | None = None,
    *,
    eval_sets: Sequence[EvalSet] = (),
    tags: Sequence[str] = (),
) -> str:
    """Store a finished run as the flow does, `start_run` then `complete_run` (no git commit); returns the run id.

    Raises:
        sqlalchemy.exc.IntegrityError: a run with this id exists (nothing is written).
    """
    start = run_start(report, list(tags)).model_copy(update={"git_commit": None, "flow_run_id": report.flow_run_id})
    start_run(start, eval_sets, engine)
    return complete_run(report, engine)
