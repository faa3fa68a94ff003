"""Plans built from a stored run: re-run its cases (all, or only the failed ones) with the same agent and
config, or re-score its recorded invocations with a new config without invoking the agent."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agent_eval.agents import AgentFailure, resolve_agent
from agent_eval.errors import EvalInputError
from agent_eval.io import config_from_data, load_eval_config
from agent_eval.metrics import REGISTRY
from agent_eval.plan import DEFAULT_MAX_CONCURRENCY, EvalPlan, EvalRequest, check_judges, ready_agent
from agent_eval.schema import AgentRun, EvalCase, EvalConfig, EvalSet, EvalStatus
from agent_eval.store import agent_run_of, get_engine, get_run, load_case_records, stored_eval_sets

__all__ = ["RerunRequest", "RescoreRequest", "StoredRunAgent", "plan_rerun", "plan_rescore"]


class RerunRequest(BaseModel):
    """Parameters of the `agent-eval-rerun` flow: evaluate a stored run's cases again."""

    model_config = ConfigDict(extra="forbid")

    run_id: str = Field(description="The stored run whose cases are evaluated again.")
    only_failed: bool = Field(default=False, description="Only the cases that failed or errored in that run.")
    refresh: bool = Field(default=False, description="Invoke the agent even where a cached invocation exists.")
    max_concurrency: int = Field(default=DEFAULT_MAX_CONCURRENCY, ge=1, le=256)
    db_url: str | None = Field(default=None, description="Store URL. Default: $AGENT_EVAL_DB_URL or SQLite.")


class RescoreRequest(BaseModel):
    """Parameters of the `agent-eval-rescore` flow: score a stored run's invocations with another config."""

    model_config = ConfigDict(extra="forbid")

    run_id: str = Field(description="The stored run whose recorded invocations are scored again.")
    config: str | dict[str, Any] | None = Field(
        default=None, description="An ADK test_config.json path, or the config itself. Default: the run's own."
    )
    db_url: str | None = Field(default=None, description="Store URL. Default: $AGENT_EVAL_DB_URL or SQLite.")


RunKey = tuple[str, str, int]


class StoredRunAgent:
    """Answers each case run with what a stored run recorded for it; no agent is called.

    Its reference and fingerprint are the stored run's, so the re-scored run compares with the same history.
    """

    def __init__(self, reference: str, fingerprint: str, runs: dict[RunKey, AgentRun]) -> None:
        self._reference, self._fingerprint, self._runs = reference, fingerprint, runs

    @property
    def reference(self) -> str:
        """The stored run's agent reference."""
        return self._reference

    @property
    def fingerprint(self) -> str:
        """The stored run's agent fingerprint."""
        return self._fingerprint

    async def run_case(self, case: EvalCase, eval_set_id: str, run_index: int) -> AgentRun:
        """The recorded run (an agent failure stays one).

        Raises:
            AgentFailure: the run recorded a failure, or did not record this case run.
        """
        recorded = self._runs.get((eval_set_id, case.eval_id, run_index))
        if recorded is None:
            missing = AgentRun(eval_set_id=eval_set_id, eval_id=case.eval_id, run_index=run_index)
            raise AgentFailure(missing.model_copy(update={"error": "the stored run has no record of this case run"}))
        if recorded.failed:
            raise AgentFailure(recorded)
        return recorded


def plan_rerun(request: RerunRequest) -> EvalPlan:
    """The stored run's eval set versions (only its failed cases when asked), agent and config, checked.

    Raises:
        EvalInputError: no such run, nothing failed when only failed cases are asked for, or the agent
            or config no longer resolve.
    """
    engine = get_engine(request.db_url)
    run = get_run(request.run_id, engine)
    eval_sets = stored_eval_sets(request.run_id, engine)
    if request.only_failed:
        eval_sets = _only(eval_sets, _failed_cases(request.run_id, request.db_url))
    config = EvalConfig.model_validate(run.config)
    eval_request = _request(request.run_id, run.agent_reference, run.config, run.num_runs, request.db_url)
    eval_request = eval_request.model_copy(
        update={"refresh_cache": request.refresh, "max_concurrency": request.max_concurrency, "tags": ["rerun"]}
    )
    if not eval_sets:
        raise EvalInputError(f"run {request.run_id!r} has no failed or errored case to run again", field="run_id")
    agent = ready_agent(resolve_agent(run.agent_reference), eval_request, eval_sets, config)
    return _plan(eval_request, eval_sets, config, agent)


def plan_rescore(request: RescoreRequest) -> EvalPlan:
    """The stored run's eval sets and recorded invocations, scored with `request.config` (default: the run's).

    Raises:
        EvalInputError: no such run, or a bad config.
    """
    engine = get_engine(request.db_url)
    run = get_run(request.run_id, engine)
    config = _rescore_config(request.config, run.config)
    records = load_case_records(request.run_id, engine)
    runs = {(r.eval_set_id, r.eval_id, r.run_index): agent_run_of(r) for r in records}
    agent = StoredRunAgent(run.agent_reference, run.agent_fingerprint, runs)
    config_json = config.model_dump(mode="json", exclude_none=True)
    eval_request = _request(request.run_id, run.agent_reference, config_json, run.num_runs, request.db_url)
    eval_request = eval_request.model_copy(update={"tags": ["rescore"]})
    return _plan(eval_request, stored_eval_sets(request.run_id, engine), config, agent)


def _plan(request: EvalRequest, eval_sets: list[EvalSet], config: EvalConfig, agent: Any) -> EvalPlan:
    metrics = REGISTRY.resolve(config)
    check_judges(metrics)
    return EvalPlan(request=request, eval_sets=eval_sets, config=config, config_file=None, metrics=metrics, agent=agent)


def _request(run_id: str, agent: str, config: dict[str, Any], num_runs: int, db_url: str | None) -> EvalRequest:
    return EvalRequest(paths=[f"run:{run_id}"], agent=agent, config=config, num_runs=num_runs, db_url=db_url)


def _rescore_config(given: str | dict[str, Any] | None, stored: dict[str, Any]) -> EvalConfig:
    if given is None:
        return EvalConfig.model_validate(stored)
    if isinstance(given, dict):
        return config_from_data(given, "<config>")
    return load_eval_config(given)


def _failed_cases(run_id: str, db_url: str | None) -> set[tuple[str, str]]:
    records = load_case_records(run_id, get_engine(db_url))
    return {(r.eval_set_id, r.eval_id) for r in records if r.failure or r.status != int(EvalStatus.PASSED)}


def _only(eval_sets: list[EvalSet], wanted: set[tuple[str, str]]) -> list[EvalSet]:
    kept = [
        s.model_copy(update={"eval_cases": [c for c in s.eval_cases if (s.eval_set_id, c.eval_id) in wanted]})
        for s in eval_sets
    ]
    return [s for s in kept if s.eval_cases]
