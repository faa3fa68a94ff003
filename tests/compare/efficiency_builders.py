"""Tiny run reports with known costs and per-turn latencies, for the cost and latency comparison tests."""

from __future__ import annotations

from google.genai import types as genai_types

from agent_eval.results.aggregate import summarize
from agent_eval.results.model import CaseResult, MetricResult, RunReport
from agent_eval.results.pricing import ModelCost, RunCost
from agent_eval.schema import AgentRun, CacheOrigin, EvalStatus, Invocation
from tests.render.builders import COMPLETED, RESPONSE, STARTED

MODEL = "bot-model"


def case_run(
    eval_id: str,
    seconds: list[float | None],
    *,
    run_index: int = 0,
    error: str | None = None,
    cached: bool = False,
    recorded: bool = False,
) -> CaseResult:
    """A case run of eval set `home` with one turn per entry of `seconds` (None: an untimed turn), scored 1.0."""
    turns = [
        Invocation(user_content=genai_types.Content(role="user", parts=[genai_types.Part(text="hi")]), duration=s)
        for s in seconds
    ]
    agent_run = AgentRun(
        eval_set_id="home",
        eval_id=eval_id,
        run_index=run_index,
        invocations=turns,
        error=error,
        cached_from=CacheOrigin(run_id="older") if cached else None,
    )
    status = EvalStatus.FAILED if error else EvalStatus.PASSED
    metric = MetricResult(
        metric_name=RESPONSE, eval_set_id="home", eval_id=eval_id, run_index=run_index, score=1.0, status=status
    )
    return CaseResult(
        eval_set_id="home",
        eval_id=eval_id,
        run_index=run_index,
        status=status,
        agent_run=agent_run,
        metrics=[metric],
        recorded_from=[f"spans.jsonl:{run_index + 1}"] if recorded else [],
    )


def run_cost(usd: float | None) -> RunCost:
    """The agent's one model costing `usd` (None: unknown, e.g. a model without a price); no judge."""
    return RunCost(
        agent_usd=usd,
        judge_usd=None,
        agent={MODEL: ModelCost(usd=usd, source="config" if usd is not None else None)},
        unpriced=[] if usd is not None else [MODEL],
        table="test prices",
    )


def run_report(run_id: str, cases: list[CaseResult], cost: RunCost | None) -> RunReport:
    """A finished run of `cases` whose summary says it cost `cost` (None: no call reported tokens)."""
    summary = summarize(cases).model_copy(update={"cost": cost})
    return RunReport(
        run_id=run_id,
        eval_set_ids=["home"],
        agent_reference="pkg.bot:agent",
        agent_fingerprint="abc123",
        config={},
        config_hash="hash",
        num_runs=max((case.run_index for case in cases), default=0) + 1,
        started_at=STARTED,
        completed_at=COMPLETED,
        cases=cases,
        summary=summary,
    )


def timed_run(run_id: str, seconds: dict[str, list[float | None]], usd: float | None) -> RunReport:
    """One case run per entry of `seconds` (eval id → its turns' seconds), the run costing `usd` in all."""
    cases = [case_run(eval_id, turns) for eval_id, turns in seconds.items()]
    return run_report(run_id, cases, run_cost(usd))


def turns_run(run_id: str, seconds: list[float], usd: float | None) -> RunReport:
    """One single-turn case run per entry of `seconds` (eval ids c00, c01, ...), the run costing `usd` in all."""
    cases = [case_run(f"c{i:02d}", [turn]) for i, turn in enumerate(seconds)]
    return run_report(run_id, cases, run_cost(usd))
