"""Run comparison with statistics: did the current run regress against a baseline, metric by metric and case by case?

`compare_runs(baseline, current)` is pure (no Prefect, no store) and returns a `RegressionReport`, which prints
itself for the console or an alert (`summary_lines`) and becomes the payload of a Prefect event or a webhook
(`to_payload`). The rules:

Cases
    A case is keyed by `(eval_set_id, eval_id)`; its runs are the report's `CaseResult`s with that key (one per
    `run_index`). Only cases in both reports (*shared*) are compared; cases only in the current report are listed
    as `added`, cases only in the baseline as `removed`. No shared cases: nothing is compared, nothing regressed,
    and a note says so.

Metrics (over the shared cases)
    - A case's score on a side is the mean of its scored runs' scores on that side (with `num_runs` > 1 runs are
      averaged first, then paired). A run with a None (or non-finite) score is skipped; a case with no scored run
      on either side is left out of that metric's pairing and counted in `left_out`.
    - `baseline_mean` and `current_mean` are means over the paired cases only; `difference` is the mean of the
      per-case differences (current − baseline), i.e. `current_mean − baseline_mean`.
    - The interval is a paired percentile bootstrap of the mean difference (`agent_eval.results.stats`), drawn from
      `numpy.random.default_rng(seed)` for every metric. One paired case gives the degenerate interval `[d, d]`
      (noted); identical runs give a difference of 0 and the interval `[0, 0]`.
    - `regressed`: the drop (−difference) exceeds the metric's tolerance AND the interval's upper bound is below
      zero. `improved`: the gain exceeds the tolerance AND the lower bound is above zero. "Exceeds" is strict,
      beyond float noise of 1e-9. The tolerance is absolute, in the metric's units: one float for every metric,
      or a dict of per-metric tolerances (metrics missing from it get 0.05; names in it that no run scored are
      ignored).
    - An *informational* metric (no PASSED or FAILED result in either run, at least one INFORMATIONAL one, e.g.
      ADK's call counts where lower is better) is compared but never regressed nor improved: its direction is
      unknown. So is a judged criterion whose judge either run found not calibrated
      (`RunSummary.uncalibrated_judges`, the config's `judge.min_agreement`); the notes say why. When such a
      gate differs between the runs (a judge calibrated since), pass/fail flips are not compared: a case's
      pass/fail rests on other criteria in each run.

Case outcomes (over the shared cases)
    - A case run passed when its `CaseResult` passed (a failed or not-evaluated run did not pass). A case
      *passes* on a side when every run of it there passed, and *fails* there otherwise.
    - `flipped_to_failing`: passes in the baseline, fails in the current run; `flipped_to_passing`: the reverse.
      With one run per case these are plain pass ↔ fail flips.
    - `hard_regression`: passed in EVERY baseline run and in NO current run (with one run per case, the same as a
      flip to failing; with several runs, a case that merely became flaky is not a hard regression).
    - `flaky`: the case both passed and did not pass across its current runs.
    - Pass rate = passes / runs on each side; pass@k for k = 1..n (n = the case's runs on that side) by the
      unbiased estimator `1 − C(n−c, k) / C(n, k)`; the report's pass@k averages each k over the shared cases
      that ran at least k times.

Like with like (per eval set, from each report's `config`, see `agent_eval.results.run_configs`)
    - An eval set both runs scored with the same criteria (equal scoring fingerprints: thresholds, options,
      custom metrics, user simulator; the `regression` section does not count) is compared as above. The
      baseline the flow picks by itself always qualifies (`agent_eval.store.choose_baseline`).
    - Otherwise (a pinned baseline measured with another config) only the metrics both runs measured with the
      same options are compared: a metric whose options, custom code or user simulator differ, or that only
      one run has, is left out; a metric whose threshold alone differs keeps its scores compared (a threshold
      decides pass or fail, not the score). Case pass/fail flips, and so hard regressions, are not counted in
      that eval set: a case passing under other criteria says nothing about a regression. Notes say so.

Recorded traffic (every case of both runs read from recorded spans or sessions)
    Each run scored the sessions of its own window: nothing pairs. Each metric's case scores are compared as two
    samples (`agent_eval.results.stats.unpaired_difference`: means, difference of the means, bootstrap interval of it)
    with the same tolerance and interval rule; no case flips, nothing is added or removed, and a note gives
    both pass rates.

A subset of the baseline (`subset=True`: a `rerun --only-failed` compared with the run it came from)
    Only the baseline's case runs that the current run has (same eval set, case and run index) are compared:
    the cases it did not run again are not `removed`, and no metric's mean takes them in. A note says so.

Cost and latency (`agent_eval.compare.efficiency`, in every comparison, recorded traffic included)
    Cost per case run and p50 / p95 per-turn latency, each run's own, and their relative changes; a rise beyond
    `cost_tolerance` (+25%) or `latency_tolerance` (+50%) is a cost or latency regression, reported and alerted
    as its own kind.

Verdict
    `RegressionReport.regressed` = any metric regressed OR any case is a hard regression OR a cost or latency
    regression whose `fail_on_*` rule is set. With no comparable baseline there is no comparison:
    `no_baseline_payload` says why, and nothing regressed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from agent_eval.compare.comparison import (
    DEFAULT_TOLERANCE,
    NO_BASELINE,
    CaseComparison,
    CaseRef,
    MetricComparison,
    RegressionReport,
    no_baseline_payload,
)
from agent_eval.compare.efficiency import EfficiencyRules, TurnSeconds, compare_efficiency
from agent_eval.results.model import CaseResult, RunReport
from agent_eval.results.run_configs import configs_by_eval_set, criterion_keys
from agent_eval.results.stats import (
    CaseKey,
    CaseRuns,
    PairedDifference,
    case_scores,
    check_confidence,
    check_resamples,
    check_tolerance,
    informational_metrics,
    mean_pass_at_k,
    paired_difference,
    pass_at_ks,
    runs_by_case,
    unpaired_difference,
)
from agent_eval.schema import scoring_fingerprint

__all__ = [
    "DEFAULT_TOLERANCE",
    "NO_BASELINE",
    "CaseComparison",
    "CaseRef",
    "MetricComparison",
    "RegressionReport",
    "compare_runs",
    "no_baseline_payload",
]

_FLOAT_NOISE = 1e-9
_ONE_PAIR = "one paired case: the interval is the difference itself"


@dataclass(frozen=True)
class _Settings:
    tolerance: float | Mapping[str, float]
    confidence: float
    resamples: int
    seed: int
    uncalibrated: frozenset[str] = frozenset()
    """The current run's judged criteria whose judge is not calibrated: compared, never regressing."""

    def tolerance_of(self, metric_name: str) -> float:
        if isinstance(self.tolerance, Mapping):
            return float(self.tolerance.get(metric_name, DEFAULT_TOLERANCE))
        return float(self.tolerance)


def compare_runs(
    baseline: RunReport,
    current: RunReport,
    *,
    tolerance: float | Mapping[str, float] = DEFAULT_TOLERANCE,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    baseline_reason: str | None = None,
    subset: bool = False,
    efficiency: EfficiencyRules | None = None,
    turn_seconds: tuple[TurnSeconds, TurnSeconds] | None = None,
) -> RegressionReport:
    """Compare a current run with a baseline run, metric by metric and case by case (rules in the module docstring).

    Args:
        baseline: the run to compare against.
        current: the new run.
        tolerance: the absolute drop a metric's mean may show without regressing; a dict gives it per metric
            (others get 0.05).
        confidence: the coverage of the bootstrap interval, in (0, 1).
        resamples: the number of bootstrap resamples.
        seed: the seed of the bootstrap's random generator; the same seed gives the same report.
        baseline_reason: why this baseline (e.g. "pinned with --baseline"), shown first in the summary.
        subset: the current run evaluated a subset of the baseline's case runs: compare on those only.
        efficiency: the cost and latency tolerances and `fail_on_*` rules (default: +25%, +50%, not failing).
        turn_seconds: the (baseline, current) seconds per turn by case run when the reports hold case runs
            without invocations (`agent_eval.compare.stored_turns`); default: the reports' invocations.

    Raises:
        ValueError: a confidence outside (0, 1), fewer than one resample, or a negative tolerance.
    """
    check_confidence(confidence)
    check_resamples(resamples)
    check_tolerance(tolerance)
    baseline, subset_notes = _case_runs_of(current, baseline) if subset else (baseline, [])
    alike = _with_gates(_alike(baseline, current), baseline, current)
    baseline_runs, current_runs = runs_by_case(alike.keep(baseline.cases)), runs_by_case(alike.keep(current.cases))
    gated = frozenset(baseline.summary.uncalibrated_judges) | frozenset(current.summary.uncalibrated_judges)
    settings = _Settings(tolerance, confidence, resamples, seed, gated)
    spent = compare_efficiency(baseline, current, efficiency, turns=turn_seconds, subset=subset)
    if _recorded(baseline) and _recorded(current):
        recorded = _compare_recorded((baseline, baseline_runs), (current, current_runs), settings, baseline_reason)
        return recorded.model_copy(update={"efficiency": spent})
    shared = [key for key in current_runs if key in baseline_runs]
    cases = [_compare_case(key, baseline_runs[key], current_runs[key], alike.flips(key[0])) for key in shared]
    return RegressionReport(
        baseline_run_id=baseline.run_id,
        current_run_id=current.run_id,
        baseline_reason=baseline_reason,
        confidence=confidence,
        resamples=resamples,
        seed=seed,
        metrics=_compare_metrics(baseline_runs, current_runs, shared, settings),
        cases=cases,
        added=[_ref(key) for key in current_runs if key not in baseline_runs],
        removed=[_ref(key) for key in baseline_runs if key not in current_runs],
        baseline_pass_at_k=mean_pass_at_k(case.baseline_pass_at_k for case in cases),
        pass_at_k=mean_pass_at_k(case.pass_at_k for case in cases),
        notes=subset_notes + alike.notes + _notes(baseline, current, shared) + _uncalibrated_notes(current),
        efficiency=spent,
    )


def _uncalibrated_notes(current: RunReport) -> list[str]:
    """One note per judged criterion of the current run whose judge is not calibrated (it cannot regress)."""
    return list(current.summary.uncalibrated_judges.values())


def _with_gates(alike: _Alike, baseline: RunReport, current: RunReport) -> _Alike:
    """`alike`, without case flips when a criterion is gated as uncalibrated in one of the runs only (a judge
    calibrated since, or no longer): a case's pass/fail then rests on other criteria in each run."""
    changed = sorted(set(baseline.summary.uncalibrated_judges) ^ set(current.summary.uncalibrated_judges))
    if not changed:
        return alike
    note = (
        f"{', '.join(changed)}: judge calibration differs between the runs (gated as uncalibrated in one only); "
        "pass/fail flips not compared"
    )
    return replace(alike, notes=[*alike.notes, note], gate_changed=True)


def _case_runs_of(current: RunReport, baseline: RunReport) -> tuple[RunReport, list[str]]:
    """The baseline with only the case runs that the current run has (by eval set, case and run index), and the
    note that says so."""
    ran = {(case.eval_set_id, case.eval_id, case.run_index) for case in current.cases}
    kept = [case for case in baseline.cases if (case.eval_set_id, case.eval_id, case.run_index) in ran]
    note = f"a subset of the baseline: compared on the {len(kept)} of its {len(baseline.cases)} case runs this run has"
    return baseline.model_copy(update={"cases": kept}), [note]


# ------------------------------------------------------------------------------------------- like with like
@dataclass(frozen=True)
class _Alike:
    """Per eval set whose criteria differ between the runs: the metrics still compared (absent: all metrics,
    flips counted)."""

    metrics: Mapping[str, frozenset[str]]
    notes: list[str]
    gate_changed: bool = False
    """A judged criterion is gated as uncalibrated in one run only: pass/fail is not alike, no flip counts."""

    def flips(self, eval_set_id: str) -> bool:
        return eval_set_id not in self.metrics and not self.gate_changed

    def keep(self, cases: Sequence[CaseResult]) -> list[CaseResult]:
        """The cases with only their comparable metric results."""
        return [
            case
            if case.eval_set_id not in self.metrics
            else case.model_copy(
                update={"metrics": [m for m in case.metrics if m.metric_name in self.metrics[case.eval_set_id]]}
            )
            for case in cases
        ]


def _alike(baseline: RunReport, current: RunReport) -> _Alike:
    """What may be compared in each eval set of both runs (rules in the module docstring)."""
    eval_set_ids = [eval_set_id for eval_set_id in current.eval_set_ids if eval_set_id in baseline.eval_set_ids]
    baseline_configs = configs_by_eval_set(baseline.config, eval_set_ids)
    current_configs = configs_by_eval_set(current.config, eval_set_ids)
    metrics: dict[str, frozenset[str]] = {}
    notes = []
    for eval_set_id in eval_set_ids:
        before, now = baseline_configs[eval_set_id], current_configs[eval_set_id]
        if scoring_fingerprint(before) == scoring_fingerprint(now):
            continue
        before_keys, now_keys = criterion_keys(before), criterion_keys(now)
        metrics[eval_set_id] = frozenset(name for name, key in now_keys.items() if before_keys.get(name) == key)
        notes.append(_criteria_note(eval_set_id, before_keys, now_keys, metrics[eval_set_id]))
    return _Alike(metrics, notes)


def _criteria_note(eval_set_id: str, before: Mapping[str, str], now: Mapping[str, str], same: frozenset[str]) -> str:
    """E.g. `eval set x: the baseline used other criteria; compared only a (measured alike); left out: b (only
    in this run); pass/fail flips not compared (they need the same criteria)`."""
    left_out = [f"{name} (only in this run)" for name in now if name not in before]
    left_out += [f"{name} (only in the baseline)" for name in before if name not in now]
    left_out += [f"{name} (other options)" for name in now if name in before and name not in same]
    compared = ", ".join(sorted(same)) or "no metric"
    note = f"eval set {eval_set_id}: the baseline used other criteria; compared only {compared} (measured alike)"
    note += f"; left out: {', '.join(left_out)}" if left_out else ""
    return note + "; pass/fail flips not compared (they need the same criteria)"


# ------------------------------------------------------------------------------------------------ metrics
def _compare_metrics(
    baseline_runs: CaseRuns, current_runs: CaseRuns, shared: Sequence[CaseKey], settings: _Settings
) -> list[MetricComparison]:
    """One comparison per metric seen in a shared case, in order of first appearance (current, then baseline)."""
    current_scores, baseline_scores = case_scores(current_runs, shared), case_scores(baseline_runs, shared)
    informational = informational_metrics([baseline_runs, current_runs], shared)
    return [
        _compare_metric(
            name,
            baseline_scores.get(name, {}),
            current_scores.get(name, {}),
            informational=name in informational or name in settings.uncalibrated,
            settings=settings,
        )
        for name in dict.fromkeys([*current_scores, *baseline_scores])
    ]


def _compare_metric(
    name: str,
    baseline: Mapping[CaseKey, float | None],
    current: Mapping[CaseKey, float | None],
    *,
    informational: bool,
    settings: _Settings,
) -> MetricComparison:
    """The paired comparison of one metric: means, difference, bootstrap interval and the regressed/improved flags."""
    keys = dict.fromkeys([*current, *baseline])
    pairs = [(b, c) for key in keys if (b := baseline.get(key)) is not None and (c := current.get(key)) is not None]
    tolerance = settings.tolerance_of(name)
    fields: dict[str, Any] = {"metric_name": name, "tolerance": tolerance, "informational": informational}
    fields.update(paired_cases=len(pairs), left_out=len(keys) - len(pairs))
    if not pairs:
        return MetricComparison(**fields, note="no shared case was scored in both runs")
    paired = paired_difference(pairs, confidence=settings.confidence, resamples=settings.resamples, seed=settings.seed)
    return _judged(fields, paired, note=_ONE_PAIR if len(pairs) == 1 else None)


def _judged(fields: dict[str, Any], compared: PairedDifference, note: str | None) -> MetricComparison:
    """The comparison with its means and interval, regressed or improved by the rule of the module docstring."""
    gated, drop, tolerance = not fields["informational"], -compared.difference, fields["tolerance"]
    return MetricComparison(
        **fields,
        baseline_mean=compared.baseline_mean,
        current_mean=compared.current_mean,
        difference=compared.difference,
        ci_low=compared.low,
        ci_high=compared.high,
        regressed=gated and drop > tolerance + _FLOAT_NOISE and compared.high < 0.0,
        improved=gated and -drop > tolerance + _FLOAT_NOISE and compared.low > 0.0,
        note=note,
    )


# --------------------------------------------------------------------------------------------- recorded traffic
def _recorded(report: RunReport) -> bool:
    """A run of recorded traffic: every case was read from recorded spans or sessions."""
    return bool(report.cases) and all(case.recorded_from for case in report.cases)


def _compare_recorded(
    baseline_side: tuple[RunReport, CaseRuns],
    current_side: tuple[RunReport, CaseRuns],
    settings: _Settings,
    baseline_reason: str | None,
) -> RegressionReport:
    """Two runs of recorded traffic scored different sessions: nothing pairs, so each metric's scores are
    compared as two samples, and the pass rates side by side; no case flips."""
    (baseline, baseline_runs), (current, current_runs) = baseline_side, current_side
    before = case_scores(baseline_runs, list(baseline_runs))
    after = case_scores(current_runs, list(current_runs))
    informational = informational_metrics([baseline_runs], list(baseline_runs)) | informational_metrics(
        [current_runs], list(current_runs)
    )
    informational |= settings.uncalibrated
    metrics = [
        _compare_samples(
            name, _scored(before, name), _scored(after, name), informational=name in informational, settings=settings
        )
        for name in dict.fromkeys([*after, *before])  # the current run's order, then the baseline's
    ]
    rates = f"pass rate {baseline.summary.pass_rate:.1%} → {current.summary.pass_rate:.1%}"
    sessions = f"{len(baseline_runs)} baseline and {len(current_runs)} current sessions"
    return RegressionReport(
        baseline_run_id=baseline.run_id,
        current_run_id=current.run_id,
        baseline_reason=baseline_reason,
        confidence=settings.confidence,
        resamples=settings.resamples,
        seed=settings.seed,
        metrics=metrics,
        cases=[],
        notes=[
            f"recorded traffic: {sessions} compared as samples, not case by case ({rates})",
            *_uncalibrated_notes(current),
        ],
    )


def _scored(scores: Mapping[str, Mapping[CaseKey, float | None]], name: str) -> list[float]:
    """The case scores of one metric, the cases it did not score left out."""
    return [value for value in scores.get(name, {}).values() if value is not None]


def _compare_samples(
    name: str, before: list[float], after: list[float], *, informational: bool, settings: _Settings
) -> MetricComparison:
    fields: dict[str, Any] = {"metric_name": name, "tolerance": settings.tolerance_of(name)}
    fields.update(informational=informational, paired_cases=0)
    if not before or not after:
        return MetricComparison(**fields, note="not scored in both runs")
    compared = unpaired_difference(
        before, after, confidence=settings.confidence, resamples=settings.resamples, seed=settings.seed
    )
    return _judged(fields, compared, note=f"unpaired: {len(before)} baseline against {len(after)} current scores")


# -------------------------------------------------------------------------------------------------- cases
def _compare_case(
    key: CaseKey, baseline: Sequence[CaseResult], current: Sequence[CaseResult], flips: bool = True
) -> CaseComparison:
    """Passes on each side, pass@k, flips, flakiness and hard regression of one shared case (no flip, hence
    no hard regression, when `flips` is False: the runs judged pass and fail with different criteria)."""
    b_runs, b_passes = len(baseline), sum(run.passed for run in baseline)
    c_runs, c_passes = len(current), sum(run.passed for run in current)
    baseline_passes_all, current_passes_all = b_passes == b_runs, c_passes == c_runs
    baseline_fails, current_fails = flips and not baseline_passes_all, flips and not current_passes_all
    return CaseComparison(
        eval_set_id=key[0],
        eval_id=key[1],
        baseline_runs=b_runs,
        baseline_passes=b_passes,
        current_runs=c_runs,
        current_passes=c_passes,
        baseline_pass_rate=b_passes / b_runs,
        current_pass_rate=c_passes / c_runs,
        baseline_pass_at_k=pass_at_ks(b_runs, b_passes),
        pass_at_k=pass_at_ks(c_runs, c_passes),
        flaky=0 < c_passes < c_runs,
        flipped_to_failing=baseline_passes_all and current_fails,
        flipped_to_passing=baseline_fails and current_passes_all,
        hard_regression=flips and baseline_passes_all and c_passes == 0,
    )


def _ref(key: CaseKey) -> CaseRef:
    return CaseRef(eval_set_id=key[0], eval_id=key[1])


def _notes(baseline: RunReport, current: RunReport, shared: Sequence[CaseKey]) -> list[str]:
    notes = []
    if not shared:
        notes.append("no shared cases: nothing was compared and nothing regressed")
    if baseline.num_runs != current.num_runs:
        notes.append(
            f"runs per case differ (baseline {baseline.num_runs}, current {current.num_runs}): "
            "pass rates and pass@k use each side's own runs"
        )
    return notes
