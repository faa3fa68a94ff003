"""Cost and latency where the comparison is shown: the HTML report's regression card (badges and a table of both
runs' figures) and the console's regression check (the comparison's own lines)."""

from __future__ import annotations

from agent_eval.compare.efficiency import EfficiencyRules
from agent_eval.compare.regression import compare_runs
from agent_eval.render.console import format_summary
from agent_eval.render.html import render_html
from agent_eval.render.html_sections import regression_section
from agent_eval.results.model import RunReport
from tests.compare.efficiency_builders import turns_run
from tests.compare.test_efficiency import BASELINE, SLOWER

# baseline: $0.021 per case run, p50 1.10 s, p95 2.10 s; current: $0.029 (+38%), p50 1.20 s (+9%), p95 3.53 s (+68%)


def _compared(rules: EfficiencyRules | None = None, *, cost: float | None = 0.58) -> RunReport:
    baseline = turns_run("old", BASELINE, 0.42)
    current = turns_run("new", SLOWER, cost)
    comparison = compare_runs(baseline, current, efficiency=rules)
    return current.model_copy(update={"regression": comparison.to_payload()})


def test_the_card_shows_a_badge_per_kind_and_both_runs_figures() -> None:
    card = regression_section(_compared())

    assert (
        '<h2>Regression check <span class="badge passed">ok</span> <span class="badge not-evaluated">cost '
        'regression</span> <span class="badge not-evaluated">latency regression</span></h2>'
    ) in card
    assert (
        "<tr><td>cost per case run</td><td class='num'>$0.0210</td><td class='num'>$0.0290</td>"
        "<td class='num'>+38%</td><td class='num'>+25%</td><td class='failed'>regressed</td></tr>"
    ) in card
    assert (
        "<tr><td>latency p50 per turn</td><td class='num'>1.10 s</td><td class='num'>1.20 s</td>"
        "<td class='num'>+9%</td><td class='num'>+50%</td><td class=''>–</td></tr>"
    ) in card
    assert (
        "<tr><td>latency p95 per turn</td><td class='num'>2.10 s</td><td class='num'>3.53 s</td>"
        "<td class='num'>+68%</td><td class='num'>+50%</td><td class='failed'>regressed</td></tr>"
    ) in card


def test_a_kind_that_fails_the_run_is_red_and_says_so() -> None:
    card = regression_section(_compared(EfficiencyRules(fail_on_cost_regression=True)))

    assert (
        '<h2>Regression check <span class="badge failed">regressed</span> <span class="badge failed">cost '
        'regression</span> <span class="badge not-evaluated">latency regression</span></h2>'
    ) in card
    assert "<td class='failed'>regressed, fails the run</td></tr>" in card


def test_a_cost_not_compared_says_why_and_a_payload_without_figures_shows_no_table() -> None:
    unknown = regression_section(_compared(cost=None))
    report = _compared()
    assert report.regression is not None
    old = {key: value for key, value in report.regression.items() if key != "efficiency"}

    assert (
        '<tr><td>cost per case run</td><td colspan="5" class="muted">not compared: cost unknown in this run</td></tr>'
    ) in unknown
    assert "cost and latency" not in regression_section(report.model_copy(update={"regression": old}))
    assert "cost regression" not in regression_section(report.model_copy(update={"regression": old}))


def test_the_page_holds_theregression_section() -> None:
    page = render_html(_compared())

    assert page.index("Regression check") < page.index("latency p95 per turn")


def test_the_console_prints_each_kind_under_the_regression_check() -> None:
    lines = format_summary(_compared()).splitlines()

    start = lines.index("Regression check: ok vs old")
    assert lines[-3:] == [
        "  cost regression: +38% per case, 0.021 → 0.029 USD",
        "  latency regression: p95 per turn +68%, 2.10 → 3.53 s",
        "  no failing regression: cost and latency regressions reported only (set regression.fail_on_cost_regression,"
        " regression.fail_on_latency_regression to fail the run)",
    ]
    assert start < len(lines) - 3


def test_a_percentile_with_too_few_turns_has_a_row_saying_why() -> None:
    baseline, current = turns_run("old", [0.5] * 6, 0.03), turns_run("new", [0.6] * 6, 0.03)
    report = current.model_copy(update={"regression": compare_runs(baseline, current).to_payload()})

    card = regression_section(report)

    assert "<tr><td>latency p50 per turn</td><td class='num'>0.50 s</td><td class='num'>0.60 s</td>" in card
    assert (
        '<tr><td>latency p95 per turn</td><td colspan="5" class="muted">not compared: p95 needs at least 20 timed '
        "turns in each run (6 and 6)</td></tr>"
    ) in card
