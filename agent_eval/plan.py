"""What an evaluation is asked to do (`EvalRequest`, the flow's parameters) and the checked plan built from it.

Everything that can be wrong with the input is found here, before any agent is invoked or anything is
written: eval files, the config, metric names and thresholds, custom metric imports, the agent reference.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from agent_eval.agents import Agent, find_default_agent, resolve_agent
from agent_eval.errors import EvalInputError
from agent_eval.io import find_config_file, load_eval_config, load_eval_sets
from agent_eval.metrics import REGISTRY, MetricSpec
from agent_eval.schema import EvalCase, EvalConfig, EvalMetric, EvalSet

__all__ = ["CaseRunKey", "EvalPlan", "EvalRequest", "prepare"]

DEFAULT_MAX_CONCURRENCY = 8


class EvalRequest(BaseModel):
    """The parameters of one evaluation (the `agent-eval` flow's parameters, shown as a form in the UI)."""

    model_config = ConfigDict(extra="forbid")

    paths: list[str] = Field(description="Eval files or folders; `FILE:case1,case2` selects cases.", min_length=1)
    agent: str | None = Field(
        default=None,
        description="Agent reference: 'package.module:attr', 'file.py:attr' or an agent folder. "
        "Default: the agent.py beside the eval files.",
    )
    config: str | None = Field(
        default=None,
        description="Path of an ADK test_config.json. Default: test_config.json beside the files.",
    )
    num_runs: int = Field(default=1, ge=1, le=100, description="How many times each case is run.")
    max_concurrency: int = Field(
        default=DEFAULT_MAX_CONCURRENCY, ge=1, le=256, description="Agent invocations running at once."
    )
    db_url: str | None = Field(default=None, description="Store URL. Default: $AGENT_EVAL_DB_URL or SQLite.")
    refresh_cache: bool = Field(default=False, description="Invoke the agent even where a cached run exists.")


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
    eval_sets = load_eval_sets(request.paths)
    config_file = request.config or _default_config(request.paths)
    config = load_eval_config(config_file)
    metrics = REGISTRY.resolve(config, config_file=config_file)
    agent_reference = request.agent or find_default_agent(request.paths)
    if agent_reference is None:
        raise EvalInputError("no agent given and no agent.py beside the eval files; pass --agent", field="agent")
    return EvalPlan(
        request=request,
        eval_sets=eval_sets,
        config=config,
        config_file=config_file,
        metrics=metrics,
        agent=resolve_agent(agent_reference),
    )


def _default_config(paths: list[str]) -> str | None:
    found = find_config_file(paths)
    return str(found) if found is not None else None
