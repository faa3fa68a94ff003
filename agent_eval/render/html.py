"""The run report as one self-contained HTML page: inline CSS, SVG and one small script, no network.

Sections: the run summary (with pass@k and flaky cases when cases ran more than once, the invocations reused
from earlier evaluations, which config scored which eval set and which mode judged each of ADK's judged
metrics), the regression check against the baseline (`render.html_sections`), the pass rate of
each metric (bars), the history of the same eval set(s) (a trend of each metric's mean across runs), and every
case run as a collapsible block, failures first, then the case runs not evaluated (both open), then the rest,
each group in eval-set order. A filter bar (failed / not evaluated / flaky / all, and a search box; the page's
only script, inline) narrows the case runs; without scripts every case run shows. A case run block has a
"not evaluated" badge, each criterion that could not score it with the reason, a "cached" badge on a reused
invocation, and, per turn, the user's message, the expected and actual trajectories side by side (calls marked
matched / missing / extra by the multiset alignment of `results.tool_calls.align`, or changed: the same tool
called with other arguments, with the arguments that differ), the expected and actual responses, and every
metric's score, threshold, status and explanation (and its judge mode, for a judged metric). All text from
agents, users, eval files and metrics is HTML-escaped.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from html import escape
from pathlib import Path

from agent_eval.render.console import describe_judge_modes
from agent_eval.render.html_charts import HistoryPoint, bar_chart, history_chart, merge_history, metric_tallies
from agent_eval.render.html_sections import (
    CASE_FILTER_SCRIPT,
    cache_note,
    cached_badge,
    case_filter_bar,
    cost_section,
    failures_first,
    is_flaky,
    judges_section,
    regression_section,
    repeated_runs_note,
    trajectories,
    unscored_block,
    unscored_chips,
)
from agent_eval.results.model import CaseResult, MetricResult, RunReport, case_anchor
from agent_eval.results.run_configs import describe_configs
from agent_eval.schema import EvalStatus, Invocation, content_text

__all__ = ["HistoryPoint", "render_html", "write_html"]

_CSS = """
:root{--ok:#16a34a;--ok-bg:#dcfce7;--bad:#dc2626;--bad-bg:#fee2e2;--na:#64748b;--na-bg:#f1f5f9;--info:#2563eb;
--info-bg:#dbeafe;--extra:#b45309;--extra-bg:#fef3c7;--ink:#0f172a;--muted:#64748b;--line:#e2e8f0;--page:#f8fafc}
*{box-sizing:border-box}
body{margin:0;background:var(--page);color:var(--ink);
font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,"Liberation Sans",sans-serif}
main{max-width:1180px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0}h2{font-size:17px;margin:0 0 12px}h3{font-size:15px;margin:18px 0 8px}
code,pre,.mono,.call{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace;
font-size:12.5px}
pre{white-space:pre-wrap;word-break:break-word;margin:0}
header{display:flex;align-items:center;gap:12px;margin-bottom:16px}header .run{color:var(--muted)}
.card{background:#fff;border:1px solid var(--line);border-radius:10px;padding:16px 18px;margin-bottom:16px}
.stats{display:grid;grid-template-columns:repeat(auto-fit,minmax(130px,1fr));gap:10px;margin-bottom:14px}
.stat{border:1px solid var(--line);border-radius:8px;padding:8px 12px}
.stat b{display:block;font-size:22px}.stat span{color:var(--muted);font-size:12px;text-transform:uppercase}
.stat.passed b{color:var(--ok)}.stat.failed b{color:var(--bad)}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;margin:0}
dl.meta dt{color:var(--muted)}dl.meta dd{margin:0;word-break:break-all}
.badge{display:inline-block;padding:1px 8px;border-radius:999px;font-size:12px;font-weight:600;white-space:nowrap}
.passed>.badge,.badge.passed{background:var(--ok-bg);color:var(--ok)}
.failed>.badge,.badge.failed{background:var(--bad-bg);color:var(--bad)}
.not-evaluated>.badge,.badge.not-evaluated{background:var(--na-bg);color:var(--na)}
.informational>.badge,.badge.informational{background:var(--info-bg);color:var(--info)}
.chart{max-width:100%;height:auto}.chart .label{font-size:13px;fill:#0f172a}
.chart .note,.chart .tick{font-size:12px;fill:#475569}.chart .grid{stroke:#e2e8f0}
.legend{list-style:none;display:flex;flex-wrap:wrap;gap:6px 18px;padding:0;margin:8px 0 0 48px;font-size:13px}
.swatch{display:inline-block;width:12px;height:12px;border-radius:3px;margin-right:6px;vertical-align:-1px}
details.case{background:#fff;border:1px solid var(--line);border-left:4px solid var(--na);border-radius:8px;
margin:8px 0}
details.case.passed{border-left-color:var(--ok)}details.case.failed{border-left-color:var(--bad)}
details.case>summary{cursor:pointer;padding:10px 14px;display:flex;gap:10px;align-items:center;flex-wrap:wrap}
details.case>summary::before{content:"▸";color:var(--muted)}details.case[open]>summary::before{content:"▾"}
details.case>summary::-webkit-details-marker{display:none}details.case>summary .id{font-weight:600}
details.case>summary .muted{margin-left:auto}
.case-body{padding:0 14px 14px}.muted{color:var(--muted);font-size:12.5px}
.chip{font-size:12px;padding:1px 6px;border-radius:4px;background:var(--bad-bg);color:var(--bad)}
.chip.na{background:var(--na-bg);color:var(--na)}.badge.cached{background:var(--extra-bg);color:var(--extra)}
td.failed{color:var(--bad);font-weight:600}td.passed{color:var(--ok);font-weight:600}
.unscored{background:var(--na-bg);border-radius:6px;padding:8px 10px;margin-top:10px}
.turn{border-top:1px solid var(--line);padding-top:10px;margin-top:10px}
.turn-head{display:flex;gap:10px;align-items:baseline;flex-wrap:wrap}
.user{background:#eff6ff;border-radius:6px;padding:6px 10px;margin:6px 0}
.side{display:grid;grid-template-columns:1fr 1fr;gap:12px}.side h4{margin:6px 0 4px;font-size:12px;color:var(--muted);
text-transform:uppercase;letter-spacing:.04em}
ol.calls{list-style:none;padding:0;margin:0}
.call{border:1px solid var(--line);border-left-width:4px;border-radius:4px;padding:3px 8px;margin:3px 0;
word-break:break-word}
.call .mark{display:inline-block;width:1.3em;font-weight:700}
.call.matched{border-left-color:var(--ok);background:#f0fdf4}.call.matched .mark{color:var(--ok)}
.call.missing{border-left-color:var(--bad);background:var(--bad-bg)}.call.missing .mark{color:var(--bad)}
.call.extra{border-left-color:var(--extra);background:var(--extra-bg)}.call.extra .mark{color:var(--extra)}
.response{border:1px solid var(--line);border-radius:4px;padding:6px 8px;white-space:pre-wrap;word-break:break-word}
.none{color:var(--muted);font-style:italic}
table{border-collapse:collapse;width:100%;margin-top:10px;table-layout:fixed}
th,td{text-align:left;padding:5px 8px;vertical-align:top}
th{font-size:12px;color:var(--muted);border-bottom:1px solid var(--line)}td{border-bottom:1px solid #f1f5f9}
td.num{font-variant-numeric:tabular-nums;white-space:nowrap}
.error{background:var(--bad-bg);border-radius:6px;padding:8px 10px;margin-top:10px;color:#7f1d1d}
[hidden]{display:none!important}
.call.changed{border-left-color:var(--info);background:var(--info-bg)}.call.changed .mark{color:var(--info)}
.arg-diff{display:block;margin-left:1.3em;font-weight:600;color:#1e3a8a}
td.mono{overflow-wrap:anywhere}.table-scroll{overflow-x:auto}table.compare{table-layout:auto}
.filters{display:flex;flex-wrap:wrap;gap:6px;align-items:center;margin:0 0 10px}
.filters button{font:inherit;font-size:13px;border:1px solid var(--line);border-radius:999px;background:#fff;
padding:2px 10px;cursor:pointer}.filters button[aria-pressed="true"]{background:var(--ink);color:#fff}
.filters input{font:inherit;font-size:13px;border:1px solid var(--line);border-radius:6px;padding:3px 8px;
flex:1 1 240px}
"""

_STATUS_CLASS = {
    EvalStatus.PASSED: "passed",
    EvalStatus.FAILED: "failed",
    EvalStatus.NOT_EVALUATED: "not-evaluated",
    EvalStatus.INFORMATIONAL: "informational",
}


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def _badge(status: EvalStatus) -> str:
    name = EvalStatus(status).name.replace("_", " ").lower()
    return f'<span class="badge {_STATUS_CLASS[EvalStatus(status)]}">{name}</span>'


def _score(value: float | None, spec: str = ".3f") -> str:
    return "–" if value is None else format(value, spec)


def _when(moment: datetime) -> str:
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return f"{aware.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"


# --------------------------------------------------------------------------------------------------- summary
def _run_status(report: RunReport) -> EvalStatus:
    """FAILED when a case run failed; NOT_EVALUATED when a criterion scored nothing; PASSED otherwise."""
    if not report.all_passed():
        return EvalStatus.FAILED
    return EvalStatus.NOT_EVALUATED if report.unscored_criteria() else EvalStatus.PASSED


def _header(report: RunReport) -> str:
    status = _run_status(report)
    return (
        f"<header><h1>agent-eval report</h1>{_badge(status)}"
        f'<span class="run mono">run {_e(report.run_id)}</span></header>'
    )


def _stats(report: RunReport) -> str:
    s = report.summary
    cells = [
        ("total", s.total, ""),
        ("passed", s.passed, "passed"),
        ("failed", s.failed, "failed" if s.failed else ""),
        ("not evaluated", s.not_evaluated, "not-evaluated" if s.not_evaluated else ""),
        ("pass rate", f"{s.pass_rate:.1%}", "passed" if s.failed == 0 else "failed"),
        ("agent failures", s.agent_failures, "failed" if s.agent_failures else ""),
        ("mean latency", f"{s.mean_latency_seconds:.2f} s", ""),
    ]
    if s.pass_at_k:
        k = max(s.pass_at_k)
        cells.append((f"pass@{k}", f"{s.pass_at_k[k]:.3f}", ""))
        cells.append(("flaky cases", len(s.flaky_cases), "failed" if s.flaky_cases else ""))
    if s.cached_case_runs:
        cells.append(("cached", s.cached_case_runs, ""))
    items = "".join(
        f'<div class="stat {kind}"><b>{_e(value)}</b><span>{name}</span></div>' for name, value, kind in cells
    )
    return f'<div class="stats">{items}</div>'


def _meta(report: RunReport) -> str:
    seconds = (report.completed_at - report.started_at).total_seconds()
    rows = [
        ("agent", report.agent_reference),
        ("agent fingerprint", report.agent_fingerprint),
        ("eval sets", ", ".join(report.eval_set_ids)),
        ("runs per case", str(report.num_runs)),
        ("config", describe_configs(report.config, report.eval_set_ids)),
        ("config hash", report.config_hash),
        ("started", _when(report.started_at)),
        ("completed", f"{_when(report.completed_at)} ({seconds:.1f} s)"),
    ]
    modes = describe_judge_modes(report)
    if modes:
        rows.append(("judge mode", modes))
    if report.flow_run_id:
        rows.append(("flow run", report.flow_run_id))
    items = "".join(f"<dt>{name}</dt><dd>{_e(value)}</dd>" for name, value in rows)
    config = _e(json.dumps(report.config, indent=2, sort_keys=True, ensure_ascii=False))
    return f'<dl class="meta">{items}</dl><details><summary class="muted">config</summary><pre>{config}</pre></details>'


def _summary_section(report: RunReport) -> str:
    notes = repeated_runs_note(report) + cache_note(report)
    return f'<section class="card"><h2>Summary</h2>{_stats(report)}{notes}{_meta(report)}</section>'


def _metrics_section(report: RunReport) -> str:
    tallies = metric_tallies(report)
    if not tallies:
        return '<section class="card"><h2>Pass rate per metric</h2><p class="none">no metric results</p></section>'
    return f'<section class="card"><h2>Pass rate per metric</h2>{bar_chart(tallies)}</section>'


def _history_section(report: RunReport, history: Sequence[HistoryPoint]) -> str:
    points = merge_history(history, HistoryPoint.from_report(report))
    title = f"History of {_e(', '.join(report.eval_set_ids))}"
    if len(points) < 2:
        return f'<section class="card"><h2>{title}</h2><p class="none">no earlier runs to compare with</p></section>'
    chart = history_chart(points)
    return f'<section class="card"><h2>{title} <span class="muted">{len(points)} runs</span></h2>{chart}</section>'


# ------------------------------------------------------------------------------------------------------ turns
def _response(invocation: Invocation | None) -> str:
    text = content_text(invocation.final_response) if invocation is not None else ""
    return f'<div class="response">{_e(text)}</div>' if text else '<p class="none">no response</p>'


def _column(title: str, invocation: Invocation | None, calls: str, absent: str) -> str:
    if invocation is None:
        return f'<div><h4>{title}</h4><p class="none">{absent}</p></div>'
    return f"<div><h4>{title} trajectory</h4>{calls}<h4>{title} response</h4>{_response(invocation)}</div>"


# ------------------------------------------------------------------------------------------------------ cases
def _turn_scores(metrics: Sequence[MetricResult], index: int) -> str:
    chips = [
        f'<span class="{_STATUS_CLASS[EvalStatus(m.per_invocation[index].status)]}">{_e(m.metric_name)} '
        f'<span class="badge">{_score(m.per_invocation[index].score)}</span></span>'
        for m in metrics
        if index < len(m.per_invocation)
    ]
    return f'<span class="muted">{" ".join(chips)}</span>' if chips else ""


def _turn(case: CaseResult, index: int, expected: Invocation | None, actual: Invocation | None) -> str:
    either = expected if expected is not None else actual
    user = content_text(either.user_content) if either is not None else ""
    turn_id = either.invocation_id if either is not None else ""
    reference, predicted = trajectories(expected, actual)
    absent_expected = "no expected turn" if case.expected_invocations is not None else "no expected conversation"
    return (
        f'<div class="turn"><div class="turn-head"><b>Turn {index + 1}</b>'
        f'<span class="muted mono">{_e(turn_id)}</span>{_turn_scores(case.metrics, index)}</div>'
        f'<div class="user"><span class="muted">user</span><pre>{_e(user)}</pre></div>'
        f'<div class="side">{_column("Expected", expected, reference, absent_expected)}'
        f"{_column('Actual', actual, predicted, 'no actual turn')}</div></div>"
    )


def _turns(case: CaseResult) -> str:
    expected = case.expected_invocations or []
    actual = case.agent_run.invocations
    count = max(len(expected), len(actual))
    return "".join(
        _turn(case, i, expected[i] if i < len(expected) else None, actual[i] if i < len(actual) else None)
        for i in range(count)
    )


def _metric_row(result: MetricResult) -> str:
    why = result.explanation or ""
    if result.error:
        why = f"{why}\nerror: {result.error}".strip()
    details = ""
    if result.details:
        dumped = _e(json.dumps(result.details, indent=2, default=str, ensure_ascii=False))
        details = f'<details><summary class="muted">details</summary><pre>{dumped}</pre></details>'
    mode = result.details.get("judge_mode")
    judged = f'<br><span class="muted">judge mode: {_e(mode)}</span>' if isinstance(mode, str) else ""
    return (
        f"<tr><td class='mono'>{_e(result.metric_name)}{judged}</td><td class='num'>{_score(result.score)}</td>"
        f"<td class='num'>{_score(result.threshold, 'g')}</td><td>{_badge(result.status)}</td>"
        f"<td><pre>{_e(why)}</pre>{details}</td></tr>"
    )


def _metrics_table(metrics: Sequence[MetricResult]) -> str:
    if not metrics:
        return '<p class="none">no metric results</p>'
    widths = "".join(f'<col style="width:{width}%">' for width in (26, 9, 9, 12, 44))
    head = "<tr><th>metric</th><th>score</th><th>threshold</th><th>status</th><th>explanation</th></tr>"
    return f"<table><colgroup>{widths}</colgroup>{head}{''.join(_metric_row(result) for result in metrics)}</table>"


def _case_summary(case: CaseResult, num_runs: int) -> str:
    run = f" · run {case.run_index + 1}/{num_runs}" if num_runs > 1 else ""
    chips = "".join(f'<span class="chip">{_e(m.metric_name)}</span>' for m in case.metrics if m.gates)
    if case.agent_run.error:
        chips = f'<span class="chip">{_error_title(case)}</span>' + chips
    chips += unscored_chips(case) + cached_badge(case)
    meta = f"{case.agent_run.latency_seconds:.2f} s"
    if case.agent_run.attempts > 1:
        meta += f" · {case.agent_run.attempts} attempts"
    if case.recorded_from:
        meta += f" · recorded at {case.recorded_from[0]}" + (" …" if len(case.recorded_from) > 1 else "")
    return (
        f'<summary class="{_STATUS_CLASS[EvalStatus(case.status)]}">{_badge(case.status)}'
        f'<span class="id mono">{_e(case.eval_set_id)} / {_e(case.eval_id)}{run}</span>{chips}'
        f'<span class="muted">{meta}</span></summary>'
    )


def _error_title(case: CaseResult) -> str:
    """`agent error`, or `not started` for a case run the run's budget did not start."""
    return "not started" if case.agent_run.not_started else "agent error"


def _case(case: CaseResult, report: RunReport) -> str:
    """The case run's block; its classes (status, `flaky`) are what the case filter selects on."""
    opened = " open" if case.status in (EvalStatus.FAILED, EvalStatus.NOT_EVALUATED) else ""
    kinds = _STATUS_CLASS[EvalStatus(case.status)] + (" flaky" if is_flaky(case, report) else "")
    error = unscored_block(case)
    if case.agent_run.error:
        error = f'<div class="error"><b>{_error_title(case)}</b><pre>{_e(case.agent_run.error)}</pre></div>'
    anchor = f'<a class="anchor" id="case-{_e(case_anchor(case))}"></a>'  # the costliest case runs link here
    return (
        f'{anchor}<details class="case {kinds}"{opened}>{_case_summary(case, report.num_runs)}'
        f'<div class="case-body">{error}{_turns(case)}{_metrics_table(case.metrics)}</div></details>'
    )


def _cases_section(report: RunReport) -> str:
    legend = (
        "failures first, then case runs not evaluated (both open) · calls: ✓ matched, ✗ missing (expected, not "
        "made), + extra (made, not expected), ≠ changed (the same tool, other arguments)"
    )
    cases = "".join(_case(case, report) for case in failures_first(report.cases))
    return f'<section><h2>Cases <span class="muted">{legend}</span></h2>{case_filter_bar(report)}{cases}</section>'


# ------------------------------------------------------------------------------------------------------- page
def render_html(report: RunReport, history: Sequence[HistoryPoint] = ()) -> str:
    """The run report as one self-contained HTML page (inline CSS, SVG and the case filter's script; no network).

    Args:
        report: the run to show.
        history: earlier runs of the same eval set(s), in any order; the current run is added to the trend
            when its `run_id` is not among them.

    Returns:
        The HTML document.
    """
    body = (
        _header(report)
        + _summary_section(report)
        + regression_section(report)
        + _metrics_section(report)
        + judges_section(report)
        + cost_section(report)
        + _history_section(report, history)
        + _cases_section(report)
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>agent-eval · {_e(report.run_id)}</title><style>{_CSS}</style></head>"
        f"<body><main>{body}</main><script>{CASE_FILTER_SCRIPT}</script></body></html>\n"
    )


def write_html(report: RunReport, path: str | Path, history: Sequence[HistoryPoint] = ()) -> Path:
    """Write `render_html(report, history)` to `path` (UTF-8), creating its folder.

    Returns:
        The path written.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_html(report, history), encoding="utf-8")
    return target
