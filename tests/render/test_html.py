"""The HTML report: escaping, self-containment, summary, trajectories, metrics, charts, and a real browser."""

from __future__ import annotations

import html
import os
import re
import shutil
import signal
import struct
import subprocess
import zlib
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent_eval.render.html import HistoryPoint, render_html, write_html
from agent_eval.render.html_charts import metric_tallies
from agent_eval.render.html_sections import CASE_FILTER_SCRIPT
from agent_eval.results.aggregate import build_report
from agent_eval.results.model import RunReport
from agent_eval.schema import AgentRun, CacheOrigin, EvalCase, EvalStatus
from tests.render.builders import (
    BROKEN,
    CONFIG,
    LAMP,
    LIVING_ROOM,
    LOWERCASE_WHY,
    OFFICE,
    PER_EVAL_SET_CONFIG,
    RESPONSE,
    STARTED,
    TRAJECTORY,
    Call,
    agent_run,
    judged_report,
    metric,
    repeated_report,
    result,
    run_report,
    sample_report,
    turn,
)

SCRIPT = "<script>alert(1)</script>"
IMG = '<img src=x onerror="alert(2)">'


def one_case_report(expected: list[Call], actual: list[Call], response: str = "Hello!") -> RunReport:
    """One failing case `xss` (user text with markup) whose actual turn makes `actual` and says `response`."""
    conversation = [turn("say <b>hi</b>", "Hello!", expected)]
    run = AgentRun(eval_set_id="home", eval_id="xss", invocations=[turn("say <b>hi</b>", response, actual)])
    results = [
        metric(TRAJECTORY, "xss", 0.0, EvalStatus.FAILED, explanation=IMG, details={"html": "<i>x</i>"}),
        metric(RESPONSE, "xss", 0.1, EvalStatus.FAILED, explanation="rouge1 0.100"),
    ]
    return build_report(
        run_id="xss-run",
        runs=[(EvalCase(eval_id="xss", conversation=conversation), run)],
        metric_results=results,
        config=CONFIG,
        eval_set_ids=["home"],
        agent_reference="pkg.bot:agent",
        agent_fingerprint="abc123",
        num_runs=1,
        started_at=STARTED,
        completed_at=STARTED,
    )


def xss_report() -> RunReport:
    """Office and lamp expected; lamp and living room made (matched, missing, extra); a `<script>` response."""
    return one_case_report([OFFICE, LAMP], [LAMP, LIVING_ROOM], SCRIPT)


def history(count: int = 3) -> list[HistoryPoint]:
    return [
        HistoryPoint(
            run_id=f"old-{i}",
            started_at=datetime(2026, 11, 28 + i, 3, 0, tzinfo=UTC),
            pass_rate=0.2 * (i + 1),
            metric_means={TRAJECTORY: 0.5 + 0.1 * i, RESPONSE: 0.9 - 0.1 * i},
        )
        for i in range(count)
    ]


def marked_calls(page: str) -> list[tuple[str, str]]:
    """Every trajectory call of the page, in order, as (mark class, call text)."""
    found = re.findall(r'<li class="call (\w+)"[^>]*><span class="mark">.</span>(.*?)</li>', page)
    return [(mark, html.unescape(text)) for mark, text in found]


def polylines(page: str) -> list[list[tuple[float, float]]]:
    lines = re.findall(r'<polyline points="([^"]*)"', page)
    return [[(float(x), float(y)) for x, y in (pair.split(",") for pair in line.split())] for line in lines]


# -------------------------------------------------------------------------------------------------- escaping
def only_our_script(page: str) -> bool:
    """Whether the page's only script is the case filter's, inline."""
    return page.lower().count("<script") == 1 and page.count(f"<script>{CASE_FILTER_SCRIPT}</script>") == 1


def test_agent_text_is_escaped() -> None:
    page = render_html(xss_report())

    assert only_our_script(page)
    assert html.escape(SCRIPT) in page
    assert "<img" not in page and html.escape(IMG) in page
    assert "<b>hi</b>" not in page and "say &lt;b&gt;hi&lt;/b&gt;" in page
    assert "<i>x</i>" not in page


def test_the_page_is_self_contained() -> None:
    page = render_html(sample_report(), history())

    assert re.findall(r"https?://[^\s\"']+", page) == ["http://www.w3.org/2000/svg"] * page.count("<svg")
    for reference in ("<link", " src=", "@import", "url(", "<iframe"):
        assert reference not in page
    assert only_our_script(page)
    for reach in ("fetch(", "XMLHttpRequest", "import(", "WebSocket", "location", ".src"):
        assert reach not in CASE_FILTER_SCRIPT
    assert page.startswith("<!DOCTYPE html>") and '<meta charset="utf-8">' in page


# --------------------------------------------------------------------------------------------------- summary
def test_summary_shows_totals_and_run_metadata() -> None:
    page = render_html(sample_report())

    for text in (
        "run run-1",
        "<b>5</b><span>total</span>",
        "<b>1</b><span>passed</span>",
        "<b>3</b><span>failed</span>",
        "<b>1</b><span>not evaluated</span>",
        "<b>25.0%</b><span>pass rate</span>",  # 1 of the 4 evaluated case runs
        "<dt>agent</dt><dd>examples/home_automation/agent.py:root_agent</dd>",
        f"<dt>config hash</dt><dd>{sample_report().config_hash}</dd>",
        "<dt>eval sets</dt><dd>home</dd>",
        "<dt>started</dt><dd>2026-12-02 12:00:00 UTC</dd>",
        "<dt>completed</dt><dd>2026-12-02 12:00:02 UTC (2.5 s)</dd>",
    ):
        assert text in page


def test_the_summary_says_which_config_scored_which_eval_set() -> None:
    mixed = sample_report().model_copy(
        update={"config": PER_EVAL_SET_CONFIG, "eval_set_ids": ["set20", "set40", "set50"]}
    )

    assert (
        "<dt>config</dt><dd>set20 ← mt/test_config.json; set40 ← ADK defaults; "
        "set50 ← inline config (final_response_match_v2)</dd>"
    ) in render_html(mixed)
    assert "<dt>config</dt><dd>all eval sets ← one config (response_match_score, tool_trajectory_avg_score)</dd>" in (
        render_html(sample_report())
    )


def test_the_summary_and_each_metric_row_say_which_mode_judged() -> None:
    page = render_html(judged_report())

    assert "<dt>judge mode</dt><dd>final_response_match_v2 adk-exact; safety_v1 agent-eval</dd>" in page
    assert (
        page.count(
            "<td class='mono'>final_response_match_v2<br><span class=\"muted\">judge mode: adk-exact</span></td>"
        )
        == 2
    )
    assert page.count("<td class='mono'>safety_v1<br><span class=\"muted\">judge mode: agent-eval</span></td>") == 2
    assert page.count("<td class='mono'>m</td>") == 2
    assert "judge mode" not in render_html(sample_report())


def test_metric_pass_rates_leave_out_raised_and_unscored_metrics() -> None:
    tallies = {tally.name: tally for tally in metric_tallies(sample_report())}

    assert (tallies[TRAJECTORY].passed, tallies[TRAJECTORY].failed, tallies[TRAJECTORY].other) == (3, 1, 1)
    assert (tallies[RESPONSE].passed, tallies[RESPONSE].failed, tallies[RESPONSE].other) == (2, 1, 2)
    page = render_html(sample_report())
    assert "75% (3/4) · mean 0.750" in page
    assert "67% (2/3) · mean 0.800" in page


# ------------------------------------------------------------------------------------------------------ cases
def test_trajectories_mark_matched_missing_and_extra_calls() -> None:
    calls = marked_calls(render_html(xss_report()))

    assert calls == [
        ("missing", "get_temperature(location='Office')"),
        ("matched", "set_device_info(device_id='lamp', updates={'status': 'ON'})"),
        ("matched", "set_device_info(device_id='lamp', updates={'status': 'ON'})"),
        ("extra", "set_temperature(location='Living Room', temperature=23)"),
    ]


def test_duplicate_calls_count_once_each() -> None:
    fewer = marked_calls(render_html(one_case_report([OFFICE, OFFICE], [OFFICE])))
    more = marked_calls(render_html(one_case_report([OFFICE], [OFFICE, OFFICE])))

    assert [mark for mark, _ in fewer] == ["matched", "missing", "matched"]
    assert [mark for mark, _ in more] == ["matched", "matched", "extra"]


def test_failed_and_not_evaluated_cases_are_open_and_passed_ones_closed() -> None:
    opened = re.findall(r'<details class="case ([\w-]+)"( open)?>', render_html(sample_report()))

    assert opened == [("failed", " open")] * 3 + [("not-evaluated", " open"), ("passed", "")]  # failures first


def test_each_turn_shows_user_text_and_both_responses() -> None:
    page = render_html(sample_report())

    assert page.count('<div class="turn">') == 6  # two_turns has two turns; boom has only the expected one
    assert "<pre>how warm is the office?</pre>" in page
    assert '<div class="response">It is 22 degrees in the Office.</div>' in page
    assert '<div class="response">22.</div>' in page
    assert "no actual turn" in page


def test_every_metric_row_has_score_threshold_status_and_explanation() -> None:
    page = render_html(sample_report())

    lowercase_row = (
        f"<tr><td class='mono'>{TRAJECTORY}</td><td class='num'>0.000</td><td class='num'>1</td>"
        f'<td><span class="badge failed">failed</span></td><td><pre>{html.escape(LOWERCASE_WHY)}</pre></td></tr>'
    )
    assert lowercase_row in page
    assert f"<pre>error: {BROKEN}</pre>" in page
    assert '<span class="badge not-evaluated">not evaluated</span>' in page


def test_the_agent_error_is_shown() -> None:
    assert '<div class="error"><b>agent error</b><pre>ValueError: nope</pre></div>' in render_html(sample_report())


def test_repeated_runs_are_numbered() -> None:
    page = render_html(repeated_report(num_runs=2))

    assert "home / fine · run 1/2" in page and "home / fine · run 2/2" in page


def test_a_case_without_expected_conversation_shows_the_actual_calls_unmarked() -> None:
    report = xss_report()
    case = report.cases[0].model_copy(update={"expected_invocations": None})
    page = render_html(report.model_copy(update={"cases": [case]}))

    assert "no expected conversation" in page
    assert [mark for mark, _ in marked_calls(page)] == ["plain", "plain"]


def test_a_case_a_criterion_could_not_score_has_the_not_evaluated_badge_and_the_reason() -> None:
    page = render_html(sample_report())

    broken = page[page.index('<details class="case not-evaluated" open>') :]
    broken = broken[: broken.index("</details>")]
    assert '<summary class="not-evaluated"><span class="badge not-evaluated">not evaluated</span>' in broken
    assert f'<span class="chip na" title="not evaluated: {BROKEN}">{RESPONSE}</span>' in broken
    assert f'<div class="unscored"><b>not evaluated</b><ul><li><b>{RESPONSE}</b>: {BROKEN}</li></ul></div>' in broken
    assert '<span class="chip">' not in broken  # nothing failed
    assert '<span class="badge failed">failed</span><span class="run mono">run run-1</span>' in page


def test_a_run_whose_criterion_scored_nothing_is_marked_not_evaluated() -> None:
    report = run_report(
        [agent_run("a")], [result(TRAJECTORY, EvalStatus.PASSED), result(RESPONSE, EvalStatus.NOT_EVALUATED)]
    )

    page = render_html(report)

    assert '<h1>agent-eval report</h1><span class="badge not-evaluated">not evaluated</span>' in page
    assert '<div class="stat not-evaluated"><b>1</b><span>not evaluated</span></div>' in page
    assert f'<span class="chip na" title="not evaluated: no reason given">{RESPONSE}</span>' in page


def test_repeated_runs_show_pass_at_k_and_the_flaky_cases() -> None:
    runs = [agent_run("a", i) for i in range(2)] + [agent_run("b", i) for i in range(2)]
    statuses = [EvalStatus.PASSED, EvalStatus.FAILED, EvalStatus.PASSED, EvalStatus.PASSED]
    results = [
        result("m", status, eval_id=run.eval_id, run_index=run.run_index)
        for run, status in zip(runs, statuses, strict=True)
    ]

    page = render_html(run_report(runs, results, num_runs=2))

    assert '<div class="stat "><b>1.000</b><span>pass@2</span></div>' in page
    assert '<div class="stat failed"><b>1</b><span>flaky cases</span></div>' in page
    assert '<p class="repeated">pass@1 0.750 · pass@2 1.000 · flaky: 1 of 2 cases (home/a)</p>' in page
    assert "pass@" not in render_html(sample_report())


def test_reused_invocations_are_marked_with_their_run() -> None:
    origin = CacheOrigin(run_id="ab12cd34", invoked_at=datetime(2026, 12, 2, 21, 14, 37, tzinfo=UTC))
    runs = [agent_run("a", cached_from=origin), agent_run("b")]

    page = render_html(run_report(runs, [result("m", EvalStatus.PASSED, eval_id=run.eval_id) for run in runs]))

    assert (
        '<p class="cache-note"><span class="badge cached">cached</span> '
        "1 of 2 invocations reused from run ab12cd34 (2026-12-02 21:14 UTC)</p>"
    ) in page
    assert (
        page.count('<span class="badge cached" title="reused from run ab12cd34 invoked 2026-12-02 21:14:37 UTC">') == 1
    )
    assert '<div class="stat "><b>1</b><span>cached</span></div>' in page
    assert "cache-note" not in render_html(sample_report())


# ----------------------------------------------------------------------------------------------- regression
REGRESSION = {
    "regressed": True,
    "baseline_run_id": "old-run",
    "current_run_id": "run-1",
    "confidence": 0.95,
    "metrics": [
        {
            "metric_name": RESPONSE,
            "paired_cases": 4,
            "baseline_mean": 0.9,
            "current_mean": 0.5,
            "difference": -0.4,
            "ci_low": -0.6,
            "ci_high": -0.2,
            "tolerance": 0.05,
            "informational": False,
            "regressed": True,
            "improved": False,
            "note": None,
        }
    ],
    "flipped_to_failing": ["home/two_turns"],
    "hard_regressions": ["home/two_turns"],
    "flaky": [],
    "added": [],
    "removed": ["home/gone"],
    "notes": ["runs per case differ"],
    "summary": "...",
}


def test_the_regression_check_has_its_own_section() -> None:
    page = render_html(sample_report().model_copy(update={"regression": REGRESSION}))

    section = page[page.index('<section class="card regression">') :]
    section = section[: section.index("</section>")]
    assert '<h2>Regression check <span class="badge failed">regressed</span></h2>' in section
    assert (
        '<p>against baseline run <span class="mono">old-run</span> · test: paired bootstrap of each '
        "metric&#x27;s mean difference, 95% CI, tolerance 0.05</p>"
    ) in section
    assert (
        f"<tr><td class='mono'>{RESPONSE}</td><td class='num'>0.900</td><td class='num'>0.500</td>"
        "<td class='num'>-0.400</td><td class='num'>[-0.600, -0.200]</td><td class='num'>0.050</td>"
        "<td class='failed'>regressed</td></tr>"
    ) in section
    assert "<li>hard regressions: home/two_turns</li><li>flipped to failing: home/two_turns</li>" in section
    assert "<li>removed: home/gone</li>" in section
    assert '<p class="muted">runs per case differ</p>' in section
    pinned = render_html(sample_report().model_copy(update={"regression": {**REGRESSION, "baseline_reason": "pinned"}}))
    assert '<span class="mono">old-run</span> (pinned) · test:' in pinned
    assert page.index("<h2>Summary</h2>") < page.index("Regression check") < page.index("Pass rate per metric")


def test_no_comparable_baseline_says_why_and_no_comparison_says_nothing() -> None:
    no_baseline = {"regressed": False, "baseline_run_id": None, "summary": "no comparable baseline: other criteria"}

    page = render_html(sample_report().model_copy(update={"regression": no_baseline}))

    assert (
        '<section class="card regression"><h2>Regression check <span class="badge not-evaluated">no comparable '
        "baseline</span></h2><p>no comparable baseline: other criteria</p></section>"
    ) in page
    assert "Regression check" not in render_html(sample_report())


# ---------------------------------------------------------------------------------------------------- history
def test_history_draws_one_line_per_series_with_the_current_run_last() -> None:
    page = render_html(sample_report(), history())

    lines = polylines(page)
    assert len(lines) == 3  # pass rate, then each metric
    assert all(len(line) == 4 for line in lines)
    assert all(line == sorted(line, key=lambda point: point[0]) for line in lines)
    pass_rate_y = [y for _, y in lines[0]]  # pass rates 0.2, 0.4, 0.6, then the current run's 0.25
    assert pass_rate_y[0] > pass_rate_y[3] > pass_rate_y[1] > pass_rate_y[2]
    assert page.index("2026-11-28") < page.index("2026-11-30") < page.rindex("2026-12-02")
    assert "tool_trajectory_avg_score = 0.750 · run run-1 · 2026-12-02 12:00 UTC" in page


def test_the_current_run_is_not_drawn_twice() -> None:
    report = sample_report()

    lines = polylines(render_html(report, [*history(2), HistoryPoint.from_report(report)]))

    assert [len(line) for line in lines] == [3, 3, 3]


def test_without_earlier_runs_there_is_no_trend() -> None:
    page = render_html(sample_report())

    assert "no earlier runs to compare with" in page
    assert "<polyline" not in page


def test_a_naive_history_time_is_utc() -> None:
    point = HistoryPoint(run_id="r", started_at=datetime(2026, 1, 1, 8, 0), pass_rate=1.0)

    assert point.started_at == datetime(2026, 1, 1, 8, 0, tzinfo=UTC)


def test_write_html_creates_the_folder(tmp_path: Path) -> None:
    path = write_html(sample_report(), tmp_path / "out" / "report.html", history())

    assert path.read_text(encoding="utf-8") == render_html(sample_report(), history())


# ---------------------------------------------------------------------------------------------------- browser
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
CHROMIUM_TIMEOUT = 60


def chromium_path() -> str:
    """Chromium's path; skips when it is missing, unless AGENT_EVAL_REQUIRE_BROWSER is set (then fails)."""
    found = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
    if found:
        return found
    if os.environ.get("AGENT_EVAL_REQUIRE_BROWSER"):
        pytest.fail("AGENT_EVAL_REQUIRE_BROWSER is set but chromium is not installed: run .ci/install-chromium")
    pytest.skip("chromium is not installed (run .ci/install-chromium; AGENT_EVAL_REQUIRE_BROWSER=1 makes this fail)")


def run_chromium(chromium: str, profile: Path, *args: str) -> str:
    """Chromium's stdout; a run that hangs (as on an `alert` dialog) is killed with all its processes."""
    command = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--window-size=1280,2000", *args]
    pipe = subprocess.PIPE
    with subprocess.Popen(command, stdout=pipe, stderr=pipe, text=True, start_new_session=True) as process:
        try:
            out, err = process.communicate(timeout=CHROMIUM_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            pytest.fail(f"chromium hung for {CHROMIUM_TIMEOUT} s: a JavaScript dialog (alert) may block the page")
    assert process.returncode == 0, err[-2000:]
    return out


def png_rows(data: bytes, count: int) -> list[bytes]:
    """The first `count` pixel rows of an 8-bit, non-interlaced RGB or RGBA PNG, unfiltered."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks: dict[bytes, bytes] = {}
    position = 8
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind = data[position + 4 : position + 8]
        chunks[kind] = chunks.get(kind, b"") + data[position + 8 : position + 8 + length]
        position += 12 + length
    width, _, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[b"IHDR"])
    assert (depth, colour, interlace) in ((8, 2, 0), (8, 6, 0))
    pixel = 3 if colour == 2 else 4
    raw, stride, rows = zlib.decompress(chunks[b"IDAT"]), width * pixel, [bytes(width * pixel)]
    for y in range(count):
        line = raw[y * (stride + 1) : (y + 1) * (stride + 1)]
        rows.append(unfilter(line[0], line[1:], rows[-1], pixel))
    return rows[1:]


def unfilter(kind: int, line: bytes, above: bytes, pixel: int) -> bytes:
    out = bytearray(line)
    for i in range(len(out)):
        left = out[i - pixel] if i >= pixel else 0
        upper_left = above[i - pixel] if i >= pixel else 0
        if kind == 1:
            out[i] = (out[i] + left) & 0xFF
        elif kind == 2:
            out[i] = (out[i] + above[i]) & 0xFF
        elif kind == 3:
            out[i] = (out[i] + (left + above[i]) // 2) & 0xFF
        elif kind == 4:
            guess = left + above[i] - upper_left
            nearest = min((abs(guess - left), 0, left), (abs(guess - above[i]), 1, above[i]))
            nearest = min(nearest, (abs(guess - upper_left), 2, upper_left))
            out[i] = (out[i] + nearest[2]) & 0xFF
    return bytes(out)


@pytest.mark.browser
def test_chromium_renders_the_page_and_runs_no_script(tmp_path: Path) -> None:
    chromium = chromium_path()
    page = write_html(xss_report(), tmp_path / "report.html", history())
    shot = tmp_path / "shot.png"

    run_chromium(chromium, tmp_path / "profile-shot", f"--screenshot={shot}", page.as_uri())
    dom = run_chromium(chromium, tmp_path / "profile-dom", "--dump-dom", page.as_uri())

    assert shot.stat().st_size > 10_000
    rows = png_rows(shot.read_bytes(), 600)
    pixel = 4 if len(rows[0]) == 1280 * 4 else 3
    colours = {row[i : i + pixel] for row in rows[::50] for i in range(0, len(row), pixel)}
    assert len(colours) > 20, "the screenshot is (nearly) a single colour"
    assert "agent-eval report" in dom and "run xss-run" in dom
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom
    assert dom.lower().count("<script") == 1  # the case filter's; the agent's text stayed text
    assert "<svg" in dom and "<polyline" in dom
