"""The checked plan built from what an evaluation is asked to do (`EvalRequest`, in `agent_eval.plan.request`).

Internal: the public API is `agent_eval`'s; this module's names may change between releases.

Everything that can be wrong with the input is found here, before any agent is invoked or anything is
written: eval files, the config, metric names and thresholds, custom metric imports, the agent reference.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, NamedTuple

from agent_eval.agents import (
    REPLAY_REFERENCE,
    Agent,
    TurnAgent,
    find_default_agent,
    preflight_agent,
    resolve_agent,
)
from agent_eval.agents.genai_agent import missing_credentials
from agent_eval.agents.simulator import LlmUserSimulator, simulator_from_config
from agent_eval.errors import EvalInputError
from agent_eval.io import config_from_data, load_eval_config, load_eval_sets, load_eval_sets_with_configs
from agent_eval.io.recorded import load_recorded
from agent_eval.io.recorded.parts import RecordedParts, reference_cases, with_references
from agent_eval.judges.profiles import uses_profiles, with_profiles
from agent_eval.metrics import REGISTRY, MetricSpec
from agent_eval.metrics.common import criterion_options
from agent_eval.metrics.judged import check_judge_credentials
from agent_eval.metrics.judged.adk import JudgedOptions
from agent_eval.metrics.judged.identity import judge_identity
from agent_eval.plan.request import SHARD_DEPLOYMENT, EvalRequest
from agent_eval.results.run_configs import stored_config, stored_config_hash
from agent_eval.schema import AgentRun, EvalCase, EvalConfig, EvalMetric, EvalSet, JudgeConfig

__all__ = [
    "RECORDED_PART_TURNS",
    "SHARD_DEPLOYMENT",
    "CaseRunKey",
    "ConfigGroup",
    "EvalPlan",
    "EvalRequest",
    "HandOver",
    "LimitOrigin",
    "ScoringBatch",
    "check_judges",
    "config_groups",
    "handed_over",
    "prepare",
    "prepared",
    "ready_agent",
    "simulator_config",
    "with_references",
]


@dataclass(frozen=True)
class CaseRunKey:
    """One unit of agent work: a case of an eval set, at one run index."""

    eval_set_id: str
    case: EvalCase
    run_index: int


@dataclass(frozen=True)
class ConfigGroup:
    """One config, the eval sets it scores (each with the file it came from: None for an inline config or
    ADK's defaults) and its resolved metrics."""

    config: EvalConfig
    files: dict[str, str | None]
    metrics: list[tuple[EvalMetric, MetricSpec]]

    @property
    def eval_set_ids(self) -> list[str]:
        """The eval sets this config scores, in the plan's order."""
        return list(self.files)


class LimitOrigin(NamedTuple):
    """Where a global limit was named: a config file (None: the request or an inline config) and the field."""

    file: str | None
    field: str


ScoringBatch = tuple[EvalMetric, MetricSpec, list[tuple[EvalCase, AgentRun]], JudgeConfig | None]
"""One `score-criterion` task's work: a criterion, its metric, the case runs of its config's eval sets, and that
config's `judge` section (judge retry settings)."""


@dataclass(frozen=True)
class EvalPlan:
    """A checked evaluation: everything loaded and resolved, nothing run yet.

    Each eval set is scored with its own config (`groups`: one per distinct config, most runs have one).
    `config` and `metrics` are the first eval set's; the run's regression settings come from that config.
    """

    request: EvalRequest
    eval_sets: list[EvalSet]
    config: EvalConfig
    metrics: list[tuple[EvalMetric, MetricSpec]]
    agent: Agent
    groups: tuple[ConfigGroup, ...]
    notes: tuple[str, ...] = ()
    """Lines the user must read about the input (recorded traces skipped, content not captured)."""
    recorded: RecordedParts | None = None
    """A recorded input read a part at a time (`parts`); `eval_sets` then holds its outline, not its turns."""
    agent_checked: bool = False
    """The agent's preflight check has passed for this run (`checked_agent`): the flow does not repeat it."""

    def parts(self) -> Iterator[EvalPlan]:
        """The plan a part at a time, each part invoked, scored and stored before the next is read: a recorded
        input of more than `RECORDED_PART_TURNS` turns in parts of at most that many; any other plan in one part,
        itself."""
        if self.recorded is None:
            yield self
            return
        for eval_set in self.recorded.eval_sets():
            yield replace(self, eval_sets=[eval_set], recorded=None)

    def config_groups(self) -> tuple[ConfigGroup, ...]:
        """Each distinct config with the eval sets it scores (one group when there is one config)."""
        return self.groups

    def limit_names(self, kind: Literal["invocations", "judge_calls"]) -> dict[str, LimitOrigin]:
        """The global limits every agent invocation (`invocations`: the request's `concurrency_limits` first) or
        every judge call (`judge_calls`) of the run holds, each once, in order, with where it was named: those
        of the request and of any of the run's configs (`limits`). A run is paced as one: a limit that one
        config names holds for all the run's eval sets."""
        names: dict[str, LimitOrigin] = {}
        if kind == "invocations":
            names.update((name, LimitOrigin(None, "concurrency_limits")) for name in self.request.concurrency_limits)
        for group in self.config_groups():
            file = next(iter(group.files.values()), None)
            for name in getattr(group.config.limits, kind, None) or ():
                names.setdefault(name, LimitOrigin(file, f"limits.{kind}"))
        return names

    def stored_config(self) -> dict[str, Any]:
        """`runs.config`: the config, or each eval set's when they differ (`agent_eval.results.run_configs`)."""
        configs = {i: group.config for group in self.config_groups() for i in group.eval_set_ids}
        files = {i: file for group in self.config_groups() for i, file in group.files.items()}
        return stored_config(_in_order(configs, self.eval_sets), files)

    def config_hash(self) -> str:
        """`runs.config_hash`: the config's fingerprint, or a hash of each eval set's when they differ."""
        configs = {i: group.config for group in self.config_groups() for i in group.eval_set_ids}
        return stored_config_hash(_in_order(configs, self.eval_sets))

    def judges(self) -> dict[str, dict[str, dict[str, Any]]]:
        """`runs.judges`: per eval set id, per judged criterion, the identity of the judge that scores it here
        (`agent_eval.metrics.judged.identity`); eval sets with no judged criterion are left out."""
        judges: dict[str, dict[str, dict[str, Any]]] = {}
        for group in self.config_groups():
            identities = {m.metric_name: judge_identity(m, spec) for m, spec in group.metrics}
            found = {name: i.stored() for name, i in identities.items() if i is not None}
            judges.update((eval_set_id, found) for eval_set_id in group.eval_set_ids if found)
        return judges

    def judge_floors(self) -> dict[str, dict[str, float]]:
        """Per eval set id, per judged criterion gated on calibration, the config's `judge.min_agreement` floor
        (`agent_eval.judges.gate`); empty when no config sets one."""
        judges = self.judges()
        floors: dict[str, dict[str, float]] = {}
        for group in self.config_groups():
            settings = group.config.judge
            for eval_set_id in group.eval_set_ids:
                gated = (
                    {name: settings.agreement_floor(name) for name in judges.get(eval_set_id, {})} if settings else {}
                )
                found = {name: floor for name, floor in gated.items() if floor is not None}
                if found:
                    floors[eval_set_id] = found
        return floors

    def scoring_batches(self, runs: list[tuple[EvalCase, AgentRun]]) -> list[ScoringBatch]:
        """One batch per (config, criterion): the criterion over the case runs of that config's eval sets."""
        batches: list[ScoringBatch] = []
        for group in self.config_groups():
            scored = set(group.eval_set_ids)
            group_runs = [(case, run) for case, run in runs if run.eval_set_id in scored]
            if group_runs:
                judge = group.config.judge
                batches.extend((eval_metric, spec, group_runs, judge) for eval_metric, spec in group.metrics)
        return batches

    async def checked_agent(self) -> EvalPlan:
        """This plan once its agent's preflight check (`preflight_agent`) has passed: run once per run, by the
        first of the API (before Prefect starts) and the flow (a deployment's run) to get the plan.

        Raises:
            EvalInputError: the agent's check found a user mistake (a wrong app name, missing credentials).
            InfrastructureError: the agent's server cannot be reached.
        """
        if not self.agent_checked:
            await preflight_agent(self.agent)
        return replace(self, agent_checked=True)

    def without_outline(self) -> EvalPlan:
        """This plan without the outline of a recorded input read in parts (`recorded`), once the run has stored
        it: nothing after reads it, and it holds ~3 KB per session for the whole run. Other plans: themselves."""
        return self if self.recorded is None else replace(self, eval_sets=[])

    def case_runs(self) -> list[CaseRunKey]:
        """Every (eval set, case, run index) to invoke, eval sets and cases in file order."""
        return [
            CaseRunKey(eval_set.eval_set_id, case, run_index)
            for run_index in range(self.request.num_runs)
            for eval_set in self.eval_sets
            for case in eval_set.eval_cases
        ]

    def shard(self, index: int, count: int) -> list[CaseRunKey]:
        """The case runs of shard `index` (0-based) of `count`: every `count`-th case run from `index`, so shards
        differ in size by at most one and each holds cases of every eval set."""
        return self.case_runs()[index::count]


def prepare(request: EvalRequest) -> EvalPlan:
    """Load and check everything the request names.

    Raises:
        EvalInputError: anything wrong with the input, in one line naming the file, case and field.
    """
    loaded, notes, recorded = _load(request)
    eval_sets = [eval_set for eval_set, _ in loaded]
    groups = config_groups(_configs(request, loaded), request.db_url)
    agent = resolve_agent(_agent_reference(request, eval_sets))
    agent = ready_agent(agent, request, eval_sets, simulator_config(groups, eval_sets))
    first = groups[0]
    return EvalPlan(
        request=request,
        eval_sets=eval_sets,
        config=first.config,
        metrics=first.metrics,
        agent=agent,
        groups=groups,
        notes=notes,
        recorded=recorded,
    )


RECORDED_PART_TURNS = 500
"""The most turns (as read) in one part of a recorded input read a part at a time (`EvalPlan.parts`); a longer
session is a part of its own. A part holds some 35 MB at once; on 25,000 spans (benchmarks/bench_traces.py'
input, one run each) parts of 500 turns took 36 s, of 200, 1,000 and 2,000 turns 39, 41 and 49 s."""

_HANDED_OVER: dict[int, tuple[object, EvalPlan]] = {}


class HandOver:
    """`plan`, handed over to the flow that runs `plan.request` in this process: from its creation to the end of
    the `with` block, `prepared(plan.request)` returns `plan` (once) instead of loading the inputs again.

    The API loads and checks the inputs before it starts Prefect (bad input: one line, no flow run); the flow
    then takes that plan over, so the inputs are read once and held once. This object keeps no reference to
    `plan`: once the caller drops its own, the flow alone holds the eval sets, and frees them with itself."""

    def __init__(self, plan: EvalPlan, request: object | None = None) -> None:
        flow_request = plan.request if request is None else request
        self._key = id(flow_request)
        _HANDED_OVER[self._key] = (flow_request, plan)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *_: object) -> None:
        _HANDED_OVER.pop(self._key, None)


def prepared(request: EvalRequest) -> EvalPlan:
    """The plan handed over for this very request object (`HandOver`), else `prepare(request)`: a flow run
    started by Prefect (a deployment, a retry, a shard) loads its inputs itself."""
    return handed_over(request) or prepare(request)


def handed_over(request: object) -> EvalPlan | None:
    """The plan handed over (`HandOver`) for this very request object (of any flow: run, rerun, rescore), once;
    None when there is none."""
    held = _HANDED_OVER.pop(id(request), None)
    return held[1] if held is not None and held[0] is request else None


def _load(request: EvalRequest) -> tuple[list[tuple[EvalSet, Path | None]], tuple[str, ...], RecordedParts | None]:
    """The eval sets with their config files, notes on the input, and the parts of a recorded input too large to
    hold at once. Recorded traffic is one eval set with no config file; the eval files then give references to
    its sessions by case id (`agent_eval.io.recorded.parts`). It is read in parts of `RECORDED_PART_TURNS` turns
    when it has more, unless the run is sharded (each shard reads the input itself); the plan's eval
    set is then the sessions' outline (`RecordedParts.outline`)."""
    if request.recorded is None:
        return load_eval_sets_with_configs(request.paths, format=request.format), (), None
    recorded = load_recorded(request.recorded)
    references = reference_cases(load_eval_sets(request.paths) if request.paths else [])
    parts = RecordedParts(recorded, references, RECORDED_PART_TURNS)
    notes = recorded.notes()
    if parts.unmatched:
        notes.append(f"{parts.unmatched} reference case(s) have no recorded session of the same id")
    if recorded.turns > RECORDED_PART_TURNS and request.shards == 1:
        return [(parts.outline(), None)], tuple(notes), parts
    with contextlib.closing(recorded):
        return [(parts.whole(), None)], tuple(notes), None


def config_groups(
    configs: Mapping[str, tuple[EvalConfig, str | None]], db_url: str | None = None
) -> tuple[ConfigGroup, ...]:
    """Group eval sets by config (equal content: one group), resolve and check each group's metrics; a judge
    profile a criterion names is read from the store `db_url` first (`agent_eval.judges.profiles`).

    Args:
        configs: per eval set id in the plan's order, its config and the file it came from.
        db_url: the run's store (where judge profiles are).

    Raises:
        EvalInputError: a bad criterion or metric option (naming the config file), a judge profile that is not
            in the store, or a judge without credentials.
    """
    grouped: dict[str, tuple[EvalConfig, dict[str, str | None]]] = {}
    for eval_set_id, (written, file) in configs.items():
        config = with_profiles(written, db_url, file) if uses_profiles(written) else written
        grouped.setdefault(config.fingerprint(), (config, {}))[1][eval_set_id] = file
    groups = []
    for config, files in grouped.values():
        metrics = REGISTRY.resolve(config, config_file=next((f for f in files.values() if f), None))
        check_judges(metrics)
        groups.append(ConfigGroup(config, files, metrics))
    return tuple(groups)


def simulator_config(groups: Sequence[ConfigGroup], eval_sets: list[EvalSet]) -> EvalConfig:
    """The config whose `user_simulator_config` the run's agent uses: that of the eval sets with a
    `conversation_scenario` (one agent plays every case), else the first eval set's.

    Raises:
        EvalInputError: eval sets with scenarios ask for different user simulators.
    """
    with_scenario = {s.eval_set_id for s in eval_sets if any(c.conversation_scenario for c in s.eval_cases)}
    wanted = [group for group in groups if with_scenario & set(group.eval_set_ids)]
    for group in wanted[1:]:
        if group.config.user_simulator_config != wanted[0].config.user_simulator_config:
            first, other = wanted[0].eval_set_ids[0], group.eval_set_ids[0]
            raise EvalInputError(
                f"eval sets {first!r} and {other!r} have conversation scenarios and configs with different "
                "user_simulator_config; one run plays them with one simulator: give them the same one, pass "
                "--config, or run them apart",
                field="user_simulator_config",
            )
    return (wanted or list(groups))[0].config


def ready_agent(agent: Agent, request: EvalRequest, eval_sets: list[EvalSet], config: EvalConfig) -> Agent:
    """The agent as this evaluation runs it: turn timeout and user simulator set (on a copy). The agent's own
    checks (credentials, a server that answers) are its `preflight` (`EvalPlan.checked_agent`).

    Raises:
        EvalInputError: the simulator lacks credentials, or a bad `user_simulator_config`.
    """
    return _with_simulator(_with_turn_timeout(agent, request.turn_timeout_seconds), eval_sets, config)


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


def _configs(
    request: EvalRequest, loaded: list[tuple[EvalSet, Path | None]]
) -> dict[str, tuple[EvalConfig, str | None]]:
    """Per eval set, its config and the file it came from: `request.config` for all when given (a file, or
    inline: no file), else the `test_config.json` beside each eval file (ADK's default criteria without one)."""
    if request.recorded is not None and not request.config:
        return {eval_set.eval_set_id: (recorded_default_config(bool(request.paths)), None) for eval_set, _ in loaded}
    if isinstance(request.config, dict):
        inline = config_from_data(request.config, "<config>")
        return {eval_set.eval_set_id: (inline, None) for eval_set, _ in loaded}
    if request.config:
        given = load_eval_config(request.config)
        return {eval_set.eval_set_id: (given, request.config) for eval_set, _ in loaded}
    read: dict[Path | None, EvalConfig] = {}
    for _, found in loaded:
        if found not in read:
            read[found] = load_eval_config(found)
    return {eval_set.eval_set_id: (read[found], str(found) if found else None) for eval_set, found in loaded}


def recorded_default_config(with_references: bool) -> EvalConfig:
    """Recorded traffic without a config: ADK's efficiency metrics (tool calls, model calls, tokens, seconds per
    turn: they need neither a reference nor message content), and ADK's default criteria when references are
    given."""
    criteria: dict[str, Any] = {name: {} for name in RECORDED_DEFAULT_METRICS}
    if with_references:
        criteria = {**EvalConfig().model_dump(mode="json")["criteria"], **criteria}
    return EvalConfig.model_validate({"criteria": criteria})


RECORDED_DEFAULT_METRICS = ("tool_call_count_v1", "inference_call_count_v1", "token_usage_v1", "invocation_duration_v1")


def _in_order(configs: dict[str, EvalConfig], eval_sets: list[EvalSet]) -> dict[str, EvalConfig]:
    return {s.eval_set_id: configs[s.eval_set_id] for s in eval_sets if s.eval_set_id in configs}


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
