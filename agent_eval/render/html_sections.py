"""Parts of the HTML report: the regression check, repeated runs, reused invocations, unscored criteria.

Each function returns an HTML fragment (every text escaped) for `render.html`, or "" when there is nothing to
show: the regression check only for a run compared with a baseline (or told there was none comparable, see
`render.verdict`), pass@k only when cases ran more than once, the cache note and a case's "cached" badge only
when invocations were reused, a case's "not evaluated" block only when a criterion could not score it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC
from html import escape
from typing import Any

from agent_eval.render.console import cache_line
from agent_eval.render.verdict import NO_COMPARABLE_BASELINE, regression_test, regression_verdict
from agent_eval.results.model import CaseResult, MetricResult, RunReport

__all__ = ["cache_note", "cached_badge", "regression_section", "repeated_runs_note", "unscored_block", "unscored_chips"]

_CASE_LISTS = (
    ("hard_regressions", "hard regressions"),
    ("flipped_to_failing", "flipped to failing"),
    ("flipped_to_passing", "flipped to passing"),
    ("added", "added"),
    ("removed", "removed"),
)


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def _signed(value: Any) -> str:
    return f"{value:+.3f}" if isinstance(value, int | float) else "–"


def _number(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, int | float) else "–"


def regression_section(report: RunReport) -> str:
    """The card of the comparison with the baseline: the verdict, the test, each metric, the case lists, notes."""
    payload = report.regression
    verdict = regression_verdict(payload)
    if payload is None or verdict is None:
        return ""
    if verdict == NO_COMPARABLE_BASELINE:
        why = _e(payload.get("summary") or verdict)
        badge = f'<span class="badge not-evaluated">{NO_COMPARABLE_BASELINE}</span>'
        return f'<section class="card regression"><h2>Regression check {badge}</h2><p>{why}</p></section>'
    regressed = bool(payload.get("regressed"))
    badge = f'<span class="badge {"failed" if regressed else "passed"}">{"regressed" if regressed else "ok"}</span>'
    why = f" ({_e(payload['baseline_reason'])})" if payload.get("baseline_reason") else ""
    intro = (
        f'<p>against baseline run <span class="mono">{_e(payload.get("baseline_run_id"))}</span>{why} · '
        f"test: {_e(regression_test(payload))}</p>"
    )
    return (
        f'<section class="card regression"><h2>Regression check {badge}</h2>{intro}'
        f"{_metric_table(payload.get('metrics') or [])}{_case_lists(payload)}{_notes(payload)}</section>"
    )


def _metric_row(metric: Mapping[str, Any]) -> str:
    low, high = metric.get("ci_low"), metric.get("ci_high")
    interval = f"[{_signed(low)}, {_signed(high)}]" if low is not None and high is not None else "–"
    verdict = "regressed" if metric.get("regressed") else "improved" if metric.get("improved") else "–"
    if metric.get("informational"):
        verdict = "informational"
    kind = {"regressed": "failed", "improved": "passed"}.get(verdict, "")
    note = f'<br><span class="muted">{_e(metric["note"])}</span>' if metric.get("note") else ""
    return (
        f"<tr><td class='mono'>{_e(metric.get('metric_name'))}{note}</td>"
        f"<td class='num'>{_number(metric.get('baseline_mean'))}</td>"
        f"<td class='num'>{_number(metric.get('current_mean'))}</td>"
        f"<td class='num'>{_signed(metric.get('difference'))}</td><td class='num'>{interval}</td>"
        f"<td class='num'>{_number(metric.get('tolerance'))}</td><td class='{kind}'>{verdict}</td></tr>"
    )


def _metric_table(metrics: Sequence[Any]) -> str:
    rows = "".join(_metric_row(metric) for metric in metrics if isinstance(metric, Mapping))
    if not rows:
        return '<p class="none">no metric compared</p>'
    head = (
        "<tr><th>metric</th><th>baseline</th><th>current</th><th>difference</th><th>interval</th>"
        "<th>tolerance</th><th>verdict</th></tr>"
    )
    return f"<table>{head}{rows}</table>"


def _case_lists(payload: Mapping[str, Any]) -> str:
    items = [
        f"<li>{title}: {_e(', '.join(str(label) for label in payload[key]))}</li>"
        for key, title in _CASE_LISTS
        if payload.get(key)
    ]
    flaky = [entry for entry in payload.get("flaky") or [] if isinstance(entry, Mapping)]
    if flaky:
        shown = ", ".join(f"{entry.get('case')} ({entry.get('passes')}/{entry.get('runs')} passed)" for entry in flaky)
        items.append(f"<li>flaky: {_e(shown)}</li>")
    return f"<ul>{''.join(items)}</ul>" if items else ""


def _notes(payload: Mapping[str, Any]) -> str:
    notes = [str(note) for note in payload.get("notes") or []]
    return "".join(f'<p class="muted">{_e(note)}</p>' for note in notes)


def repeated_runs_note(report: RunReport) -> str:
    """`pass@1 0.667 · pass@2 0.833 · flaky: 1 of 3 cases (set/a)`, when cases ran more than once."""
    summary = report.summary
    if not summary.pass_at_k:
        return ""
    parts = [f"pass@{k} {value:.3f}" for k, value in summary.pass_at_k.items()]
    cases = len({(case.eval_set_id, case.eval_id) for case in report.cases})
    flaky = f" ({', '.join(summary.flaky_cases)})" if summary.flaky_cases else ""
    parts.append(f"flaky: {len(summary.flaky_cases)} of {cases} cases{flaky}")
    return f'<p class="repeated">{_e(" · ".join(parts))}</p>'


def cache_note(report: RunReport) -> str:
    """The console's cache line, e.g. `12 of 33 invocations reused from run ab12cd34 (2026-12-02 21:14 UTC)`."""
    summary = report.summary
    if not summary.cached_case_runs:
        return ""
    line = cache_line(summary.cached_case_runs, summary.total, summary.cache_sources)
    return f'<p class="cache-note"><span class="badge cached">cached</span> {_e(line)}</p>'


def cached_badge(case: CaseResult) -> str:
    """A "cached" badge whose title names the run the invocation was reused from, and when it was made."""
    origin = case.agent_run.cached_from
    if origin is None:
        return ""
    title = f"reused from run {origin.run_id or '(unrecorded)'}"
    if origin.invoked_at is not None:
        moment = origin.invoked_at if origin.invoked_at.tzinfo else origin.invoked_at.replace(tzinfo=UTC)
        title += f" invoked {moment.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"
    return f'<span class="badge cached" title="{_e(title)}">cached</span>'


def _unscored(case: CaseResult) -> list[MetricResult]:
    return [] if case.agent_run.error else [m for m in case.metrics if m.unscored]


def unscored_chips(case: CaseResult) -> str:
    """A grey chip per criterion that could not score the case run, the reason as its title."""
    return "".join(
        f'<span class="chip na" title="not evaluated: {_e(m.reason or "no reason given")}">{_e(m.metric_name)}</span>'
        for m in _unscored(case)
    )


def unscored_block(case: CaseResult) -> str:
    """The criteria that could not score the case run, each with why (none for an agent that failed)."""
    unscored = _unscored(case)
    if not unscored:
        return ""
    items = "".join(f"<li><b>{_e(m.metric_name)}</b>: {_e(m.reason or 'no reason given')}</li>" for m in unscored)
    return f'<div class="unscored"><b>not evaluated</b><ul>{items}</ul></div>'
