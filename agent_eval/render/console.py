"""The console summary (in the style of `adk eval` and ADK-Rust's `format_summary`) and artifact rows.

`format_summary` prints, in order: the run and agent, the totals (`Pass rate` is over the evaluated case runs,
the not-evaluated ones counted next to it), notes on the input (recorded traffic: turns read, traces skipped,
content not captured), pass@k and the flaky cases when cases ran more than once, agent failures, the
invocations reused from earlier evaluations, what the LLM judges did (when they were asked), which mode judged
each of ADK's judged metrics (when one ran), which config scored which eval set, the average scores,
each failed case run (a recorded one with where it was recorded) with the criteria that failed, each case run
that was not evaluated with the criteria that could not score it and why, and the regression check against the
baseline (`render.verdict`).

`format_table` lays out a console table (`agent-eval history`): every column at its natural width, or fitted
into a terminal's width by a priority order.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from agent_eval.render.verdict import regression_lines
from agent_eval.results.aggregate import case_cost, case_tokens
from agent_eval.results.agreement_model import JudgeAgreement
from agent_eval.results.model import CacheSource, CaseResult, MetricResult, RunReport
from agent_eval.results.pricing import RunCost, stored_prices
from agent_eval.results.run_configs import describe_configs
from agent_eval.schema import EvalStatus, ModelUsage

__all__ = [
    "TableColumn",
    "agreement_text",
    "cache_line",
    "case_run_limit_line",
    "cost_lines",
    "describe_judge_modes",
    "format_summary",
    "format_table",
    "format_usd",
    "judge_agreement_lines",
    "judge_limit_line",
    "judge_line",
    "summary_table_rows",
    "token_lines",
    "unscored_criteria_lines",
]

_MAX_EXPLANATION = 300
_MAX_LISTED = 10


def format_summary(report: RunReport) -> str:
    """Totals, pass rate, pass@k, reused invocations, judge modes, configs, average scores, each failed and
    not-evaluated case with its criteria, and the regression check (module docstring)."""
    s = report.summary
    lines = [
        f"agent-eval run {report.run_id}  eval sets: {', '.join(report.eval_set_ids)}",
        f"agent: {report.agent_reference}  runs per case: {report.num_runs}",
        f"Total: {s.total}  Passed: {s.passed}  Failed: {s.failed}"
        + (f"  Not evaluated: {s.not_evaluated}" if s.not_evaluated else "")
        + f"  Pass rate: {s.pass_rate:.1%}",
    ]
    if report.stopped:
        rerun = f"`agent-eval rerun {report.run_id[:12]} --only-failed` with a larger --budget or --max-tokens"
        lines.append(f"Stopped: {report.error} ({rerun} finishes it)")
    lines.extend(f"Input: {note}" for note in report.notes)
    lines.extend(_repeated_run_lines(report))
    if s.agent_failures:
        lines.append(f"Agent failures: {s.agent_failures}")
    if s.cached_case_runs:
        lines.append(cache_line(s.cached_case_runs, s.total, s.cache_sources))
    if s.judge.get("calls") or s.judge.get("cache_hits"):
        lines.append(judge_line(s.judge))
    if s.judge.get("concurrency"):
        lines.append(judge_limit_line(s.judge))
    if s.invocations.get("rate_limited") or s.invocations.get("lost"):
        lines.append(case_run_limit_line(s.invocations))
    lines.extend(token_lines(s.agent_tokens, s.judge_tokens))
    lines.extend(cost_lines(s.cost, sum(not case.agent_run.not_started for case in report.cases)))
    modes = describe_judge_modes(report)
    if modes:
        lines.append(f"Judge mode: {modes}")
    lines.extend(judge_agreement_lines(report.judge_agreement))
    lines.extend(f"Judge: {reason}" for reason in s.uncalibrated_judges.values())
    lines.append(f"Config: {describe_configs(report.config, report.eval_set_ids)}")
    lines.extend(_average_lines(report))
    failed = report.failures()
    if failed:
        lines.append("Failed cases:")
        lines.extend(line for case in failed for line in _case_lines(case, report.num_runs))
    not_evaluated = report.not_evaluated_cases()
    if not_evaluated:
        lines.append("Not evaluated cases:")
        lines.extend(line for case in not_evaluated for line in _case_lines(case, report.num_runs))
    lines.extend(regression_lines(report.regression))
    return "\n".join(lines)


def cost_lines(cost: RunCost | None, case_runs: int) -> list[str]:
    """`Cost: $0.0123 (agent $0.0045, judges $0.0078), $0.00037 per case run; prices: genai-prices 0.2.5`, then the
    models no price covers; unknown costs say so, never $0. `case_runs`: those that started (a run its budget
    stopped did not start them all)."""
    if cost is None:
        return []
    total = cost.total_usd
    parts = [
        f"{who} {format_usd(usd)}"
        for who, models, usd in (("agent", cost.agent, cost.agent_usd), ("judges", cost.judges, cost.judge_usd))
        if models
    ]
    per_case = f", {format_usd(total / case_runs)} per case run" if total is not None and case_runs else ""
    lines = [f"Cost: {format_usd(total)} ({', '.join(parts)}){per_case}; prices: {cost.table}"]
    return lines + unpriced_lines(cost.unpriced)


def unpriced_lines(models: Sequence[str]) -> list[str]:
    """The line that names the models no price covers (none when every model is priced)."""
    if not models:
        return []
    return [f"Cost unknown for {', '.join(models)}: no price known; add it to the config's `pricing`"]


def format_usd(value: float | None) -> str:
    """`$0.0412` under a dollar, `$12.30` from one up, `unknown` for None (a cost is never shown as $0 unknown)."""
    if value is None:
        return "unknown"
    return f"${value:.4f}" if value < 1 else f"${value:,.2f}"


def token_lines(agent: Mapping[str, ModelUsage], judges: Mapping[str, ModelUsage]) -> list[str]:
    """`Tokens, agent: gemini-2.5-flash 66 calls, 12,345 in (1,024 cached) / 678 out / 90 thinking` and the same
    for the judges, one line each that has any; a count no call reported is `? in`, never 0."""
    lines = []
    for who, used in (("agent", agent), ("judges", judges)):
        if used:
            lines.append(f"Tokens, {who}: " + "; ".join(_usage_text(model, usage) for model, usage in used.items()))
    return lines


def _usage_text(model: str, usage: ModelUsage) -> str:
    def count(value: int | None) -> str:
        return "?" if value is None else f"{value:,}"

    text = f"{model} {usage.calls:,} call{'s' if usage.calls != 1 else ''}, {count(usage.input_tokens)} in"
    if usage.cached_input_tokens:
        text += f" ({usage.cached_input_tokens:,} cached)"
    text += f" / {count(usage.output_tokens)} out"
    return text + (f" / {usage.thinking_tokens:,} thinking" if usage.thinking_tokens else "")


def judge_agreement_lines(agreements: Sequence[JudgeAgreement]) -> list[str]:
    """`Judges vs people:` then one line per judged metric (and rubric) of the run's judges, e.g.
    `  final_response_match_v2: kappa 0.71 [0.55, 0.84] on 46 labels, agreement 89%`."""
    if not agreements:
        return []
    return ["Judges vs people (`agent-eval judges` for details):", *(f"  {agreement_text(a)}" for a in agreements)]


def agreement_text(agreement: JudgeAgreement) -> str:
    """One judge's agreement in words: the figures, or why there are none."""
    name = agreement.metric + (f" / rubric {agreement.rubric_id}" if agreement.rubric_id else "")
    binary = agreement.binary
    if binary.insufficient or binary.kappa is None:
        return f"{name}: not measured ({binary.insufficient or 'kappa undefined'})"
    agreed = f", agreement {binary.agreement:.0%}" if binary.agreement is not None else ""
    return f"{name}: kappa {binary.kappa_text()} on {binary.n} labels{agreed}"


def _repeated_run_lines(report: RunReport) -> list[str]:
    """`pass@k: pass@1 0.667, pass@2 0.833` and `Flaky cases: 1 of 3 (set/a)`, when cases ran repeatedly."""
    s = report.summary
    if not s.pass_at_k:
        return []
    lines = ["pass@k: " + ", ".join(f"pass@{k} {value:.3f}" for k, value in s.pass_at_k.items())]
    cases = len({(case.eval_set_id, case.eval_id) for case in report.cases})
    flaky = f" ({_listing(s.flaky_cases)})" if s.flaky_cases else ""
    lines.append(f"Flaky cases: {len(s.flaky_cases)} of {cases}{flaky}")
    return lines


def _average_lines(report: RunReport) -> list[str]:
    s = report.summary
    if not s.avg_scores:
        return []
    lines = ["Average scores:"]
    thresholds = _thresholds(report)
    width = max(len(name) for name in s.avg_scores)
    for name, score in s.avg_scores.items():
        threshold = thresholds.get(name)
        suffix = f"  (threshold {threshold:g})" if threshold is not None else ""
        lines.append(f"  {name:<{width}}  {score:.3f}{suffix}")
    return lines


def cache_line(cached: int, total: int, sources: list[CacheSource]) -> str:
    """E.g. `12 of 33 invocations reused from run ab12cd34 (2026-12-02 21:14 UTC)`; several runs are listed
    in order, each with its earliest reused invocation."""
    shown = [_source(source) for source in sources]
    runs = "run" if len(shown) == 1 else "runs"
    return f"{cached} of {total} invocations reused from {runs} {', '.join(shown)}"


def judge_line(counts: dict[str, int]) -> str:
    """E.g. `judge: 165 calls, 12 answers from cache, 3 retries, 1 unusable sample` (`RunSummary.judge`)."""
    calls, cached = counts.get("calls", 0), counts.get("cache_hits", 0)
    retries, unusable = counts.get("retries", 0), counts.get("errors", 0)
    return (
        f"judge: {_count(calls, 'call')}, {_count(cached, 'answer')} from cache, "
        f"{retries} {'retry' if retries == 1 else 'retries'}, {_count(unusable, 'unusable sample')}"
    )


def judge_limit_line(counts: dict[str, int]) -> str:
    """E.g. `judge: settled at 22 concurrent calls (at most 32), 14 rate-limited calls retried, 0 lost`: where the
    adaptive limit on judge calls went (`RunSummary.judge`: `concurrency`, `concurrency_max`, `rate_limited`,
    `lost`)."""
    return _limit_line("judge", counts, "call")


def case_run_limit_line(counts: dict[str, int]) -> str:
    """E.g. `agent: settled at 10 concurrent case runs (at most 16), 31 rate-limited case runs retried, 0 lost`:
    where the adaptive limit on case runs went (`RunSummary.invocations`), shown when the agent was rate
    limited."""
    return _limit_line("agent", counts, "case run")


def _limit_line(who: str, counts: dict[str, int], noun: str) -> str:
    settled, most = counts.get("concurrency", 0), counts.get("concurrency_max", 0)
    retried, lost = counts.get("rate_limited", 0), counts.get("lost", 0)
    return (
        f"{who}: settled at {_count(settled, 'concurrent ' + noun)} (at most {most}), "
        f"{_count(retried, 'rate-limited ' + noun)} retried, {lost} lost"
    )


def describe_judge_modes(report: RunReport) -> str:
    """Which mode scored each judged metric, in order of first appearance (`details["judge_mode"]`: `adk-exact`,
    ADK's own evaluators, or `agent-eval`, agent-eval's prompts and votes), e.g. `final_response_match_v2
    adk-exact; safety_v1 agent-eval` (a metric scored in both, by eval sets of different configs:
    `adk-exact/agent-eval`); "" when no judged metric ran."""
    modes: dict[str, list[str]] = {}
    for case in report.cases:
        for result in case.metrics:
            mode = result.details.get("judge_mode")
            if isinstance(mode, str) and mode not in modes.setdefault(result.metric_name, []):
                modes[result.metric_name].append(mode)
    return "; ".join(f"{name} {'/'.join(found)}" for name, found in modes.items() if found)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _source(source: CacheSource) -> str:
    name = source.run_id or "(unrecorded)"
    return f"{name} ({_minute(source.invoked_at)})" if source.invoked_at is not None else name


def _minute(moment: datetime) -> str:
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return f"{aware.astimezone(UTC):%Y-%m-%d %H:%M} UTC"


def unscored_criteria_lines(report: RunReport) -> list[str]:
    """One line per criterion that scored no case run (`RunReport.unscored_criteria`), with the most common
    reason, e.g. ``criterion hallucinations_v1 scored no case run (judge gave no usable answer): see `agent-eval
    show RUN` ``."""
    return [
        f"criterion {name} scored no case run ({_clip(_common_reason(report, name))}): "
        f"see `agent-eval show {report.run_id}`"
        for name in report.unscored_criteria()
    ]


def _common_reason(report: RunReport, metric_name: str) -> str:
    """The reason most of the criterion's results give (the first seen on a tie)."""
    counts: dict[str, int] = {}
    for case in report.cases:
        for result in case.metrics:
            if result.metric_name == metric_name and not case.agent_run.failed:
                reason = result.reason or "no reason given"
                counts[reason] = counts.get(reason, 0) + 1
    return max(counts, key=lambda reason: counts[reason]) if counts else "no result"


def _thresholds(report: RunReport) -> dict[str, float | None]:
    return {m.metric_name: m.threshold for case in report.cases for m in case.metrics}


def _case_lines(case: CaseResult, num_runs: int) -> list[str]:
    """`FAIL set/id` or `NOT EVALUATED set/id`, then the agent error or each criterion that failed or could
    not score the case run, with why."""
    run = f" (run {case.run_index + 1})" if num_runs > 1 else ""
    label = "FAIL" if case.status is EvalStatus.FAILED else "NOT EVALUATED"
    origin = f"  (recorded at {_listing(case.recorded_from)})" if case.recorded_from else ""
    lines = [f"  {label} {case.eval_set_id}/{case.eval_id}{run}{origin}"]
    if case.agent_run.error:
        what = "" if case.agent_run.not_started else "agent error: "  # its error says "not started: ..."
        lines.append(f"      {what}{_clip(case.agent_run.error)}")
        return lines + [f"      {_metric_line(m)}" for m in case.metrics if m.gates]
    lines.extend(f"      {_metric_line(m)}" for m in case.metrics if m.gates or m.unscored)
    if not case.metrics:
        lines.append("      no criterion result")
    return lines


def _metric_line(result: MetricResult) -> str:
    if result.status is EvalStatus.NOT_EVALUATED:
        return f"{result.metric_name}: not evaluated, {_clip(result.reason or 'no reason given')}"
    score = f"{result.score:.3f}" if result.score is not None else "-"
    threshold = f"{result.threshold:g}" if result.threshold is not None else "-"
    why = f": {_clip(result.explanation)}" if result.explanation else ""
    return f"{result.metric_name}: score {score} < threshold {threshold}{why}"


def _listing(items: list[str]) -> str:
    shown = ", ".join(items[:_MAX_LISTED])
    return shown + (f" and {len(items) - _MAX_LISTED} more" if len(items) > _MAX_LISTED else "")


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_EXPLANATION else text[: _MAX_EXPLANATION - 3] + "..."


def summary_table_rows(report: RunReport) -> list[dict[str, Any]]:
    """One row per case run for the Prefect table artifact: status, failure, latency, tokens (agent's and
    judges'), cost (None: unknown), score per metric."""
    prices = stored_prices(report.config)
    rows = []
    for case in report.cases:
        row: dict[str, Any] = {
            "eval_set_id": case.eval_set_id,
            "eval_id": case.eval_id,
            "run_index": case.run_index,
            "status": EvalStatus(case.status).name,
            "failure": case.failure,
            "latency_in_seconds": round(case.agent_run.latency_seconds, 4),
            "tokens": _case_tokens(case),
            "cost_usd": case_cost(case, prices),
        }
        for result in case.metrics:
            row[f"{result.metric_name}/score"] = result.score
        rows.append(row)
    return rows


def _case_tokens(case: CaseResult) -> int | None:
    """The case run's agent and judge tokens (input, output, thinking); None when none was reported."""
    usages = [*case_tokens(case).values()]
    if not usages:
        return None
    return sum((u.input_tokens or 0) + (u.output_tokens or 0) + (u.thinking_tokens or 0) for u in usages)


_GAP = "  "


@dataclass(frozen=True)
class TableColumn:
    """One column of a console table (`format_table`).

    Attributes:
        name: what `format_table`'s `priority` calls it.
        title: its header, aligned as its cells are.
        cells: its text in each row.
        right: right-aligned (else left-aligned).
        min_width: the narrowest it is (e.g. a whole run id's length, so that tables line up from one command to
            the next).
        wraps: its cells are words (separated by spaces) that wrap onto more lines of the row when the table is
            fitted into a width; it is left out only when its longest word does not fit.
    """

    name: str
    title: str
    cells: Sequence[str]
    right: bool = False
    min_width: int = 0
    wraps: bool = False

    @property
    def natural_width(self) -> int:
        """The width of its widest cell or title (at least `min_width`)."""
        return max(self.min_width, len(self.title), *(len(cell) for cell in self.cells))

    @property
    def least_width(self) -> int:
        """The narrowest it can be: its natural width, or for a wrapping column its longest word or title."""
        if not self.wraps:
            return self.natural_width
        return max([len(self.title), *(len(word) for cell in self.cells for word in cell.split())])


def format_table(columns: Sequence[TableColumn], width: int | None = None, priority: Sequence[str] = ()) -> list[str]:
    """The table's lines: the header, then one line per row (more when a wrapping cell wraps), two spaces between
    columns, each title aligned with its cells, trailing spaces cut.

    Without `width`, every column at its natural width. With it, the columns that fit in `width` characters,
    taken in `priority` order (by name; the columns it does not name after, in their order): the first always,
    each next one when it fits beside those taken (so a narrow column further down may still be shown); a
    wrapping column is then narrowed down to its longest word to leave room for the others. Columns keep their
    order in `columns`.
    """
    shown = list(columns) if width is None else _fitting(columns, width, priority)
    widths = _widths(shown, width)
    lines = [_line([column.title for column in shown], shown, widths)]
    rows = len(shown[0].cells) if shown else 0
    for row in range(rows):
        lines.extend(_row_lines([column.cells[row] for column in shown], shown, widths))
    return lines


def _fitting(columns: Sequence[TableColumn], width: int, priority: Sequence[str]) -> list[TableColumn]:
    """The columns shown in `width`, in their own order (rule in `format_table`)."""
    ranked = sorted(columns, key=lambda c: priority.index(c.name) if c.name in priority else len(priority))
    kept: list[TableColumn] = []
    for column in ranked:
        if not kept or _least_width([*kept, column]) <= width:
            kept.append(column)
    names = {column.name for column in kept}
    return [column for column in columns if column.name in names]


def _least_width(columns: Sequence[TableColumn]) -> int:
    return sum(column.least_width for column in columns) + len(_GAP) * (len(columns) - 1)


def _widths(columns: Sequence[TableColumn], width: int | None) -> list[int]:
    """Each column's natural width; the wrapping ones narrowed (no further than their least) to fit `width`."""
    widths = [column.natural_width for column in columns]
    if width is None:
        return widths
    excess = sum(widths) + len(_GAP) * (len(columns) - 1) - width
    for index, column in enumerate(columns):
        if column.wraps and excess > 0:
            narrowed = max(column.least_width, widths[index] - excess)
            excess -= widths[index] - narrowed
            widths[index] = narrowed
    return widths


def _row_lines(cells: Sequence[str], columns: Sequence[TableColumn], widths: Sequence[int]) -> list[str]:
    """A row's lines: a wrapping cell's words wrapped to its width, the other cells on the first line."""
    pieces = [
        textwrap.wrap(cell, w, break_long_words=False, break_on_hyphens=False) or [""] if column.wraps else [cell]
        for cell, column, w in zip(cells, columns, widths, strict=True)
    ]
    depth = max((len(piece) for piece in pieces), default=1)
    return [
        _line([piece[line] if line < len(piece) else "" for piece in pieces], columns, widths) for line in range(depth)
    ]


def _line(texts: Sequence[str], columns: Sequence[TableColumn], widths: Sequence[int]) -> str:
    cells = [
        f"{text:>{width}}" if column.right else f"{text:<{width}}"
        for text, column, width in zip(texts, columns, widths, strict=True)
    ]
    return _GAP.join(cells).rstrip()
