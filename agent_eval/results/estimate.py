"""What a run will cost before it runs: tokens and dollars projected from an earlier run of the same eval sets.

Internal: the public API is `agent_eval.estimate`; this module's names may change between releases.

The rules (`estimate_cost`):
- The agent: each planned case run costs what its case cost in the earlier run: the mean of that case's runs
  there (point), its cheapest and its dearest run (range). A case the earlier run did not have costs the mean of
  the earlier cases' means, its range the cheapest and the dearest of those means. Cheap and dear are by total
  tokens (input + output + thinking). A case run that failed, reported no tokens, or came from the cache is not
  an example: it says nothing of what a call costs.
- The judges, per judged criterion: an earlier case run's judge tokens for the criterion, divided by the samples
  the earlier judge drew, are one sample's; the plan's case run costs that times the samples its judge draws now,
  on the judge model it names now (a changed model keeps the token counts and takes the new model's price).
  Cases and ranges as for the agent. Earlier judge answers reused from the cache cost nothing and are not
  examples; the projection assumes no answer is reused this time (it is an upper bound where some will be).
- What cannot be known is said, never guessed: no earlier run, a criterion the earlier run did not judge, a
  model with no price (cost unknown, tokens still projected).
- Dollars come from `agent_eval.results.pricing` (the config's `pricing`, else genai-prices' table).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from agent_eval.results.model import CaseResult, RunReport
from agent_eval.results.pricing import JUDGE_TOKENS, price_table, run_cost
from agent_eval.schema import ModelPrice, ModelUsage

__all__ = ["CostEstimate", "PlannedCaseRun", "PlannedJudge", "SideEstimate", "estimate_cost"]

_COUNTS = ("input_tokens", "output_tokens", "cached_input_tokens", "thinking_tokens")
CaseKey = tuple[str, str]
"""(eval set id, case id)."""


@dataclass(frozen=True)
class PlannedJudge:
    """A judged criterion of the plan: its judge model and how many samples it draws per judged item."""

    model: str
    samples: int


@dataclass(frozen=True)
class PlannedCaseRun:
    """One case run of the plan, with the judged criteria its eval set's config scores it with."""

    eval_set_id: str
    eval_id: str
    judges: Mapping[str, PlannedJudge] = field(default_factory=dict)

    @property
    def key(self) -> CaseKey:
        return (self.eval_set_id, self.eval_id)


class SideEstimate(BaseModel):
    """The agent's (or the judges') projected tokens per model and dollars: the point and the range."""

    model_config = ConfigDict(frozen=True)

    tokens: dict[str, ModelUsage] = Field(description="Projected per model (the point).")
    tokens_low: int
    tokens_high: int
    usd: float | None = Field(description="None: a model has no price.")
    usd_low: float | None
    usd_high: float | None

    @property
    def total_tokens(self) -> int:
        """Input, output and thinking tokens of the point, over every model."""
        return sum(_total(usage) for usage in self.tokens.values())


class CostEstimate(BaseModel):
    """A run's projected cost (rules in the module docstring)."""

    model_config = ConfigDict(frozen=True)

    case_runs: int
    from_run_id: str | None = Field(description="The earlier run the projection comes from; None: none found.")
    agent: SideEstimate | None = Field(description="None: nothing to project from.")
    judges: SideEstimate | None = Field(description="None: no judged criterion, or nothing to project from.")
    judge_calls: int | None = Field(description="Projected judge calls (the point); None: unknown.")
    unpriced: list[str] = Field(default_factory=list)
    unprojected: list[str] = Field(
        default_factory=list, description="Judged criteria with nothing to project from: the total is then unknown."
    )
    notes: list[str] = Field(default_factory=list, description="What the estimate cannot know, and why.")
    table: str = Field(default_factory=price_table)

    @property
    def usd(self) -> float | None:
        """Agent and judges together (the point); None when the agent, or a judged criterion, could not be
        projected, or a model is unpriced."""
        return _both(self, "usd")

    @property
    def usd_low(self) -> float | None:
        return _both(self, "usd_low")

    @property
    def usd_high(self) -> float | None:
        return _both(self, "usd_high")


def estimate_cost(
    planned: Sequence[PlannedCaseRun],
    earlier: RunReport | None,
    pricing: Mapping[str, ModelPrice] | None = None,
) -> CostEstimate:
    """The projected tokens and dollars of the `planned` case runs, from the `earlier` run (rules in the module
    docstring); `earlier` None: nothing is projected and the notes say so."""
    if earlier is None:
        note = "no earlier completed run of this agent on these eval sets: tokens and cost cannot be projected"
        empty = {"agent": None, "judges": None, "judge_calls": None}
        return CostEstimate(case_runs=len(planned), from_run_id=None, notes=[note], **empty)
    agent_examples = _agent_examples(earlier.cases)
    agent = _project(planned, agent_examples, _agent_unit)
    criteria = sorted({name for run in planned for name in run.judges})
    judge_examples = _judge_examples(earlier, criteria)
    judges = _project(planned, judge_examples, _judge_units)
    notes = _notes(earlier, planned, agent_examples, criteria, judge_examples)
    sides = {"agent": agent, "judges": judges}
    priced = {name: _priced(side, pricing) for name, side in sides.items() if side is not None}
    unpriced = sorted({model for side in priced.values() for model in side[1]})
    return CostEstimate(
        case_runs=len(planned),
        from_run_id=earlier.run_id,
        agent=priced["agent"][0] if "agent" in priced else None,
        judges=priced["judges"][0] if "judges" in priced else None,
        judge_calls=None if judges is None else round(sum(u.calls for u in judges.point.values())),
        unpriced=unpriced,
        unprojected=[name for name in criteria if name not in judge_examples],
        notes=notes,
    )


# ------------------------------------------------------------------------------------------------ examples
Tokens = dict[str, ModelUsage]
"""Per model, the tokens of one example (a case run's agent, or one judge sample of a criterion on it)."""
Units = list[tuple[str, str | None, float]]
"""The parts of a planned case run to project: (examples' key, the model now or None: the examples' own,
multiplier)."""


def _agent_examples(cases: Iterable[CaseResult]) -> dict[str, dict[CaseKey, list[Tokens]]]:
    """The earlier case runs' agent tokens per case (their user simulator's included), under one key ("")."""
    found: dict[CaseKey, list[Tokens]] = {}
    for case in cases:
        usage = case.agent_run.token_usage
        if case.agent_run.failed or case.agent_run.cached_from is not None or usage is None or not usage.spent:
            continue
        found.setdefault((case.eval_set_id, case.eval_id), []).append(usage.spent)
    return {"": found} if found else {}


def _judge_examples(earlier: RunReport, criteria: Sequence[str]) -> dict[str, dict[CaseKey, list[Tokens]]]:
    """Per criterion, per case, one judge sample's tokens in each earlier case run that called the judge."""
    found: dict[str, dict[CaseKey, list[Tokens]]] = {}
    for case in earlier.cases:
        for metric in case.metrics:
            raw = metric.details.get(JUDGE_TOKENS)
            samples = _earlier_samples(earlier, case.eval_set_id, metric.metric_name)
            if metric.metric_name not in criteria or not raw or samples is None:
                continue
            usage = {model: ModelUsage.model_validate(value) for model, value in raw.items()}
            per_sample = {model: _scaled(value, 1 / samples) for model, value in usage.items()}
            found.setdefault(metric.metric_name, {}).setdefault((case.eval_set_id, case.eval_id), []).append(per_sample)
    return found


def _earlier_samples(earlier: RunReport, eval_set_id: str, criterion: str) -> int | None:
    identity = (earlier.judges or {}).get(eval_set_id, {}).get(criterion)
    samples = identity.get("samples") if identity else None
    return samples if isinstance(samples, int) and samples > 0 else None


def _agent_unit(run: PlannedCaseRun) -> Units:
    """The agent's answer: the examples under "", on their own models, once."""
    return [("", None, 1.0)]


def _judge_units(run: PlannedCaseRun) -> Units:
    """(criterion, its model now, samples now) for each judged criterion of the planned case run."""
    return [(name, judge.model, judge.samples) for name, judge in run.judges.items()]


# ------------------------------------------------------------------------------------------------ projection
@dataclass
class _Projection:
    point: Tokens
    low: Tokens
    high: Tokens


def _project(
    planned: Sequence[PlannedCaseRun],
    examples: Mapping[str, Mapping[CaseKey, list[Tokens]]],
    units_of: Callable[[PlannedCaseRun], Units],
) -> _Projection | None:
    """The sum over planned case runs of each unit's (key, model now, multiplier) projected tokens; None when no
    unit has an example."""
    projection = _Projection({}, {}, {})
    projected = False
    for run in planned:
        for key, model, times in units_of(run):
            by_case = examples.get(key)
            if not by_case:
                continue
            point, low, high = _case_projection(by_case, run.key)
            for target, tokens in ((projection.point, point), (projection.low, low), (projection.high, high)):
                _add(target, tokens, times, model)
            projected = True
    return projection if projected else None


def _case_projection(by_case: Mapping[CaseKey, list[Tokens]], key: CaseKey) -> tuple[Tokens, Tokens, Tokens]:
    """(mean, cheapest, dearest) of the case's examples; for a case without any, of the other cases' means."""
    examples = by_case.get(key) or [_mean(found) for found in by_case.values()]
    ranked = sorted(examples, key=_total_of)
    return _mean(examples), ranked[0], ranked[-1]


def _add(target: Tokens, tokens: Tokens, times: float, model: str | None) -> None:
    for name, usage in tokens.items():
        scaled = _scaled(usage, times)
        key = model or name
        target[key] = _plus(target[key], scaled) if key in target else scaled


def _mean(examples: Sequence[Tokens]) -> Tokens:
    models = dict.fromkeys(name for example in examples for name in example)
    return {
        name: _scaled(_summed([example[name] for example in examples if name in example]), 1 / len(examples))
        for name in models
    }


def _summed(usages: Sequence[ModelUsage]) -> ModelUsage:
    total = usages[0]
    for usage in usages[1:]:
        total = _plus(total, usage)
    return total


def _plus(a: ModelUsage, b: ModelUsage) -> ModelUsage:
    """`a.plus(b)` for projected usages, whose counts are floats until `_rounded` (unknown + unknown: unknown)."""
    counts = {name: _known_sum(getattr(a, name), getattr(b, name)) for name in _COUNTS}
    return ModelUsage.model_construct(calls=a.calls + b.calls, **counts)  # type: ignore[arg-type]


def _known_sum(a: float | None, b: float | None) -> float | None:
    return None if a is None and b is None else (a or 0) + (b or 0)


def _scaled(usage: ModelUsage, factor: float) -> ModelUsage:
    """`usage` times `factor`, counts kept as floats until `_rounded` (unknown counts stay unknown)."""
    counts = {name: None if getattr(usage, name) is None else getattr(usage, name) * factor for name in _COUNTS}
    return ModelUsage.model_construct(calls=usage.calls * factor, **counts)  # type: ignore[arg-type]


def _rounded(usage: ModelUsage) -> ModelUsage:
    counts = {name: None if getattr(usage, name) is None else round(getattr(usage, name)) for name in _COUNTS}
    return ModelUsage(calls=round(usage.calls), **counts)


def _total(usage: ModelUsage) -> int:
    return round(sum(getattr(usage, name) or 0 for name in ("input_tokens", "output_tokens", "thinking_tokens")))


def _total_of(tokens: Tokens) -> int:
    return sum(_total(usage) for usage in tokens.values())


# ------------------------------------------------------------------------------------------------ dollars, notes
def _priced(projection: _Projection, pricing: Mapping[str, ModelPrice] | None) -> tuple[SideEstimate, list[str]]:
    """The side's estimate with its dollars, and the models no price covers."""
    point, low, high = (
        {model: _rounded(usage) for model, usage in tokens.items()}
        for tokens in (projection.point, projection.low, projection.high)
    )
    costs = [run_cost(tokens, {}, pricing) for tokens in (point, low, high)]
    side = SideEstimate(
        tokens=point,
        tokens_low=_total_of(low),
        tokens_high=_total_of(high),
        usd=costs[0].agent_usd,
        usd_low=costs[1].agent_usd,
        usd_high=costs[2].agent_usd,
    )
    return side, costs[0].unpriced


def _notes(
    earlier: RunReport,
    planned: Sequence[PlannedCaseRun],
    agent_examples: Mapping[str, Mapping[CaseKey, object]],
    criteria: Sequence[str],
    judge_examples: Mapping[str, object],
) -> list[str]:
    notes = []
    if not agent_examples:
        notes.append(f"run {earlier.run_id} recorded no agent tokens by model: the agent's cost cannot be projected")
    missing = [name for name in criteria if name not in judge_examples]
    if missing:
        notes.append(
            f"{', '.join(missing)}: run {earlier.run_id} made no judge call for it to learn from: its cost is left out"
        )
    learnt = set(agent_examples.get("", {}))
    guessed = len({run.key for run in planned} - learnt)
    if agent_examples and guessed:
        notes.append(
            f"{guessed} case(s) with no usable answer in run {earlier.run_id} (not in it, failed, or reused): "
            "projected at the mean of its cases"
        )
    return notes


def _both(estimate: CostEstimate, name: str) -> float | None:
    sides = [side for side in (estimate.agent, estimate.judges) if side is not None]
    values = [getattr(side, name) for side in sides]
    if not sides or any(value is None for value in values) or estimate.agent is None or estimate.unprojected:
        return None  # a partial sum would read as the whole
    return float(sum(values))
