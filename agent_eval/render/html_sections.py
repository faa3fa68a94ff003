"""Parts of the HTML report: the regression check, repeated runs, reused invocations, unscored criteria, the
case filter and the trajectories of a turn.

Each function returns an HTML fragment (every text escaped) for `render.html`, or "" when there is nothing to
show: the regression check only for a run compared with a baseline (or told there was none comparable, see
`render.verdict`), pass@k only when cases ran more than once, the cache note and a case's "cached" badge only
when invocations were reused, a case's "not evaluated" block only when a criterion could not score it.

The case filter is the page's only script (`CASE_FILTER_SCRIPT`, inline, no network): buttons that show the
failed, not evaluated or flaky case runs (or all), and a search box over each case run's text. Its bar is
`hidden` until the script shows it, so a page read without scripts shows every case run and no dead controls.

Trajectories (`trajectories`): each call of a turn is marked by the multiset alignment of `results.tool_calls.align`
(matched, missing, extra); a missing expected call and an extra actual call of the same tool are one call made
with other arguments, marked "changed" on both sides, the actual one with the arguments that differ
(`results.tool_calls.argument_diff`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC
from html import escape
from typing import Any

from google.genai import types as genai_types

from agent_eval.render.console import cache_line, format_usd
from agent_eval.render.html_charts import CaseCost, cost_chart
from agent_eval.render.html_efficiency import efficiency_badges, efficiency_table
from agent_eval.render.verdict import NO_COMPARABLE_BASELINE, regression_test, regression_verdict
from agent_eval.results.aggregate import case_cost_parts, metric_judge_costs
from agent_eval.results.agreement_model import JudgeAgreement
from agent_eval.results.model import CaseResult, MetricResult, RunReport, case_anchor
from agent_eval.results.pricing import stored_prices
from agent_eval.results.tool_calls import Call, align, argument_diff, format_call
from agent_eval.schema import EvalStatus, Invocation, ModelUsage, tool_calls_of

__all__ = [
    "CASE_FILTER_SCRIPT",
    "cache_note",
    "cached_badge",
    "case_filter_bar",
    "failures_first",
    "is_flaky",
    "regression_section",
    "repeated_runs_note",
    "trajectories",
    "unscored_block",
    "unscored_chips",
]

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
    """The card of the comparison with the baseline: the verdict (and a badge per cost or latency regression), the
    test, each metric, cost per case run and per-turn latency, the case lists, notes."""
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
    badge += efficiency_badges(payload.get("efficiency") or {})
    why = f" ({_e(payload['baseline_reason'])})" if payload.get("baseline_reason") else ""
    intro = (
        f'<p>against baseline run <span class="mono">{_e(payload.get("baseline_run_id"))}</span>{why} · '
        f"test: {_e(regression_test(payload))}</p>"
    )
    return (
        f'<section class="card regression"><h2>Regression check {badge}</h2>{intro}'
        f"{_metric_table(payload.get('metrics') or [])}{efficiency_table(payload.get('efficiency') or {})}"
        f"{_case_lists(payload)}{_notes(payload)}</section>"
    )


def judges_section(report: RunReport) -> str:
    """The card of the judges' agreement with people (`RunReport.judge_agreement`): one row per judged metric (and
    rubric) with kappa and its interval, agreement, balanced accuracy, true-pass and true-fail rates, and the
    judge's self-consistency; or why it is not measured; first, each criterion whose judge is not calibrated.
    Empty when the run has neither."""
    uncalibrated = report.summary.uncalibrated_judges
    if not report.judge_agreement and not uncalibrated:
        return ""
    gated = "".join(f"<li>{_e(reason)}</li>" for reason in uncalibrated.values())
    notes = f'<ul class="uncalibrated">{gated}</ul>' if gated else ""
    head = (
        "<tr><th>criterion</th><th>judge</th><th>labels</th><th>kappa [95% CI]</th><th>agreement</th>"
        "<th>balanced accuracy</th><th>true pass</th><th>true fail</th><th>self-consistency</th></tr>"
    )
    rows = "".join(_judge_row(agreement) for agreement in report.judge_agreement)
    table = f'<div class="table-scroll"><table class="compare">{head}{rows}</table></div>' if rows else ""
    return (
        '<section class="card judges"><h2>Judges</h2><p>How far each LLM judge of this run agrees with human labels '
        f"(<code>agent-eval label RUN_ID</code> adds labels).</p>{notes}{table}</section>"
    )


def _judge_row(agreement: JudgeAgreement) -> str:
    name = agreement.metric + (f" / {agreement.rubric_id}" if agreement.rubric_id else "")
    cells = f"<td>{_e(name)}</td><td>{_e(agreement.judge_description)}</td><td>{agreement.labels}</td>"
    binary = agreement.binary
    if binary.insufficient or binary.kappa is None:
        why = _e(binary.insufficient or "kappa undefined")
        return f'<tr class="not-measured">{cells}<td colspan="6">not measured: {why}</td></tr>'
    figures = (binary.agreement, binary.balanced_accuracy, binary.true_pass_rate, binary.true_fail_rate)
    shares = "".join(f"<td>{_share(value)}</td>" for value in (*figures, agreement.self_consistency))
    return f"<tr>{cells}<td>{binary.kappa_text()}</td>{shares}</tr>"


def _share(value: float | None) -> str:
    return "–" if value is None else f"{value:.0%}"


CaseCosts = list[tuple[CaseResult, float | None, float | None]]
"""Each case run with its agent and judge dollars (`case_cost_parts`: 0 for a side without tokens, None unknown)."""


def cost_section(report: RunReport) -> str:
    """The card of what the run cost (`RunSummary.cost`): per side (agent, judges) and model, its calls, tokens and
    dollars, where the prices came from, then the costliest case runs (agent and judge tokens priced alike); empty
    when no call reported tokens."""
    summary = report.summary
    cost = summary.cost
    if cost is None:
        return ""
    prices = stored_prices(report.config)
    parts: CaseCosts = [(case, *case_cost_parts(case, prices)) for case in report.cases]
    head = "<tr><th>who</th><th>model</th><th>calls</th><th>input</th><th>cached</th><th>output</th><th>thinking</th>"
    head += "<th>cost</th></tr>"
    rows = "".join(
        _cost_row(who, model, usage, priced.usd if (priced := costs.get(model)) else None)
        for who, used, costs in (
            ("agent", summary.agent_tokens, cost.agent),
            ("judges", summary.judge_tokens, cost.judges),
        )
        for model, usage in used.items()
    )
    total = f"total {format_usd(cost.total_usd)} · prices: {_e(cost.table)}"
    unpriced = (
        f" · no price for {_e(', '.join(cost.unpriced))} (the config's <code>pricing</code>)" if cost.unpriced else ""
    )
    return (
        f'<section class="card cost"><h2>Cost</h2><p>{total}{unpriced}</p>'
        f'<div class="table-scroll"><table class="compare">{head}{rows}</table></div>{_per_criterion(report)}'
        f"{_case_cost_chart(parts)}{_costliest(parts)}</section>"
    )


def _per_criterion(report: RunReport) -> str:
    """The judges' calls, tokens and dollars per judged criterion (empty: no judge call)."""
    costs = metric_judge_costs(report.cases, stored_prices(report.config))
    if not costs:
        return ""
    head = "<tr><th>judged criterion</th><th>calls</th><th>input</th><th>output</th><th>cost</th></tr>"
    rows = "".join(
        f"<tr><td>{_e(name)}</td><td>{usage.calls:,}</td><td>{_count(usage.input_tokens)}</td>"
        f"<td>{_count(usage.output_tokens)}</td><td>{format_usd(usd)}</td></tr>"
        for name, (usage, usd) in costs.items()
    )
    return f'<div class="table-scroll"><table class="compare">{head}{rows}</table></div>'


def _count(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


def _case_cost_chart(parts: CaseCosts) -> str:
    """Each case run's agent and judge dollars as a column linked to it (empty when a cost is unknown: a chart
    of part of the costs would mislead)."""
    costs = [
        CaseCost(f"{case.eval_set_id} / {case.eval_id} #{case.run_index}", case_anchor(case), agent, judges)
        for case, agent, judges in parts
        if agent is not None and judges is not None
    ]
    if len(costs) < len(parts):
        return ""
    chart = cost_chart(costs)
    intro = "<p>Cost per case run (agent below, judges above; a column links to its case run):</p>"
    return intro + chart if chart else ""


def _cost_row(who: str, model: str, usage: ModelUsage, usd: float | None) -> str:
    counts = (usage.calls, usage.input_tokens, usage.cached_input_tokens, usage.output_tokens, usage.thinking_tokens)
    cells = "".join(f"<td>{'?' if count is None else f'{count:,}'}</td>" for count in counts)
    return f"<tr><td>{who}</td><td>{_e(model)}</td>{cells}<td>{format_usd(usd)}</td></tr>"


def _costliest(parts: CaseCosts, count: int = 5) -> str:
    """The `count` case runs that cost the most (their agent and judge tokens priced as the run's), as links;
    a case run whose cost is unknown, or nothing, is not one."""
    priced = [(agent + judges, case) for case, agent, judges in parts if agent is not None and judges is not None]
    known = sorted(((usd, case) for usd, case in priced if usd), key=lambda pair: -pair[0])[:count]
    if not known:
        return ""
    items = "".join(
        f'<li><a href="#case-{_e(case_anchor(case))}">{_e(case.eval_set_id)} / {_e(case.eval_id)}</a>'
        f" #{case.run_index}: {format_usd(usd)}</li>"
        for usd, case in known
    )
    return f"<p>The costliest case runs:</p><ol>{items}</ol>"


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
    return f'<div class="table-scroll"><table class="compare">{head}{rows}</table></div>'


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


# ----------------------------------------------------------------------------------------------- case filter
_LEADING = {EvalStatus.FAILED: 0, EvalStatus.NOT_EVALUATED: 1}
_FILTERS = (("failed", "failed"), ("not-evaluated", "not evaluated"), ("flaky", "flaky"), ("all", "all"))

CASE_FILTER_SCRIPT = """(function () {
  var bar = document.getElementById("case-filter");
  if (!bar) return;
  var rows = Array.prototype.slice.call(document.querySelectorAll("details.case"));
  var buttons = Array.prototype.slice.call(bar.querySelectorAll("button[data-filter]"));
  var search = document.getElementById("case-search");
  var nothing = document.getElementById("no-case-matches");
  var chosen = "all";
  function kept(row, words) {
    if (chosen !== "all" && !row.classList.contains(chosen)) return false;
    var text = row.textContent.toLowerCase();
    return words.every(function (word) { return text.indexOf(word) !== -1; });
  }
  function apply() {
    var words = search.value.toLowerCase().split(/\\s+/).filter(Boolean);
    var shown = 0;
    rows.forEach(function (row) { row.hidden = !kept(row, words); shown += row.hidden ? 0 : 1; });
    buttons.forEach(function (button) {
      button.setAttribute("aria-pressed", String(button.getAttribute("data-filter") === chosen));
    });
    nothing.hidden = shown > 0;
  }
  buttons.forEach(function (button) {
    button.addEventListener("click", function () { chosen = button.getAttribute("data-filter"); apply(); });
  });
  search.addEventListener("input", apply);
  bar.hidden = false;
  apply();
})();"""
"""Shows the case filter bar and applies its buttons and search box to the `details.case` rows (by class)."""


def failures_first(cases: Sequence[CaseResult]) -> list[CaseResult]:
    """The failed case runs, then those not evaluated, then the rest, each group in the report's order."""
    return sorted(cases, key=lambda case: _LEADING.get(EvalStatus(case.status), len(_LEADING)))


def is_flaky(case: CaseResult, report: RunReport) -> bool:
    """Whether the case both passed and failed across its runs (`RunSummary.flaky_cases`)."""
    return f"{case.eval_set_id}/{case.eval_id}" in report.summary.flaky_cases


def _filter_counts(report: RunReport) -> dict[str, int]:
    statuses = [EvalStatus(case.status) for case in report.cases]
    return {
        "failed": statuses.count(EvalStatus.FAILED),
        "not-evaluated": statuses.count(EvalStatus.NOT_EVALUATED),
        "flaky": sum(is_flaky(case, report) for case in report.cases),
        "all": len(statuses),
    }


def case_filter_bar(report: RunReport) -> str:
    """The filter buttons (each with its count of case runs), the search box and the "no match" line; hidden
    until `CASE_FILTER_SCRIPT` runs."""
    counts = _filter_counts(report)
    buttons = "".join(
        f'<button type="button" data-filter="{key}" aria-pressed="{str(key == "all").lower()}">{label} '
        f"<b>{counts[key]}</b></button>"
        for key, label in _FILTERS
    )
    search = (
        '<input type="search" id="case-search" aria-label="search the case runs" '
        'placeholder="search: case id, metric, tool, text">'
    )
    return (
        f'<div class="filters" id="case-filter" role="toolbar" aria-label="show case runs" hidden>{buttons}{search}'
        '</div><p class="none" id="no-case-matches" hidden>no case run matches</p>'
    )


# ---------------------------------------------------------------------------------------------- trajectories
_MARKS = {"matched": "✓", "missing": "✗", "extra": "+", "changed": "≠", "plain": "•"}


def _calls(invocation: Invocation) -> list[Call]:
    return [(call.name or "", call.args or {}) for call in tool_calls_of(invocation)]


def _shown(call: Call) -> str:
    return format_call(genai_types.FunctionCall(name=call[0], args=dict(call[1])))


def _expected_marks(reference: Sequence[Call], missing: Sequence[Call]) -> list[str]:
    """Mark each reference call matched or missing; `align` leaves the last equal copies unmatched."""
    left, marks = list(missing), []
    for call in reversed(reference):
        if call in left:
            left.remove(call)
            marks.append("missing")
        else:
            marks.append("matched")
    return marks[::-1]


def _changed_pairs(
    reference: Sequence[Call], expected_marks: Sequence[str], predicted: Sequence[Call], actual_marks: Sequence[str]
) -> dict[int, int]:
    """Each missing expected call paired with the first unpaired extra actual call of the same tool (the call
    made with other arguments), as expected position → actual position."""
    extras = [index for index, mark in enumerate(actual_marks) if mark == "extra"]
    pairs: dict[int, int] = {}
    for position, mark in enumerate(expected_marks):
        if mark != "missing":
            continue
        found = next((i for i in extras if predicted[i][0] == reference[position][0]), None)
        if found is not None:
            extras.remove(found)
            pairs[position] = found
    return pairs


def _call_item(call: Call, mark: str, diff: Sequence[str]) -> str:
    lines = "".join(f'<span class="arg-diff">{_e(line)}</span>' for line in diff)
    shown = f'<span class="mark">{_MARKS[mark]}</span>{_e(_shown(call))}{lines}'
    return f'<li class="call {mark}" title="{mark}">{shown}</li>'


def _call_list(calls: Sequence[Call], marks: Sequence[str], diffs: Mapping[int, list[str]] | None = None) -> str:
    if not calls:
        return '<p class="none">no tool calls</p>'
    diffs = diffs or {}
    items = "".join(
        _call_item(call, mark, diffs.get(index, []))
        for index, (call, mark) in enumerate(zip(calls, marks, strict=True))
    )
    return f'<ol class="calls">{items}</ol>'


def trajectories(expected: Invocation | None, actual: Invocation | None) -> tuple[str, str]:
    """The expected and actual call lists of a turn, marked by the alignment when both turns exist (module
    docstring); a call made with other arguments lists, under the actual call, each argument that differs."""
    reference = _calls(expected) if expected is not None else []
    predicted = _calls(actual) if actual is not None else []
    if expected is None or actual is None:
        return _call_list(reference, ["plain"] * len(reference)), _call_list(predicted, ["plain"] * len(predicted))
    alignment = align(predicted, reference)
    extra = set(alignment.unexpected_at)
    expected_marks = _expected_marks(reference, alignment.missing)
    actual_marks = ["extra" if index in extra else "matched" for index in range(len(predicted))]
    diffs: dict[int, list[str]] = {}
    for position, index in _changed_pairs(reference, expected_marks, predicted, actual_marks).items():
        expected_marks[position] = actual_marks[index] = "changed"
        diffs[index] = argument_diff(reference[position], predicted[index])
    return _call_list(reference, expected_marks), _call_list(predicted, actual_marks, diffs)
