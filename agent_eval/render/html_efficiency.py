"""The cost and latency rows of the HTML report's regression check (`RegressionReport.to_payload()["efficiency"]`,
`agent_eval.compare.efficiency`): a badge per cost or latency regression, red when it fails the run, and a table of
cost per case run and p50 / p95 per-turn latency in both runs with each change, tolerance and verdict, or why one
was not compared (shown only when either run measured it). A payload of an earlier release has no such key: nothing
is shown. Every text is escaped.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from agent_eval.render.console import format_usd

__all__ = ["efficiency_badges", "efficiency_table"]


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def efficiency_badges(efficiency: Mapping[str, Any]) -> str:
    """A `cost regression` / `latency regression` badge for each that regressed: red when it fails the run."""
    badges = ""
    for kind in ("cost", "latency"):
        side = efficiency.get(kind)
        if isinstance(side, Mapping) and side.get("regressed"):
            tone = "failed" if side.get("fail_on_regression") else "not-evaluated"
            badges += f' <span class="badge {tone}">{kind} regression</span>'
    return badges


def efficiency_table(efficiency: Mapping[str, Any]) -> str:
    """Cost per case run and p50 / p95 latency per turn in both runs, each change, tolerance and verdict; or
    why one was not compared (when either run measured it). Empty for a payload without them."""
    cost, latency = efficiency.get("cost"), efficiency.get("latency")
    rows = _cost_comparison_row(cost) if isinstance(cost, Mapping) else ""
    rows += _latency_rows(latency) if isinstance(latency, Mapping) else ""
    if not rows:
        return ""
    head = "<tr><th>cost and latency</th><th>baseline</th><th>current</th><th>change</th><th>tolerance</th>"
    head += "<th>verdict</th></tr>"
    return f'<div class="table-scroll"><table class="compare efficiency">{head}{rows}</table></div>'


def _cost_comparison_row(cost: Mapping[str, Any]) -> str:
    if not cost.get("compared"):
        measured = cost.get("baseline_usd") is not None or cost.get("current_usd") is not None
        return _not_compared_row("cost per case run", cost.get("note")) if measured else ""
    figures = (format_usd(cost.get("baseline_usd")), format_usd(cost.get("current_usd")))
    return _efficiency_row("cost per case run", figures, cost.get("change"), cost, bool(cost.get("regressed")))


def _latency_rows(latency: Mapping[str, Any]) -> str:
    if not latency.get("compared"):
        timed = latency.get("baseline_turns") or latency.get("current_turns")
        return _not_compared_row("latency per turn", latency.get("note")) if timed else ""
    regressed = latency.get("regressed_percentiles") or []
    return "".join(
        _efficiency_row(
            f"latency {name} per turn",
            (_seconds(latency.get(f"baseline_{name}")), _seconds(latency.get(f"current_{name}"))),
            latency.get(f"{name}_change"),
            latency,
            name in regressed,
        )
        if latency.get(f"baseline_{name}") is not None
        else _not_compared_row(f"latency {name} per turn", latency.get("note"))
        for name in ("p50", "p95")
    )


def _efficiency_row(label: str, figures: tuple[str, str], change: Any, side: Mapping[str, Any], regressed: bool) -> str:
    verdict = ("regressed, fails the run" if side.get("fail_on_regression") else "regressed") if regressed else "–"
    kind = "failed" if regressed else ""
    return (
        f"<tr><td>{label}</td><td class='num'>{figures[0]}</td><td class='num'>{figures[1]}</td>"
        f"<td class='num'>{_relative(change)}</td><td class='num'>{_tolerance(side.get('tolerance'))}</td>"
        f"<td class='{kind}'>{verdict}</td></tr>"
    )


def _not_compared_row(label: str, note: Any) -> str:
    return f'<tr><td>{label}</td><td colspan="5" class="muted">not compared: {_e(note or "unknown")}</td></tr>'


def _relative(change: Any) -> str:
    """`+38%`, `-5%`, `+0%`; `+∞%` for a rise from 0 (a change of None)."""
    return f"{change:+.0%}" if isinstance(change, int | float) else "+∞%"


def _tolerance(value: Any) -> str:
    return f"+{value:.0%}" if isinstance(value, int | float) else "–"


def _seconds(value: Any) -> str:
    return f"{value:.2f} s" if isinstance(value, int | float) else "–"
