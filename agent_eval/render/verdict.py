"""The regression verdict stored with a run, in words, for `show`, the HTML report and `history`.

A run's comparison with its baseline is stored as a JSON payload (`RegressionReport.to_payload`, or the
no-baseline payload when no earlier run was comparable) in `RunReport.regression` and the store's
`runs.regression`. These functions only read that payload, so they render old runs and new ones alike:

- no payload: the run was not compared (nothing to say);
- a payload without `baseline_run_id`: "no comparable baseline" (its `summary` says why);
- otherwise "regressed vs RUN" or "ok vs RUN", the test used (the paired bootstrap of each metric's mean
  difference, its confidence, resamples, seed and tolerances, as far as the payload records them), and the
  comparison's own summary lines (each metric's means, difference and interval, the flipped cases, the verdict).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["NO_COMPARABLE_BASELINE", "regression_lines", "regression_test", "regression_verdict"]

NO_COMPARABLE_BASELINE = "no comparable baseline"


def regression_verdict(payload: Mapping[str, Any] | None) -> str | None:
    """`regressed vs RUN`, `ok vs RUN`, `no comparable baseline`, or None for a run that was not compared."""
    if not payload:
        return None
    baseline = payload.get("baseline_run_id")
    if not baseline:
        return NO_COMPARABLE_BASELINE
    return f"{'regressed' if payload.get('regressed') else 'ok'} vs {baseline}"


def regression_test(payload: Mapping[str, Any]) -> str:
    """The test behind the verdict, e.g. `paired bootstrap of each metric's mean difference, 95% CI (2000
    resamples, seed 0), tolerance 0.05`."""
    parts = ["paired bootstrap of each metric's mean difference"]
    confidence = payload.get("confidence")
    if isinstance(confidence, int | float):
        parts[0] += f", {round(confidence * 100, 6):g}% CI"
    settings = [f"{payload[key]} {key}" for key in ("resamples",) if payload.get(key) is not None]
    settings += [f"seed {payload['seed']}"] if payload.get("seed") is not None else []
    if settings:
        parts[0] += f" ({', '.join(settings)})"
    tolerances = _tolerances(payload.get("metrics") or [])
    if len(set(tolerances.values())) == 1:
        parts.append(f"tolerance {next(iter(tolerances.values())):g}")
    elif tolerances:
        parts.append("tolerance " + ", ".join(f"{name} {value:g}" for name, value in tolerances.items()))
    return ", ".join(parts)


def _tolerances(metrics: list[Any]) -> dict[str, float]:
    """Each gated metric's tolerance, in the payload's order."""
    return {
        str(metric["metric_name"]): float(metric["tolerance"])
        for metric in metrics
        if isinstance(metric, Mapping) and not metric.get("informational") and metric.get("tolerance") is not None
    }


def regression_lines(payload: Mapping[str, Any] | None) -> list[str]:
    """The comparison as console lines: `Regression check: VERDICT`, the test used, the comparison's summary
    (indented); one line for no comparable baseline; none for a run that was not compared."""
    verdict = regression_verdict(payload)
    if payload is None or verdict is None:
        return []
    summary = str(payload.get("summary") or "").splitlines()
    if verdict == NO_COMPARABLE_BASELINE:
        return [f"Regression check: {summary[0] if summary else verdict}", *(f"  {line}" for line in summary[1:])]
    return [f"Regression check: {verdict}", f"  test: {regression_test(payload)}", *(f"  {line}" for line in summary)]
