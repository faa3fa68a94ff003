"""`--estimate`: what a planned run will cost, projected from the store's last comparable run, with nothing run.

The earlier run is chosen among the last `_CANDIDATES` *completed* runs of the same agent reference that
evaluated at least one of the plan's eval sets (an errored, stopped or cancelled run says nothing of a whole
run's spend): first one whose agent spent tokens (a re-score calls no agent; answers reused from another run
cost nothing), then the one sharing the most eval sets, then the newest. The projection's rules are
`agent_eval.results.estimate`'s.
"""

from __future__ import annotations

from sqlalchemy.engine import Engine

from agent_eval.plan.eval_plan import EvalPlan
from agent_eval.results.estimate import CostEstimate, PlannedCaseRun, PlannedJudge, estimate_cost
from agent_eval.results.model import RunReport
from agent_eval.store import RunRead, RunStatus, get_engine, list_runs, load_report

__all__ = ["earlier_run_of", "estimate_plan", "planned_case_runs"]

_CANDIDATES = 50


def estimate_plan(plan: EvalPlan, engine: Engine | None = None) -> CostEstimate:
    """The plan's projected tokens and dollars (no agent, judge or Prefect call; reads the store only)."""
    engine = engine or get_engine(plan.request.db_url)
    return estimate_cost(planned_case_runs(plan), earlier_run_of(plan, engine), plan.config.pricing)


def planned_case_runs(plan: EvalPlan) -> list[PlannedCaseRun]:
    """Every case run of the plan, with the judge model and samples of each judged criterion of its eval set."""
    judges = {
        eval_set_id: {name: PlannedJudge(str(i["model"]), int(i["samples"])) for name, i in criteria.items()}
        for eval_set_id, criteria in plan.judges().items()
    }
    return [
        PlannedCaseRun(key.eval_set_id, key.case.eval_id, judges.get(key.eval_set_id, {})) for key in plan.case_runs()
    ]


def earlier_run_of(plan: EvalPlan, engine: Engine) -> RunReport | None:
    """The run to project from (see the module docstring), with its case runs' details; None: no such run."""
    wanted = {eval_set.eval_set_id for eval_set in plan.eval_sets}
    candidates = [
        run
        for run in list_runs(engine, limit=_CANDIDATES, agent_reference=plan.agent.reference)
        if run.status == RunStatus.COMPLETED and wanted & set(run.eval_set_ids)
    ]
    if not candidates:
        return None
    best = max(candidates, key=lambda run: (_invoked(run), len(wanted & set(run.eval_set_ids)), run.started_at))
    return load_report(best.id, engine)


def _invoked(run: RunRead) -> bool:
    """Whether the run's agent spent tokens then (a re-score calls no agent, reused answers cost nothing now)."""
    return bool((run.summary or {}).get("agent_tokens"))
