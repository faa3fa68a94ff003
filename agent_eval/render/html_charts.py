"""Inline SVG charts for the HTML report: per-metric pass rates (stacked bars), a run-history trend, and the cost
of each case run (stacked columns, agent and judges, each linked to its case run).

Both charts are plain SVG strings (no JavaScript, no external resources); every label is escaped. Point and
bar details are in SVG `<title>` elements, which browsers show on hover.

Pass-rate rule: a metric's pass rate is passed / (passed + failed); results that were not evaluated (the agent
failed, the metric raised, the judge gave nothing usable, the metric does not apply) or are informational are
drawn as a grey segment and left out of the rate. A metric without any passed or failed result has no rate (n/a).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agent_eval.results.model import MetricResult, RunReport
from agent_eval.schema import EvalStatus

__all__ = [
    "PALETTE",
    "CaseCost",
    "HistoryPoint",
    "MetricTally",
    "bar_chart",
    "cost_chart",
    "history_chart",
    "merge_history",
    "metric_tallies",
]

PALETTE = ("#2563eb", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#65a30d", "#dc2626", "#475569")
"""Series colours of the trend chart, in order (the pass-rate series is drawn in dark grey, dashed)."""

_PASS, _FAIL, _OTHER, _INK, _GRID = "#16a34a", "#dc2626", "#cbd5e1", "#334155", "#e2e8f0"
_BAR_WIDTH, _LABEL_WIDTH, _ROW = 1080, 260, 30
_TREND_WIDTH, _TREND_HEIGHT, _PAD_LEFT, _PAD_RIGHT, _PAD_TOP, _PAD_BOTTOM = 1080, 300, 48, 48, 16, 46


class HistoryPoint(BaseModel):
    """One earlier (or the current) run of the same eval set(s), as the trend chart shows it.

    Attributes:
        run_id: the run's id.
        started_at: when the run started (a naive time is taken as UTC).
        pass_rate: the run's pass rate, 0 to 1.
        metric_means: each metric's mean score over the run's scored case runs.
    """

    model_config = ConfigDict(extra="forbid")

    run_id: str
    started_at: datetime
    pass_rate: float
    metric_means: dict[str, float] = Field(default_factory=dict)

    @field_validator("started_at")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)

    @classmethod
    def from_report(cls, report: RunReport) -> HistoryPoint:
        """The history point of a run report (its pass rate and average scores)."""
        return cls(
            run_id=report.run_id,
            started_at=report.started_at,
            pass_rate=report.summary.pass_rate,
            metric_means=dict(report.summary.avg_scores),
        )


@dataclass(frozen=True)
class MetricTally:
    """How one metric's results split over the case runs of a report."""

    name: str
    passed: int = 0
    failed: int = 0
    other: int = 0
    mean: float | None = None
    threshold: float | None = None

    @property
    def rate(self) -> float | None:
        """passed / (passed + failed), or None when nothing passed or failed."""
        scored = self.passed + self.failed
        return self.passed / scored if scored else None


def _tally(name: str, results: Sequence[MetricResult], mean: float | None) -> MetricTally:
    passed = sum(r.status is EvalStatus.PASSED for r in results)
    failed = sum(r.gates for r in results)
    threshold = next((r.threshold for r in results if r.threshold is not None), None)
    return MetricTally(name, passed, failed, len(results) - passed - failed, mean, threshold)


def metric_tallies(report: RunReport) -> list[MetricTally]:
    """Each metric of the report, in order of first appearance, with its passed / failed / other counts."""
    by_name: dict[str, list[MetricResult]] = {}
    for case in report.cases:
        for result in case.metrics:
            by_name.setdefault(result.metric_name, []).append(result)
    means = report.summary.avg_scores
    return [_tally(name, results, means.get(name)) for name, results in by_name.items()]


# ------------------------------------------------------------------------------------------------ bar chart
def _svg(width: int, height: int, label: str, body: list[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{escape(label)}" class="chart">' + "".join(body) + "</svg>"
    )


def _clip(text: str, limit: int = 34) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _segments(tally: MetricTally, x: float, y: float, width: float) -> list[str]:
    total = tally.passed + tally.failed + tally.other
    parts, left = [], x
    for count, colour in ((tally.passed, _PASS), (tally.failed, _FAIL), (tally.other, _OTHER)):
        if count:
            size = width * count / total
            parts.append(f'<rect x="{left:.1f}" y="{y}" width="{size:.1f}" height="16" fill="{colour}"/>')
            left += size
    return parts


def _bar_note(tally: MetricTally) -> str:
    rate = "n/a" if tally.rate is None else f"{tally.rate:.0%}"
    mean = "" if tally.mean is None else f" · mean {tally.mean:.3f}"
    return f"{rate} ({tally.passed}/{tally.passed + tally.failed}){mean}"


def _bar_row(index: int, tally: MetricTally) -> str:
    y, track = 8 + index * _ROW, _BAR_WIDTH - _LABEL_WIDTH - 240
    why = f"{tally.passed} passed, {tally.failed} failed, {tally.other} not evaluated or informational"
    parts = [
        f"<g><title>{escape(tally.name)}: {why}</title>",
        f'<text x="{_LABEL_WIDTH - 10}" y="{y + 12}" text-anchor="end" class="label">'
        f"{escape(_clip(tally.name))}</text>",
        f'<rect x="{_LABEL_WIDTH}" y="{y}" width="{track}" height="16" fill="{_GRID}"/>',
        *_segments(tally, _LABEL_WIDTH, y, track),
        f'<text x="{_LABEL_WIDTH + track + 10}" y="{y + 12}" class="note">{escape(_bar_note(tally))}</text>',
        "</g>",
    ]
    return "".join(parts)


def bar_chart(tallies: Sequence[MetricTally]) -> str:
    """Horizontal stacked bars, one per metric: passed (green), failed (red), other (grey), and the rate."""
    rows = [_bar_row(index, tally) for index, tally in enumerate(tallies)]
    return _svg(_BAR_WIDTH, 16 + _ROW * len(tallies), "pass rate per metric", rows)


# ----------------------------------------------------------------------------------------------- cost chart
@dataclass(frozen=True)
class CaseCost:
    """One case run's column of the cost chart: its label, its anchor in the report, agent and judge dollars."""

    label: str
    anchor: str
    agent: float
    judges: float


_COST_HEIGHT, _COST_PLOT, _COST_MAX_COLUMN = 220, 170, 24


def cost_chart(costs: Sequence[CaseCost]) -> str:
    """One column per case run in report order, agent (blue) under judges (amber), scaled to the dearest; each
    column links to its case run and names its costs on hover. Empty without any cost above 0."""
    top = max((cost.agent + cost.judges for cost in costs), default=0.0)
    if top <= 0:
        return ""
    column = min(_COST_MAX_COLUMN, (_BAR_WIDTH - _PAD_LEFT) / len(costs))
    body = [
        f'<text x="4" y="14" class="note">${top:.4f}</text>',
        f'<line x1="{_PAD_LEFT}" y1="{_COST_PLOT + 20}" x2="{_BAR_WIDTH}" y2="{_COST_PLOT + 20}" stroke="{_GRID}"/>',
    ]
    for index, cost in enumerate(costs):
        body.append(_cost_column(cost, _PAD_LEFT + index * column, column, top))
    legend = f"agent ({PALETTE[0]}) and judges ({PALETTE[1]}) per case run, the dearest ${top:.4f}"
    return _svg(_BAR_WIDTH, _COST_HEIGHT, f"cost per case run: {legend}", body)


def _cost_column(cost: CaseCost, x: float, width: float, top: float) -> str:
    base, gap = _COST_PLOT + 20, max(width * 0.15, 0.5)
    agent, judges = _COST_PLOT * cost.agent / top, _COST_PLOT * cost.judges / top
    title = f"{cost.label}: agent ${cost.agent:.4f}, judges ${cost.judges:.4f}"
    shape = f'x="{x:.1f}" width="{width - gap:.1f}"'
    rects = [
        f'<rect {shape} y="{base - agent:.1f}" height="{agent:.1f}" fill="{PALETTE[0]}"/>',
        f'<rect {shape} y="{base - agent - judges:.1f}" height="{judges:.1f}" fill="{PALETTE[1]}"/>',
    ]
    return f'<a href="#case-{escape(cost.anchor)}"><g><title>{escape(title)}</title>{"".join(rects)}</g></a>'


# ---------------------------------------------------------------------------------------------- trend chart
def merge_history(history: Sequence[HistoryPoint], current: HistoryPoint) -> list[HistoryPoint]:
    """The history with the current run added (unless already there), oldest first."""
    points = list(history)
    if all(point.run_id != current.run_id for point in points):
        points.append(current)
    return sorted(points, key=lambda point: point.started_at)


def _series(points: Sequence[HistoryPoint]) -> list[tuple[str, list[float | None]]]:
    """`pass rate` first, then every metric in order of first appearance; None where a run lacks it."""
    names = list(dict.fromkeys(name for point in points for name in point.metric_means))
    series: list[tuple[str, list[float | None]]] = [("pass rate", [point.pass_rate for point in points])]
    series.extend((name, [point.metric_means.get(name) for point in points]) for name in names)
    return series


@dataclass(frozen=True)
class _Frame:
    """Maps run indexes and values to SVG coordinates."""

    count: int
    low: float
    high: float

    def x(self, index: int) -> float:
        span = _TREND_WIDTH - _PAD_LEFT - _PAD_RIGHT
        return _PAD_LEFT + (span / 2 if self.count == 1 else span * index / (self.count - 1))

    def y(self, value: float) -> float:
        span = _TREND_HEIGHT - _PAD_TOP - _PAD_BOTTOM
        return _PAD_TOP + span * (self.high - value) / (self.high - self.low)


def _frame(series: Sequence[tuple[str, list[float | None]]], count: int) -> _Frame:
    values = [value for _, column in series for value in column if value is not None]
    return _Frame(count, min([0.0, *values]), max([1.0, *values]))


def _grid(frame: _Frame) -> list[str]:
    parts = []
    for step in range(5):
        value = frame.low + (frame.high - frame.low) * step / 4
        y = frame.y(value)
        parts.append(
            f'<line x1="{_PAD_LEFT}" y1="{y:.1f}" x2="{_TREND_WIDTH - _PAD_RIGHT}" y2="{y:.1f}" class="grid"/>'
        )
        parts.append(f'<text x="{_PAD_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" class="tick">{value:.2g}</text>')
    return parts


def _x_labels(frame: _Frame, points: Sequence[HistoryPoint]) -> list[str]:
    every = max(1, -(-len(points) // 10))
    parts = []
    for index, point in enumerate(points):
        if index % every and index != len(points) - 1:
            continue
        when, x, y = point.started_at.astimezone(UTC), frame.x(index), _TREND_HEIGHT - _PAD_BOTTOM + 18
        parts.append(
            f'<text x="{x:.1f}" y="{y}" text-anchor="middle" class="tick">{when:%Y-%m-%d}'
            f'<tspan x="{x:.1f}" dy="14">{when:%H:%M}</tspan></text>'
        )
    return parts


def _line(
    frame: _Frame, name: str, values: list[float | None], colour: str, points: Sequence[HistoryPoint]
) -> list[str]:
    known = [(index, value) for index, value in enumerate(values) if value is not None]
    coords = " ".join(f"{frame.x(i):.1f},{frame.y(v):.1f}" for i, v in known)
    dash = ' stroke-dasharray="6 4"' if name == "pass rate" else ""
    parts = [f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>']
    for index, value in known:
        point = points[index]
        tip = f"{name} = {value:.3f} · run {point.run_id} · {point.started_at.astimezone(UTC):%Y-%m-%d %H:%M} UTC"
        parts.append(
            f'<circle cx="{frame.x(index):.1f}" cy="{frame.y(value):.1f}" r="4" fill="{colour}">'
            f"<title>{escape(tip)}</title></circle>"
        )
    return parts


def _legend(series: Sequence[tuple[str, list[float | None]]]) -> str:
    items = "".join(
        f'<li><span class="swatch" style="background:{_colour(index)}"></span>{escape(name)}</li>'
        for index, (name, _) in enumerate(series)
    )
    return f'<ul class="legend">{items}</ul>'


def _colour(index: int) -> str:
    return _INK if index == 0 else PALETTE[(index - 1) % len(PALETTE)]


def history_chart(points: Sequence[HistoryPoint]) -> str:
    """A trend chart of the pass rate (dashed) and each metric's mean across runs, oldest first, with a legend.

    Args:
        points: the runs to draw, oldest first (see `merge_history`); at least one.

    Returns:
        An SVG element followed by an HTML legend.
    """
    series = _series(points)
    frame = _frame(series, len(points))
    body = [*_grid(frame), *_x_labels(frame, points)]
    for index, (name, values) in enumerate(series):
        body.extend(_line(frame, name, values, _colour(index), points))
    return _svg(_TREND_WIDTH, _TREND_HEIGHT, "metric means across runs", body) + _legend(series)
