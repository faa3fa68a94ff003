"""Cost and latency against the baseline: cost per case run and per-turn latency (p50, p95), their relative
changes, and whether either regressed beyond its tolerance (`compare_efficiency`, pure).

Internal: the public API is `agent_eval`'s; this module's names may change between releases.

The rules:

Cost per case run
    A run's total cost (`RunSummary.cost.total_usd`: its agent's and judges' tokens, priced as
    `agent_eval.results.pricing` says) divided by its case runs (`RunSummary.total`: every case run, one whose
    agent failed included, since its calls and judges may have cost). It is not compared (`compared` False, the
    note says why, never a regression) when either run's cost is unknown (no call reported tokens, a model has no
    price, a call lacked its counts), when either run reused answers of an earlier evaluation (those cost nothing
    now: the figure would not be the agent's), when the current run evaluated a subset of the baseline's case
    runs (the baseline's cost is of all of them), or when a run has no case run.

Latency per turn
    The turns are every timed turn (`Invocation.duration` set) of every case run whose agent did not fail
    (`AgentRun.error` None) and that was invoked in its run (`AgentRun.cached_from` None: a reused answer was timed
    in an earlier evaluation). p50 and p95 are percentiles by linear interpolation between closest ranks, at
    position (n − 1)·q of the sorted seconds (numpy's default `linear` method, Hyndman and Fan's type 7). A
    percentile q is compared only when each run has at least 1 / (1 − q) timed turns (p50: 2, p95: 20): with
    fewer, no turn lies above it and the slowest turn alone decides it, so one stalled turn would read as a
    regression; the note says so. Not compared at all when either run has no such turn (ADK sessions carry no
    timing), and the note says which. Each run's percentiles are its own: nothing is paired, so a rerun of a
    subset compares the turns of the case runs both have. Recorded traffic is compared the same way: a turn read
    from spans is timed by its root span (`agent_eval.io.recorded.traces`).

Change and regression
    The change is relative, current / baseline − 1 (+0.38 is 38% more); 0 when both are 0, unbounded (`None`)
    when only the baseline is 0, which exceeds any tolerance. Cost regresses when its change exceeds
    `cost_tolerance`. Latency regresses when the change of p50 or of p95 exceeds `latency_tolerance` AND that
    percentile rose by more than `LATENCY_NOISE_SECONDS` (0.25 s): a rise below it is the scheduling noise of
    fast turns on a busy machine (20 ms → 60 ms is +200%), no turn anyone waits for. "Exceeds" is strict, beyond
    float noise of 1e-9. A tolerance of 0 reports any rise.

Verdict
    A cost or latency regression is always reported (its own summary line, payload keys and the alert), but
    fails the run (`EfficiencyComparison.fails_run`, hence `RegressionReport.regressed` and exit code 3) only
    when its `fail_on_*` rule says so (`regression.fail_on_cost_regression`, `fail_on_latency_regression`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from agent_eval.results.model import CaseResult, RunReport

if TYPE_CHECKING:
    from agent_eval.schema import RegressionConfig

__all__ = [
    "DEFAULT_COST_TOLERANCE",
    "DEFAULT_LATENCY_TOLERANCE",
    "LATENCY_NOISE_SECONDS",
    "CaseRunKey",
    "CostComparison",
    "EfficiencyComparison",
    "EfficiencyRules",
    "LatencyComparison",
    "TurnSeconds",
    "compare_efficiency",
    "percentile",
    "relative_change",
    "turn_seconds",
]

DEFAULT_COST_TOLERANCE = 0.25
"""The relative rise of the cost per case run that is not yet a regression (+25%)."""
DEFAULT_LATENCY_TOLERANCE = 0.5
"""The relative rise of p50 or p95 per-turn latency that is not yet a regression (+50%)."""
LATENCY_NOISE_SECONDS = 0.25
"""A percentile that rose by this many seconds or less never regresses (scheduling noise)."""

_FLOAT_NOISE = 1e-9
_PERCENTILES = {"p50": (0.5, 2), "p95": (0.95, 20)}
"""Each percentile's q and the least timed turns per run it is compared with, 1 / (1 − q)."""

CaseRunKey: TypeAlias = tuple[str, str, int]
"""A case run: eval set id, eval id, run index."""
TurnSeconds: TypeAlias = Mapping[CaseRunKey, Sequence[float]]
"""Each case run's timed turns, in seconds (a run's case runs whose turns are untimed may be missing)."""


@dataclass(frozen=True)
class EfficiencyRules:
    """The tolerances of cost and latency, and whether their regressions fail the run (module docstring).

    Raises:
        ValueError: a negative tolerance.
    """

    cost_tolerance: float = DEFAULT_COST_TOLERANCE
    latency_tolerance: float = DEFAULT_LATENCY_TOLERANCE
    fail_on_cost_regression: bool = False
    fail_on_latency_regression: bool = False

    def __post_init__(self) -> None:
        for name in ("cost_tolerance", "latency_tolerance"):
            value = getattr(self, name)
            if not value >= 0:  # NaN too
                raise ValueError(f"{name} must be 0 or more (0.25 = +25%), got {value!r}")

    @classmethod
    def of(cls, config: RegressionConfig) -> EfficiencyRules:
        """The rules of the config's `regression` section."""
        return cls(
            cost_tolerance=config.cost_tolerance,
            latency_tolerance=config.latency_tolerance,
            fail_on_cost_regression=config.fail_on_cost_regression,
            fail_on_latency_regression=config.fail_on_latency_regression,
        )


class CostComparison(BaseModel):
    """The cost per case run of both runs, in US dollars (None: unknown), and its relative change."""

    model_config = ConfigDict(extra="forbid")

    compared: bool = False
    baseline_usd: float | None = None
    current_usd: float | None = None
    change: float | None = Field(None, description="current / baseline − 1; None: not compared, or unbounded.")
    tolerance: float = DEFAULT_COST_TOLERANCE
    regressed: bool = False
    fail_on_regression: bool = Field(False, description="Whether a cost regression fails the run.")
    note: str | None = Field(None, description="Why the cost was not compared.")


class LatencyComparison(BaseModel):
    """The per-turn latency of both runs, p50 and p95 in seconds, and their relative changes."""

    model_config = ConfigDict(extra="forbid")

    compared: bool = False
    baseline_turns: int = 0
    current_turns: int = 0
    baseline_p50: float | None = None
    current_p50: float | None = None
    p50_change: float | None = None
    baseline_p95: float | None = None
    current_p95: float | None = None
    p95_change: float | None = None
    tolerance: float = DEFAULT_LATENCY_TOLERANCE
    regressed_percentiles: list[str] = Field(default_factory=list, description="`p50`, `p95`, or both.")
    regressed: bool = False
    fail_on_regression: bool = Field(False, description="Whether a latency regression fails the run.")
    note: str | None = Field(None, description="What was not compared (the latency, or a percentile), and why.")


class EfficiencyComparison(BaseModel):
    """Cost and latency against the baseline; the default compares nothing (a payload of an earlier release)."""

    model_config = ConfigDict(extra="forbid")

    cost: CostComparison = Field(default_factory=CostComparison)
    latency: LatencyComparison = Field(default_factory=LatencyComparison)

    @property
    def fails_run(self) -> bool:
        """Whether a cost or latency regression fails the run (its `fail_on_*` rule is set)."""
        return any(side.regressed and side.fail_on_regression for side in (self.cost, self.latency))

    def summary_lines(self) -> list[str]:
        """The cost line and the latency line(s), e.g. `cost regression: +38% per case, 0.021 → 0.029 USD`;
        nothing for a measure neither run has."""
        return [*_cost_lines(self.cost), *_latency_lines(self.latency)]

    def to_payload(self) -> dict[str, Any]:
        """`{"cost": {...}, "latency": {...}}`, JSON-able."""
        return {"cost": self.cost.model_dump(mode="json"), "latency": self.latency.model_dump(mode="json")}


def compare_efficiency(
    baseline: RunReport,
    current: RunReport,
    rules: EfficiencyRules | None = None,
    *,
    turns: tuple[TurnSeconds, TurnSeconds] | None = None,
    subset: bool = False,
) -> EfficiencyComparison:
    """Compare the cost per case run and the per-turn latency of two runs (rules in the module docstring).

    Args:
        baseline: the baseline run (for a subset rerun, with only the case runs the current run has).
        current: the new run.
        rules: the tolerances and `fail_on_*` rules; default: +25% cost, +50% latency, neither failing the run.
        turns: each side's seconds per turn by case run, e.g. read from the store (`stored_turn_seconds`) for
            reports whose case runs are summaries without invocations; default: the reports' invocations.
        subset: the current run evaluated a subset of the baseline's case runs (its cost is not compared).
    """
    rules = rules or EfficiencyRules()
    before, after = turns or (turn_seconds(baseline.cases), turn_seconds(current.cases))
    return EfficiencyComparison(
        cost=_compare_cost(baseline, current, rules, subset=subset),
        latency=_compare_latency(_timed(baseline.cases, before), _timed(current.cases, after), rules),
    )


def turn_seconds(cases: Iterable[CaseResult]) -> dict[CaseRunKey, list[float]]:
    """Each case run's timed turns (`Invocation.duration`), in seconds, from its invocations."""
    return {
        _key(case): [turn.duration for turn in case.agent_run.invocations if turn.duration is not None]
        for case in cases
    }


def percentile(seconds: Sequence[float], q: float) -> float:
    """The `q` quantile (0..1) by linear interpolation at position (n − 1)·q of the sorted values (numpy's
    `linear`).

    Raises:
        ValueError: no values.
    """
    if not seconds:
        raise ValueError("a percentile needs at least one value")
    ordered = sorted(seconds)
    position = (len(ordered) - 1) * q
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (position - below) * (ordered[above] - ordered[below])


def relative_change(before: float, after: float) -> float | None:
    """after / before − 1; 0.0 when both are 0; None (unbounded) when only `before` is 0."""
    if before == 0:
        return 0.0 if after == 0 else None
    return after / before - 1


# ---------------------------------------------------------------------------------------------------- cost
def _compare_cost(baseline: RunReport, current: RunReport, rules: EfficiencyRules, *, subset: bool) -> CostComparison:
    before, after = _cost_per_case(baseline), _cost_per_case(current)
    fields: dict[str, Any] = {"baseline_usd": before, "current_usd": after, "tolerance": rules.cost_tolerance}
    fields["fail_on_regression"] = rules.fail_on_cost_regression
    note = _cost_not_compared(baseline, current, subset=subset)
    if note is not None or before is None or after is None:
        return CostComparison(**fields, note=note or "no case run")
    change = relative_change(before, after)
    return CostComparison(**fields, compared=True, change=change, regressed=_exceeds(change, rules.cost_tolerance))


def _cost_per_case(report: RunReport) -> float | None:
    summary = report.summary
    total = summary.cost.total_usd if summary.cost is not None else None
    return total / summary.total if total is not None and summary.total else None


def _cost_not_compared(baseline: RunReport, current: RunReport, *, subset: bool) -> str | None:
    """Why the cost per case run of the two runs says nothing of the agent's cost (module docstring), or None."""
    unknown = [name for name, run in (("the baseline", baseline), ("this run", current)) if not _cost_known(run)]
    if unknown:
        return f"cost unknown in {' and '.join(unknown)}"
    reused = [
        f"{run.summary.cached_case_runs} of {run.summary.total} case runs of {name}"
        for name, run in (("the baseline", baseline), ("this run", current))
        if run.summary.cached_case_runs
    ]
    if reused:
        return f"{' and '.join(reused)} reused earlier answers, which cost nothing now"
    if subset:
        return "a rerun of a subset of the baseline's case runs: the baseline's cost is of all of them"
    return None


def _cost_known(report: RunReport) -> bool:
    cost = report.summary.cost
    return cost is not None and cost.total_usd is not None


# ------------------------------------------------------------------------------------------------- latency
def _timed(cases: Sequence[CaseResult], seconds: TurnSeconds) -> list[float]:
    """The timed turns of the case runs whose agent did not fail and that were invoked in this run."""
    return [
        turn
        for case in cases
        if case.agent_run.error is None and case.agent_run.cached_from is None
        for turn in seconds.get(_key(case), ())
    ]


def _compare_latency(before: Sequence[float], after: Sequence[float], rules: EfficiencyRules) -> LatencyComparison:
    fields: dict[str, Any] = {"baseline_turns": len(before), "current_turns": len(after)}
    fields.update(tolerance=rules.latency_tolerance, fail_on_regression=rules.fail_on_latency_regression)
    untimed = [name for name, turns in (("the baseline", before), ("this run", after)) if not turns]
    if untimed:
        return LatencyComparison(**fields, note=f"no timed turn in {' and '.join(untimed)}")
    regressed, too_few = [], []
    for name, (q, least) in _PERCENTILES.items():
        if min(len(before), len(after)) < least:
            too_few.append(f"{name} needs at least {least} timed turns in each run")
            continue
        low, high = percentile(before, q), percentile(after, q)
        change = relative_change(low, high)
        fields.update({f"baseline_{name}": low, f"current_{name}": high, f"{name}_change": change})
        if _exceeds(change, rules.latency_tolerance) and high - low > LATENCY_NOISE_SECONDS + _FLOAT_NOISE:
            regressed.append(name)
    note = f"{'; '.join(too_few)} ({len(before)} and {len(after)})" if too_few else None
    compared = len(too_few) < len(_PERCENTILES)
    return LatencyComparison(
        **fields, compared=compared, note=note, regressed_percentiles=regressed, regressed=bool(regressed)
    )


def _exceeds(change: float | None, tolerance: float) -> bool:
    """Whether a relative change exceeds the tolerance, beyond float noise (an unbounded rise always does)."""
    return change is None or change > tolerance + _FLOAT_NOISE


def _key(case: CaseResult) -> CaseRunKey:
    return (case.eval_set_id, case.eval_id, case.run_index)


# -------------------------------------------------------------------------------------------------- output
def _cost_lines(cost: CostComparison) -> list[str]:
    """`cost regression: +38% per case, 0.021 → 0.029 USD`, `cost per case: 0.021 → 0.022 USD (+5%)`, or why
    it was not compared when either run's cost is known."""
    before, after = cost.baseline_usd, cost.current_usd
    if not cost.compared or before is None or after is None:
        known = before is not None or after is not None
        return [f"cost per case: not compared ({cost.note})"] if cost.note and known else []
    figures = f"{_usd(before)} → {_usd(after)} USD"
    if cost.regressed:
        return [f"cost regression: {_percent(cost.change)} per case, {figures}"]
    return [f"cost per case: {figures} ({_percent(cost.change)})"]


def _latency_lines(latency: LatencyComparison) -> list[str]:
    """`latency regression: p95 per turn +62%, 2.10 → 3.40 s`, or `latency per turn: p50 1.20 → 1.31 s (+9%),
    p95 2.10 → 2.20 s (+5%)` (and what was not compared), or why it was not compared when either run has timed
    turns."""
    if not latency.compared:
        timed = latency.baseline_turns or latency.current_turns
        return [f"latency per turn: not compared ({latency.note})"] if latency.note and timed else []
    if latency.regressed:
        shown = [f"{name} per turn {_percent(change)}, {figures}" for name, figures, change in _figures(latency)]
        return ["latency regression: " + "; ".join(shown)]
    shown = [f"{name} {figures} ({_percent(change)})" for name, figures, change in _figures(latency)]
    return ["latency per turn: " + ", ".join(shown) + (f"; {latency.note}" if latency.note else "")]


def _figures(latency: LatencyComparison) -> list[tuple[str, str, float | None]]:
    """Per compared percentile (only the regressed ones, when latency regressed): name, `1.20 → 1.31 s`, change."""
    compared = [name for name in _PERCENTILES if getattr(latency, f"baseline_{name}") is not None]
    names = latency.regressed_percentiles or compared
    return [(name, _span(latency, name), getattr(latency, f"{name}_change")) for name in names]


def _span(latency: LatencyComparison, name: str) -> str:
    """`1.20 → 1.31 s` for percentile `name` (`p50`, `p95`)."""
    return f"{_seconds(getattr(latency, f'baseline_{name}'))} → {_seconds(getattr(latency, f'current_{name}'))} s"


def _percent(change: float | None) -> str:
    """`+38%`, `−5%` (a real minus sign), `0%`; `+∞%` for a rise from 0."""
    if change is None:
        return "+∞%"
    text = f"{abs(change):.0%}"
    if change == 0:
        return text
    return ("−" if change < 0 else "+") + text


def _usd(value: float) -> str:
    """Three significant digits, no exponent: `0.021`, `0.00037`, `1.25`, `0`."""
    return _significant(value, 3)


def _seconds(value: float) -> str:
    """`1.20` (two decimals) from 0.1 s up, else two significant digits (`0.0042`)."""
    return f"{value:.2f}" if value >= 0.1 else _significant(value, 2)


def _significant(value: float, digits: int) -> str:
    if value == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    text = f"{value:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text
