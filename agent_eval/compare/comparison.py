"""The comparison of a run with its baseline, as `compare_runs` returns it: the metrics, the shared cases and
the verdict (`RegressionReport`), printed for the console or an alert and given as the payload of a Prefect event
or a webhook. The rules that fill it are `agent_eval.compare.regression`'s.

Internal: the public API is `agent_eval`'s; this module's names may change between releases."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agent_eval.compare.efficiency import CostComparison, EfficiencyComparison, LatencyComparison

__all__ = [
    "DEFAULT_TOLERANCE",
    "NO_BASELINE",
    "CaseComparison",
    "CaseRef",
    "MetricComparison",
    "RegressionReport",
    "no_baseline_payload",
]

DEFAULT_TOLERANCE = 0.05
"""The absolute drop a metric's mean may show before it can count as regressed."""

NO_BASELINE = "no comparable baseline"
_MAX_LISTED = 10


class CaseRef(BaseModel):
    """An eval case, by eval set and id."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    eval_set_id: str
    eval_id: str

    @property
    def label(self) -> str:
        """`eval_set_id/eval_id`, as the console and alerts show it."""
        return f"{self.eval_set_id}/{self.eval_id}"


class MetricComparison(BaseModel):
    """One metric compared over the cases both runs scored (means, difference and interval are None without any)."""

    model_config = ConfigDict(extra="forbid")

    metric_name: str
    paired_cases: int = Field(description="Shared cases scored in both runs.")
    left_out: int = Field(0, description="Shared cases with the metric but no score on one side.")
    baseline_mean: float | None = None
    current_mean: float | None = None
    difference: float | None = Field(None, description="Mean of current − baseline over the paired cases.")
    ci_low: float | None = None
    ci_high: float | None = None
    tolerance: float = DEFAULT_TOLERANCE
    informational: bool = False
    regressed: bool = False
    improved: bool = False
    note: str | None = None


class CaseComparison(CaseRef):
    """One shared case: its passes in each run set, pass@k, flips, flakiness and whether it hard-regressed."""

    baseline_runs: int
    baseline_passes: int
    current_runs: int
    current_passes: int
    baseline_pass_rate: float
    current_pass_rate: float
    baseline_pass_at_k: dict[int, float]
    pass_at_k: dict[int, float] = Field(description="pass@k over the current runs, k = 1..current_runs.")
    flaky: bool
    flipped_to_failing: bool
    flipped_to_passing: bool
    hard_regression: bool


class RegressionReport(BaseModel):
    """The comparison of a current run with a baseline run (rules in the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    baseline_run_id: str
    current_run_id: str
    baseline_reason: str | None = Field(None, description="Why this baseline: pinned, or the latest comparable run.")
    confidence: float
    resamples: int
    seed: int
    metrics: list[MetricComparison]
    cases: list[CaseComparison] = Field(description="The shared cases, in the current report's order.")
    added: list[CaseRef] = Field(default_factory=list, description="Cases only in the current run.")
    removed: list[CaseRef] = Field(default_factory=list, description="Cases only in the baseline run.")
    baseline_pass_at_k: dict[int, float] = Field(default_factory=dict)
    pass_at_k: dict[int, float] = Field(default_factory=dict, description="Mean pass@k over the shared cases.")
    notes: list[str] = Field(default_factory=list)
    efficiency: EfficiencyComparison = Field(
        default_factory=EfficiencyComparison, description="Cost per case run and per-turn latency."
    )

    @property
    def quality_regressed(self) -> bool:
        """Whether any metric regressed or any case is a hard regression."""
        return any(m.regressed for m in self.metrics) or bool(self.hard_regressions)

    @property
    def regressed(self) -> bool:
        """The verdict that fails the run: a quality regression, or a cost or latency regression whose
        `fail_on_*` rule is set."""
        return self.quality_regressed or self.efficiency.fails_run

    @property
    def cost_regressed(self) -> bool:
        """Whether the cost per case run rose beyond its tolerance (failing the run or not)."""
        return self.efficiency.cost.regressed

    @property
    def latency_regressed(self) -> bool:
        """Whether p50 or p95 per-turn latency rose beyond its tolerance (failing the run or not)."""
        return self.efficiency.latency.regressed

    @property
    def alerted(self) -> bool:
        """Whether the comparison raises the regression alert: a regression of any kind, failing the run or not."""
        return self.regressed or self.cost_regressed or self.latency_regressed

    @property
    def flipped_to_failing(self) -> list[CaseComparison]:
        """Cases passing in every baseline run and not in every current run."""
        return [case for case in self.cases if case.flipped_to_failing]

    @property
    def flipped_to_passing(self) -> list[CaseComparison]:
        """Cases not passing in every baseline run and passing in every current run."""
        return [case for case in self.cases if case.flipped_to_passing]

    @property
    def hard_regressions(self) -> list[CaseComparison]:
        """Cases passing in every baseline run and in no current run."""
        return [case for case in self.cases if case.hard_regression]

    @property
    def flaky_cases(self) -> list[CaseComparison]:
        """Cases that both passed and did not pass across the current runs."""
        return [case for case in self.cases if case.flaky]

    def summary_lines(self) -> list[str]:
        """Lines for the console or an alert: a header, one line per metric, the case lists, notes, cost and
        latency, the verdict."""
        lines = [
            f"{self.current_run_id} vs baseline {self.baseline_run_id}: {len(self.cases)} shared cases, "
            f"{len(self.added)} added, {len(self.removed)} removed"
        ]
        if self.baseline_reason:
            lines.insert(0, f"baseline {self.baseline_run_id}: {self.baseline_reason}")
        lines.extend(_metric_line(metric, self.confidence) for metric in self.metrics)
        lines.extend(f"{title}: {_listing(items)}" for title, items in _case_groups(self) if items)
        if len(self.pass_at_k) > 1:
            lines.append("pass@k: " + ", ".join(f"pass@{k} {value:.3f}" for k, value in self.pass_at_k.items()))
        lines.extend(self.notes)
        lines.extend(self.efficiency.summary_lines())
        lines.append(_verdict(self))
        return lines

    def to_payload(self) -> dict[str, Any]:
        """A JSON-able dict for a Prefect event or a webhook: metrics, flipped and flaky cases, pass@k, cost and
        latency, verdict."""
        return {
            "regressed": self.regressed,
            "cost_regressed": self.cost_regressed,
            "latency_regressed": self.latency_regressed,
            "baseline_run_id": self.baseline_run_id,
            "baseline_reason": self.baseline_reason,
            "current_run_id": self.current_run_id,
            "confidence": self.confidence,
            "shared_cases": len(self.cases),
            "regressed_metrics": [metric.metric_name for metric in self.metrics if metric.regressed],
            "metrics": [metric.model_dump(mode="json") for metric in self.metrics],
            "flipped_to_failing": _labels(self.flipped_to_failing),
            "flipped_to_passing": _labels(self.flipped_to_passing),
            "hard_regressions": _labels(self.hard_regressions),
            "flaky": [_flaky_payload(case) for case in self.flaky_cases],
            "added": _labels(self.added),
            "removed": _labels(self.removed),
            "pass_at_k": _keyed(self.pass_at_k),
            "baseline_pass_at_k": _keyed(self.baseline_pass_at_k),
            "notes": list(self.notes),
            "efficiency": self.efficiency.to_payload(),
            "summary": "\n".join(self.summary_lines()),
        }


def no_baseline_payload(current_run_id: str, reason: str) -> dict[str, Any]:
    """The payload stored (and printed) when a run has no comparable baseline: nothing compared, nothing
    regressed, and `summary` saying why, e.g. "no comparable baseline: 2 earlier completed runs of this agent
    and eval set versions used other criteria". Same keys as `RegressionReport.to_payload`."""
    return {
        "regressed": False,
        "cost_regressed": False,
        "latency_regressed": False,
        "baseline_run_id": None,
        "baseline_reason": reason,
        "current_run_id": current_run_id,
        "shared_cases": 0,
        "regressed_metrics": [],
        "metrics": [],
        "flipped_to_failing": [],
        "flipped_to_passing": [],
        "hard_regressions": [],
        "flaky": [],
        "added": [],
        "removed": [],
        "pass_at_k": {},
        "baseline_pass_at_k": {},
        "notes": [],
        "efficiency": {},
        "summary": f"{NO_BASELINE}: {reason}",
    }


# ------------------------------------------------------------------------------------------------- output
def _metric_line(metric: MetricComparison, confidence: float) -> str:
    """E.g. `response_match_score: 0.912 → 0.803 (−0.109, 95% CI [−0.151, −0.068]) REGRESSED`."""
    b, c, d, low, high = metric.baseline_mean, metric.current_mean, metric.difference, metric.ci_low, metric.ci_high
    if b is None or c is None or d is None or low is None or high is None:
        return f"{metric.metric_name}: {metric.note}"
    level = f"{round(confidence * 100, 6):g}%"
    line = f"{metric.metric_name}: {b:.3f} → {c:.3f} ({_signed(d)}, {level} CI [{_signed(low)}, {_signed(high)}])"
    line += " REGRESSED" if metric.regressed else " IMPROVED" if metric.improved else ""
    extras = [metric.note] if metric.note else []
    extras += [f"{metric.left_out} unscored cases left out"] if metric.left_out else []
    extras += ["informational: not gated"] if metric.informational else []
    return line + (f" ({'; '.join(extras)})" if extras else "")


def _case_groups(report: RegressionReport) -> list[tuple[str, list[str]]]:
    flaky = [f"{case.label} ({case.current_passes}/{case.current_runs} passed)" for case in report.flaky_cases]
    return [
        ("flipped to failing", _labels(report.flipped_to_failing)),
        ("hard regressions", _labels(report.hard_regressions)),
        ("flipped to passing", _labels(report.flipped_to_passing)),
        ("flaky", flaky),
        ("added", _labels(report.added)),
        ("removed", _labels(report.removed)),
    ]


def _verdict(report: RegressionReport) -> str:
    """`REGRESSED: ...` with what fails the run, else `no regression`, or the cost and latency regressions that
    were reported without failing it."""
    if not report.regressed:
        return _reported_only(report.efficiency) or "no regression"
    reasons = [metric.metric_name for metric in report.metrics if metric.regressed]
    if report.hard_regressions:
        reasons.append(f"{len(report.hard_regressions)} hard-regressed case(s)")
    cost, latency = report.efficiency.cost, report.efficiency.latency
    reasons += [name for name, side in (("cost per case", cost), ("latency per turn", latency)) if _fails(side)]
    return "REGRESSED: " + ", ".join(reasons)


def _reported_only(efficiency: EfficiencyComparison) -> str | None:
    """E.g. `no failing regression: cost regression reported only (set regression.fail_on_cost_regression to
    fail the run)`; None when neither cost nor latency regressed."""
    kinds = [kind for kind, side in (("cost", efficiency.cost), ("latency", efficiency.latency)) if side.regressed]
    if not kinds:
        return None
    rules = ", ".join(f"regression.fail_on_{kind}_regression" for kind in kinds)
    reported = f"{' and '.join(kinds)} regression{'s' if len(kinds) > 1 else ''} reported only"
    return f"no failing regression: {reported} (set {rules} to fail the run)"


def _fails(side: CostComparison | LatencyComparison) -> bool:
    return side.regressed and side.fail_on_regression


def _signed(value: float) -> str:
    """`+0.109`, `−0.109` (a real minus sign) or `0.000`."""
    text = f"{abs(value):.3f}"
    if text == "0.000":
        return text
    return ("−" if value < 0 else "+") + text


def _listing(items: Sequence[str]) -> str:
    shown = ", ".join(items[:_MAX_LISTED])
    return shown + (f" and {len(items) - _MAX_LISTED} more" if len(items) > _MAX_LISTED else "")


def _labels(cases: Iterable[CaseRef]) -> list[str]:
    return [case.label for case in cases]


def _keyed(values: Mapping[int, float]) -> dict[str, float]:
    return {str(k): value for k, value in values.items()}


def _flaky_payload(case: CaseComparison) -> dict[str, Any]:
    return {
        "case": case.label,
        "passes": case.current_passes,
        "runs": case.current_runs,
        "pass_rate": case.current_pass_rate,
        "pass_at_k": _keyed(case.pass_at_k),
    }
