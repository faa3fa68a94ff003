"""What an evaluation is asked to do (`EvalRequest`, the flow's parameters) and the checked plan built from it.

Everything that can be wrong with the input is found here, before any agent is invoked or anything is
written: eval files, the config, metric names and thresholds, custom metric imports, the agent reference.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agent_eval.agents import REPLAY_REFERENCE, Agent, TurnAgent, find_default_agent, resolve_agent
from agent_eval.agents.genai_agent import GenaiAgent, missing_credentials
from agent_eval.agents.simulator import LlmUserSimulator, simulator_from_config
from agent_eval.errors import EvalInputError
from agent_eval.io import InputFormat, config_from_data, find_config_file, load_eval_config, load_eval_sets
from agent_eval.judge import check_judge_credentials
from agent_eval.metrics import REGISTRY, MetricSpec
from agent_eval.metrics.common import criterion_options
from agent_eval.metrics.judged import JudgedOptions
from agent_eval.schema import EvalCase, EvalConfig, EvalMetric, EvalSet

__all__ = ["CaseRunKey", "EvalPlan", "EvalRequest", "check_judges", "prepare", "ready_agent"]

DEFAULT_MAX_CONCURRENCY = 8
DEFAULT_TURN_TIMEOUT_SECONDS = 300.0


class EvalRequest(BaseModel):
    """The parameters of one evaluation (the `agent-eval` flow's parameters, shown as a form in the UI)."""

    model_config = ConfigDict(extra="forbid")

    paths: list[str] = Field(description="Eval files or folders; `FILE:case1,case2` selects cases.", min_length=1)
    format: InputFormat = Field(
        default="auto", description="Input format: auto (detect from content), adk (EvalSet / legacy), vertex."
    )
    agent: str | None = Field(
        default=None,
        description="Agent reference: 'package.module:attr', 'file.py:attr', an agent folder, or 'replay'. "
        "Default: 'replay' when every case holds its predictions, else the agent.py beside the eval files.",
    )
    config: str | dict[str, Any] | None = Field(
        default=None,
        description="An ADK test_config.json path, or the config itself. Default: test_config.json beside the files.",
    )
    num_runs: int = Field(default=1, ge=1, le=100, description="How many times each case is run.")
    max_concurrency: int = Field(
        default=DEFAULT_MAX_CONCURRENCY, ge=1, le=256, description="Agent invocations running at once."
    )
    db_url: str | None = Field(default=None, description="Store URL. Default: $AGENT_EVAL_DB_URL or SQLite.")
    refresh_cache: bool = Field(default=False, description="Invoke the agent even where a cached run exists.")
    tags: list[str] = Field(default_factory=list, description="Labels stored with the run (e.g. a release).")
    baseline_run_id: str | None = Field(
        default=None, description="Compare with this run; default: the latest comparable completed run."
    )
    turn_timeout_seconds: float | None = Field(
        default=DEFAULT_TURN_TIMEOUT_SECONDS,
        gt=0,
        description="Seconds one agent turn may take before it is interrupted and retried (None: no limit).",
    )


@dataclass(frozen=True)
class CaseRunKey:
    """One unit of agent work: a case of an eval set, at one run index."""

    eval_set_id: str
    case: EvalCase
    run_index: int


@dataclass(frozen=True)
class EvalPlan:
    """A checked evaluation: everything loaded and resolved, nothing run yet."""

    request: EvalRequest
    eval_sets: list[EvalSet]
    config: EvalConfig
    config_file: str | None
    metrics: list[tuple[EvalMetric, MetricSpec]]
    agent: Agent

    def case_runs(self) -> list[CaseRunKey]:
        """Every (eval set, case, run index) to invoke, eval sets and cases in file order."""
        return [
            CaseRunKey(eval_set.eval_set_id, case, run_index)
            for run_index in range(self.request.num_runs)
            for eval_set in self.eval_sets
            for case in eval_set.eval_cases
        ]


def prepare(request: EvalRequest) -> EvalPlan:
    """Load and check everything the request names.

    Raises:
        EvalInputError: anything wrong with the input, in one line naming the file, case and field.
    """
    eval_sets = load_eval_sets(request.paths, format=request.format)
    config, config_file = _config(request)
    metrics = REGISTRY.resolve(config, config_file=config_file)
    check_judges(metrics)
    agent = ready_agent(resolve_agent(_agent_reference(request, eval_sets)), request, eval_sets, config)
    return EvalPlan(
        request=request,
        eval_sets=eval_sets,
        config=config,
        config_file=config_file,
        metrics=metrics,
        agent=agent,
    )


def ready_agent(agent: Agent, request: EvalRequest, eval_sets: list[EvalSet], config: EvalConfig) -> Agent:
    """The agent as this evaluation runs it: turn timeout and user simulator set (on a copy), credentials
    checked.

    Raises:
        EvalInputError: the agent or its simulator lacks credentials, or a bad `user_simulator_config`.
    """
    agent = _with_simulator(_with_turn_timeout(agent, request.turn_timeout_seconds), eval_sets, config)
    if isinstance(agent, GenaiAgent):
        agent.check_credentials()
    return agent


def check_judges(metrics: list[tuple[EvalMetric, MetricSpec]]) -> None:
    """Judged metrics (options `JudgedOptions`) need judge credentials: checked now, so a missing key fails in
    one line before any agent runs.

    Raises:
        EvalInputError: the judge model's backend has no credentials; the message names the variables to set.
    """
    for eval_metric, spec in metrics:
        model = spec.options
        if isinstance(model, type) and issubclass(model, JudgedOptions):
            judge = criterion_options(eval_metric, model).judge_model_options
            try:
                check_judge_credentials(judge.judge_model)
            except EvalInputError as error:
                raise EvalInputError(error.message, field=f"criteria.{spec.name}") from None


def _with_turn_timeout(agent: Agent, seconds: float | None) -> Agent:
    """A copy of a `TurnAgent` whose turns time out after `seconds` (unless the agent sets its own limit)."""
    if not isinstance(agent, TurnAgent) or agent.turn_timeout is not None:
        return agent
    timed = copy.copy(agent)  # the user's agent object is left as it was
    timed.turn_timeout = seconds
    return timed


def _with_simulator(agent: Agent, eval_sets: list[EvalSet], config: EvalConfig) -> Agent:
    """A copy of a `TurnAgent` with the user simulator `user_simulator_config` describes, when some case has
    a `conversation_scenario`.

    Without a config the agent's own simulator is kept; else ADK's default (an LLM-backed simulator) is used
    when Gemini credentials are set, and otherwise none: the scenario cases alone are then recorded failures
    that say what to set, and the other cases still run.

    Raises:
        EvalInputError: a bad `user_simulator_config`, or a configured LLM simulator without credentials.
    """
    has_scenario = any(case.conversation_scenario is not None for s in eval_sets for case in s.eval_cases)
    if not has_scenario or not isinstance(agent, TurnAgent):
        return agent
    if config.user_simulator_config is None and (agent.simulator is not None or missing_credentials()):
        return agent
    simulator, max_turns = simulator_from_config(config.user_simulator_config)
    if isinstance(simulator, LlmUserSimulator):
        simulator.check_credentials()
    wired = copy.copy(agent)  # the user's agent object is left as it was
    wired.simulator = simulator
    wired.max_simulated_turns = max_turns
    return wired


def _config(request: EvalRequest) -> tuple[EvalConfig, str | None]:
    """The config and the file it came from (`None` for an inline config or ADK's defaults)."""
    if isinstance(request.config, dict):
        return config_from_data(request.config, "<config>"), None
    found = request.config or find_config_file(request.paths)
    file = str(found) if found is not None else None
    return load_eval_config(file), file


def _agent_reference(request: EvalRequest, eval_sets: list[EvalSet]) -> str:
    """The given agent; else `replay` when every case holds its predictions; else the agent.py beside the files.

    Raises:
        EvalInputError: no agent can be found and some case has nothing to replay.
    """
    if request.agent:
        return request.agent
    unreplayable = [
        (s.eval_set_id, c.eval_id) for s in eval_sets for c in s.eval_cases if c.actual_conversation is None
    ]
    if not unreplayable:
        return REPLAY_REFERENCE
    found = find_default_agent(request.paths)
    if found is None:
        eval_set_id, eval_id = unreplayable[0]
        raise EvalInputError(
            f"no agent given, no agent.py beside the eval files, and {len(unreplayable)} case(s) have no "
            f"response or predicted_trajectory to score (first: {eval_set_id}/{eval_id}); pass --agent",
            field="agent",
        )
    return found
