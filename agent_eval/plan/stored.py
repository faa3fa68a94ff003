"""Plans built from a stored run: re-run its cases (all, or only the failed ones) with the same agent and
config, or re-score its recorded invocations with a new config without invoking the agent.

Internal: the public API is `agent_eval`'s; this module's names may change between releases."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agent_eval.agents import AgentFailure, resolve_agent
from agent_eval.errors import EvalInputError
from agent_eval.io import config_from_data, load_eval_config
from agent_eval.io.recorded.parts import is_outline
from agent_eval.plan.eval_plan import (
    ConfigGroup,
    EvalPlan,
    EvalRequest,
    config_groups,
    ready_agent,
    simulator_config,
)
from agent_eval.results.run_configs import CONFIG_FILES, configs_by_eval_set
from agent_eval.schema import AgentRun, EvalCase, EvalConfig, EvalSet, EvalStatus
from agent_eval.secrets import ConfigParameter, UrlParameter
from agent_eval.settings import DEFAULT_MAX_CONCURRENCY
from agent_eval.store import CaseRecord, agent_run_of, get_engine, get_run, load_case_records, stored_eval_sets

__all__ = ["RerunRequest", "RescoreRequest", "StoredRunAgent", "plan_rerun", "plan_rescore"]


class RerunRequest(BaseModel):
    """Parameters of the `agent-eval-rerun` flow: evaluate a stored run's cases again."""

    model_config = ConfigDict(extra="forbid")

    run_id: str = Field(description="The stored run whose cases are evaluated again.")
    only_failed: bool = Field(
        default=False,
        description="Only the cases without a passing result in that run: failed, not evaluated, or never run.",
    )
    refresh: bool = Field(default=False, description="Invoke the agent even where a cached invocation exists.")
    max_concurrency: int = Field(default=DEFAULT_MAX_CONCURRENCY, ge=1, le=256)
    db_url: UrlParameter = Field(default=None, description="Store URL. Default: $AGENT_EVAL_DB_URL or SQLite.")
    budget_usd: float | None = Field(
        default=None, gt=0, description="The rerun's budget in US dollars (default: the stored config's `budget`)."
    )
    max_tokens: int | None = Field(
        default=None, gt=0, description="The rerun's budget in tokens (default: the stored config's `budget`)."
    )


class RescoreRequest(BaseModel):
    """Parameters of the `agent-eval-rescore` flow: score a stored run's invocations with another config."""

    model_config = ConfigDict(extra="forbid")

    run_id: str = Field(description="The stored run whose recorded invocations are scored again.")
    config: ConfigParameter = Field(
        default=None, description="An ADK test_config.json path, or the config itself. Default: the run's own."
    )
    db_url: UrlParameter = Field(default=None, description="Store URL. Default: $AGENT_EVAL_DB_URL or SQLite.")


RunKey = tuple[str, str, int]


class StoredRunAgent:
    """Answers each case run with what a stored run recorded for it; no agent is called, so its answers carry no
    tokens (the stored run keeps what they cost).

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
        return recorded.model_copy(update={"token_usage": None})  # no model was called: a re-score spends none


def plan_rerun(request: RerunRequest) -> EvalPlan:
    """The stored run's eval set versions (only its failed cases when asked), agent and config, checked.

    Raises:
        EvalInputError: no such run, nothing failed when only failed cases are asked for, or the agent
            or config no longer resolve.
    """
    engine = get_engine(request.db_url)
    run = get_run(request.run_id, engine)
    eval_sets = stored_eval_sets(request.run_id, engine)
    if any(is_outline(eval_set) for eval_set in eval_sets):
        raise EvalInputError(
            f"run {request.run_id!r} scored recorded traffic in parts: its stored eval set says where each session "
            f"was recorded, its turns are in its case runs; `agent-eval rescore {request.run_id}` scores them again",
            field="run_id",
        )
    records = load_case_records(request.run_id, engine)
    if request.only_failed:
        eval_sets = _only(eval_sets, _not_passed(eval_sets, records, run.num_runs))
    eval_request = _request(request.run_id, run.agent_reference, run.config, run.num_runs, request.db_url)
    update = {
        "refresh_cache": request.refresh,
        "max_concurrency": request.max_concurrency,
        "tags": ["rerun"],
        "reuse_from_runs": _answer_sources(request.run_id, records),
        "budget_usd": request.budget_usd,
        "max_tokens": request.max_tokens,
    }
    eval_request = eval_request.model_copy(update=update)
    if not eval_sets:
        raise EvalInputError(
            f"run {request.run_id!r} has no failed, unscored or unfinished case to run again", field="run_id"
        )
    groups = config_groups(_stored_configs(run.config, eval_sets), request.db_url)
    agent = ready_agent(
        resolve_agent(run.agent_reference), eval_request, eval_sets, simulator_config(groups, eval_sets)
    )
    return _plan(eval_request, eval_sets, groups, agent)


def plan_rescore(request: RescoreRequest) -> EvalPlan:
    """The stored run's eval sets and recorded invocations, scored with `request.config` (default: the run's).

    Raises:
        EvalInputError: no such run, or a bad config.
    """
    engine = get_engine(request.db_url)
    run = get_run(request.run_id, engine)
    eval_sets = stored_eval_sets(request.run_id, engine)
    configs = _rescore_configs(request.config, run.config, eval_sets)
    records = load_case_records(request.run_id, engine)
    runs = {(r.eval_set_id, r.eval_id, r.run_index): agent_run_of(r) for r in records}
    agent = StoredRunAgent(run.agent_reference, run.agent_fingerprint, runs)
    config_json = run.config if request.config is None else _config_json(configs)
    eval_request = _request(request.run_id, run.agent_reference, config_json, run.num_runs, request.db_url)
    eval_request = eval_request.model_copy(update={"tags": ["rescore"]})
    return _plan(eval_request, eval_sets, config_groups(configs, request.db_url), agent)


def _plan(request: EvalRequest, eval_sets: list[EvalSet], groups: tuple[ConfigGroup, ...], agent: Any) -> EvalPlan:
    first = groups[0]
    return EvalPlan(
        request=request,
        eval_sets=eval_sets,
        config=first.config,
        metrics=first.metrics,
        agent=agent,
        groups=groups,
    )


def _stored_configs(stored: dict[str, Any], eval_sets: list[EvalSet]) -> dict[str, tuple[EvalConfig, str | None]]:
    """Per eval set, the config that scored it in the stored run (`runs.config` of any release) and its file."""
    files = stored.get(CONFIG_FILES) or {}
    ids = [s.eval_set_id for s in eval_sets]
    return {
        eval_set_id: (
            config_from_data(config, f"config of eval set {eval_set_id!r} in the stored run"),
            files.get(eval_set_id),
        )
        for eval_set_id, config in configs_by_eval_set(stored, ids).items()
    }


def _rescore_configs(
    given: str | dict[str, Any] | None, stored: dict[str, Any], eval_sets: list[EvalSet]
) -> dict[str, tuple[EvalConfig, str | None]]:
    """The run's own config per eval set, or the one given for all of them."""
    if given is None:
        return _stored_configs(stored, eval_sets)
    config = config_from_data(given, "<config>") if isinstance(given, dict) else load_eval_config(given)
    file = given if isinstance(given, str) else None
    return {s.eval_set_id: (config, file) for s in eval_sets}


def _config_json(configs: dict[str, tuple[EvalConfig, str | None]]) -> dict[str, Any]:
    one = next(iter(configs.values()))[0]
    return one.model_dump(mode="json", exclude_none=True)


def _request(run_id: str, agent: str, config: dict[str, Any], num_runs: int, db_url: str | None) -> EvalRequest:
    return EvalRequest(paths=[f"run:{run_id}"], agent=agent, config=config, num_runs=num_runs, db_url=db_url)


def _not_passed(eval_sets: list[EvalSet], records: list[CaseRecord], num_runs: int) -> set[tuple[str, str]]:
    """The cases of a stored run without a passing result for every run index: failed, not evaluated, or
    never run at all (a run killed before it got to them)."""
    passed: dict[tuple[str, str], set[int]] = {}
    for record in records:
        if record.status == int(EvalStatus.PASSED) and not record.failure:
            passed.setdefault((record.eval_set_id, record.eval_id), set()).add(record.run_index)
    every_index = set(range(num_runs))
    return {
        (s.eval_set_id, c.eval_id)
        for s in eval_sets
        for c in s.eval_cases
        if passed.get((s.eval_set_id, c.eval_id), set()) != every_index
    }


def _answer_sources(run_id: str, records: list[CaseRecord]) -> list[str]:
    """The runs whose cached answers a rerun may use: the run itself and those it reused answers from."""
    return [run_id, *sorted({r.cached_from_run_id for r in records if r.cached_from_run_id} - {run_id})]


def _only(eval_sets: list[EvalSet], wanted: set[tuple[str, str]]) -> list[EvalSet]:
    kept = [
        s.model_copy(update={"eval_cases": [c for c in s.eval_cases if (s.eval_set_id, c.eval_id) in wanted]})
        for s in eval_sets
    ]
    return [s for s in kept if s.eval_cases]
