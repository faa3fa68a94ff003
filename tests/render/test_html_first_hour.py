"""Issue 33, item 2: an HTML report that leads with what broke.

Failures and case runs not evaluated come first; a filter (failed / not evaluated / flaky / all) and a search
box work in the page itself (checked in headless Chromium); the regression table's cells do not overlap; a
wrong argument is shown as the argument that differs; `run --html` has the same history as `report RUN`, and
both say what they wrote.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from agent_eval.cli import main
from agent_eval.render.html import render_html
from agent_eval.results.aggregate import build_report
from agent_eval.results.model import MetricResult, RunReport
from agent_eval.results.tool_calls import argument_diff
from agent_eval.schema import AgentRun, EvalCase, EvalStatus
from agent_eval.store import get_engine, list_runs
from tests.flows.helpers import write_echo_set
from tests.render.builders import (
    COMPLETED,
    CONFIG,
    LAMP,
    LIVING_ROOM,
    LIVING_ROOM_LOWER,
    OFFICE,
    RESPONSE,
    STARTED,
    TRAJECTORY,
    Call,
    metric,
    sample_report,
    turn,
)
from tests.render.test_html import chromium_path, marked_calls, run_chromium

PASSED, FAILED, NOT_EVALUATED = EvalStatus.PASSED, EvalStatus.FAILED, EvalStatus.NOT_EVALUATED
LONG_METRIC = "rubric_based_final_response_quality_v1_with_a_long_custom_suffix"

# eval_id: (user text, expected calls, actual calls, trajectory status of run 1 and run 2)
CASES: dict[str, tuple[str, list[Call], list[Call], tuple[EvalStatus, EvalStatus]]] = {
    "greet": ("say hello", [], [], (PASSED, PASSED)),
    "lamp": ("turn on the lamp", [LAMP], [LAMP], (PASSED, FAILED)),
    "thermostat": ("set the living room to 23", [LIVING_ROOM], [LIVING_ROOM_LOWER], (FAILED, FAILED)),
    "judge_down": ("how warm is the office?", [OFFICE], [OFFICE], (PASSED, PASSED)),
    "office": ("office temperature please", [OFFICE], [OFFICE], (PASSED, PASSED)),
}
"""Eval-set order; `judge_down`'s response metric could not be scored (the case runs are not evaluated)."""


def _results(eval_id: str, run_index: int, status: EvalStatus) -> list[MetricResult]:
    results = [metric(TRAJECTORY, eval_id, 1.0 if status is PASSED else 0.0, status, run_index=run_index)]
    if eval_id == "judge_down":
        results.append(metric(RESPONSE, eval_id, None, NOT_EVALUATED, run_index=run_index, error="judge: HTTP 503"))
    return results


def regression_payload() -> dict[str, Any]:
    """A comparison whose metric names are longer than their column (the `tool_trajectory_avg_s0.894` bug)."""
    rows = [(TRAJECTORY, 0.894, 0.6, True, False), (LONG_METRIC, 0.5, 0.52, False, True)]
    metrics = [
        {
            "metric_name": name,
            "baseline_mean": baseline,
            "current_mean": current,
            "difference": current - baseline,
            "ci_low": current - baseline - 0.1,
            "ci_high": current - baseline + 0.1,
            "tolerance": 0.05,
            "informational": informational,
            "regressed": regressed,
            "improved": False,
            "note": None,
        }
        for name, baseline, current, regressed, informational in rows
    ]
    return {"regressed": True, "baseline_run_id": "old-run", "confidence": 0.95, "metrics": metrics}


def first_hour_report() -> RunReport:
    """Five cases run twice: `lamp` is flaky, `thermostat` fails (a wrong argument), `judge_down` is not
    evaluated, `greet` and `office` pass; compared with a baseline."""
    runs, results = [], []
    for eval_id, (user, expected, actual, statuses) in CASES.items():
        case = EvalCase(eval_id=eval_id, conversation=[turn(user, "Done.", expected)])
        for run_index, status in enumerate(statuses):
            made = [turn(user, "Done.", actual)]
            runs.append((case, AgentRun(eval_set_id="home", eval_id=eval_id, run_index=run_index, invocations=made)))
            results.extend(_results(eval_id, run_index, status))
    report = build_report(
        run_id="first-hour",
        runs=runs,
        metric_results=results,
        config=CONFIG,
        eval_set_ids=["home"],
        agent_reference="pkg.bot:agent",
        agent_fingerprint="abc123",
        num_runs=2,
        started_at=STARTED,
        completed_at=COMPLETED,
    )
    return report.model_copy(update={"regression": regression_payload()})


def case_order(page: str) -> list[tuple[str, str]]:
    """(status class, case label) of every case run block, in page order."""
    found = re.findall(r'<details class="case ([\w-]+)[^"]*"[^>]*>.*?<span class="id mono">(.*?)</span>', page)
    return [(status, label.replace("home / ", "")) for status, label in found]


LEADING = [
    ("failed", "lamp · run 2/2"),
    ("failed", "thermostat · run 1/2"),
    ("failed", "thermostat · run 2/2"),
    ("not-evaluated", "judge_down · run 1/2"),
    ("not-evaluated", "judge_down · run 2/2"),
]
PASSING = ["greet · run 1/2", "greet · run 2/2", "lamp · run 1/2", "office · run 1/2", "office · run 2/2"]


# ------------------------------------------------------------------------------------------ page, no browser
def test_failures_then_not_evaluated_case_runs_lead_the_cases() -> None:
    assert case_order(render_html(first_hour_report())) == [*LEADING, *(("passed", label) for label in PASSING)]


def test_the_filter_bar_counts_each_kind_and_is_hidden_without_scripts() -> None:
    page = render_html(first_hour_report())

    bar = page[page.index('<div class="filters"') : page.index("</div>", page.index('<div class="filters"'))]
    assert " hidden>" in bar[: bar.index("<button")]
    counts = re.findall(r'data-filter="([\w-]+)" aria-pressed="(\w+)">[\w ]+ <b>(\d+)</b>', bar)
    assert counts == [
        ("failed", "false", "3"),
        ("not-evaluated", "false", "2"),
        ("flaky", "false", "2"),
        ("all", "true", "10"),
    ]
    assert page.count("<script") == 1 and " src=" not in page
    assert page.count('<details class="case passed flaky">') == 1  # lamp's passing run
    assert page.count('<details class="case failed flaky" open>') == 1


def test_a_wrong_argument_is_one_changed_call_with_the_argument_that_differs() -> None:
    page = render_html(sample_report())  # `lowercase`: location 'Living Room' expected, 'living room' made

    changed = [(mark, text) for mark, text in marked_calls(page) if mark == "changed"]
    assert changed == [
        ("changed", "set_temperature(location='Living Room', temperature=23)"),
        (
            "changed",
            "set_temperature(location='living room', temperature=23)"
            "<span class=\"arg-diff\">location: 'Living Room' → 'living room'</span>",
        ),
    ]
    assert "missing" not in {mark for mark, _ in marked_calls(page)}


def test_argument_diff_names_each_differing_argument() -> None:
    expected = ("set_temperature", {"location": "Living Room", "temperature": 23, "unit": "C"})
    actual = ("set_temperature", {"temperature": 23, "location": "living room", "mode": "eco"})

    assert argument_diff(expected, actual) == [
        "location: 'Living Room' → 'living room'",
        "unit: 'C' → (absent)",
        "mode: (absent) → 'eco'",
    ]
    assert argument_diff(LIVING_ROOM, LIVING_ROOM) == []
    with pytest.raises(ValueError, match="'set_temperature' and 'get_temperature'"):
        argument_diff(LIVING_ROOM, OFFICE)


def test_calls_of_other_tools_stay_missing_and_extra() -> None:
    from tests.render.test_html import one_case_report

    marks = [mark for mark, _ in marked_calls(render_html(one_case_report([OFFICE, LIVING_ROOM], [LIVING_ROOM_LOWER])))]

    assert marks == ["missing", "changed", "changed"]
    assert [mark for mark, _ in marked_calls(render_html(one_case_report([OFFICE], [LAMP])))] == ["missing", "extra"]


# --------------------------------------------------------------------------------------------------- browser
PROBE = """<script>(function () {
  function label(row) { return row.querySelector(".id").textContent.replace("home / ", ""); }
  function visible() {
    return Array.prototype.filter.call(document.querySelectorAll("details.case"), function (row) {
      return row.getClientRects().length > 0;
    }).map(label);
  }
  function shown(id) { var node = document.getElementById(id); return !!node && node.getClientRects().length > 0; }
  function choose(filter) {
    var button = document.querySelector('button[data-filter="' + filter + '"]');
    if (button) button.click();
    return visible();
  }
  function search(text) {
    var box = document.getElementById("case-search");
    if (box) { box.value = text; box.dispatchEvent(new Event("input", {bubbles: true})); }
    return visible();
  }
  function overlaps() {
    var found = [];
    document.querySelectorAll("section.regression tr").forEach(function (row) {
      var cells = row.children;
      for (var i = 0; i < cells.length; i++) {
        var box = cells[i].getBoundingClientRect(), range = document.createRange();
        range.selectNodeContents(cells[i]);
        var text = range.getBoundingClientRect();
        if (text.width && (text.right > box.right + 0.5 || text.left < box.left - 0.5)) {
          found.push(cells[i].textContent + " runs out of its cell");
        }
        if (i + 1 < cells.length && text.width && text.right > cells[i + 1].getBoundingClientRect().left + 0.5) {
          found.push(cells[i].textContent + " runs into " + cells[i + 1].textContent);
        }
      }
    });
    return found;
  }
  var out = {initial: visible(), bar: shown("case-filter")};
  out.failed = choose("failed");
  out.not_evaluated = choose("not-evaluated");
  out.flaky = choose("flaky");
  out.pressed = Array.prototype.map.call(document.querySelectorAll('button[aria-pressed="true"]'), function (b) {
    return b.getAttribute("data-filter");
  });
  out.all = choose("all");
  out.search = search("THERMOSTAT");
  out.search_text = search("please OFFICE");
  out.failed_lamp = (choose("failed"), search("lamp"));
  out.nothing = search("no such words anywhere");
  out.nothing_line = shown("no-case-matches");
  out.back = (search(""), choose("all"));
  out.overlaps_wide = overlaps();
  document.querySelector("main").style.maxWidth = "640px";
  out.overlaps_narrow = overlaps();
  out.diff = Array.prototype.map.call(document.querySelectorAll(".call.changed"), function (call) {
    return call.innerText;
  });
  var pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();</script>"""


@pytest.fixture(scope="module")
def probed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What the probe script saw in Chromium on the first-hour report: rows shown after each click and search,
    overlapping regression cells at full and narrow width, the changed calls' text."""
    chromium = chromium_path()
    folder = tmp_path_factory.mktemp("first-hour")
    page = folder / "report.html"
    page.write_text(render_html(first_hour_report()).replace("</body>", PROBE + "</body>"), encoding="utf-8")
    dom = run_chromium(chromium, folder / "profile", "--dump-dom", page.as_uri())
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert found is not None, "the probe did not run"
    result: dict[str, Any] = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    return result


@pytest.mark.browser
def test_in_chromium_failures_lead_and_every_case_run_shows_at_first(probed: dict[str, Any]) -> None:
    assert probed["initial"] == [label for _, label in LEADING] + PASSING
    assert probed["bar"] is True


@pytest.mark.browser
def test_in_chromium_the_filter_buttons_show_only_their_case_runs(probed: dict[str, Any]) -> None:
    assert probed["failed"] == ["lamp · run 2/2", "thermostat · run 1/2", "thermostat · run 2/2"]
    assert probed["not_evaluated"] == ["judge_down · run 1/2", "judge_down · run 2/2"]
    assert probed["flaky"] == ["lamp · run 2/2", "lamp · run 1/2"]
    assert probed["pressed"] == ["flaky"]
    assert probed["all"] == probed["initial"]
    assert probed["back"] == probed["initial"]


@pytest.mark.browser
def test_in_chromium_the_search_box_narrows_the_case_runs(probed: dict[str, Any]) -> None:
    assert probed["search"] == ["thermostat · run 1/2", "thermostat · run 2/2"]  # any case
    assert probed["search_text"] == ["office · run 1/2", "office · run 2/2"]  # every word, any order, any case
    assert probed["failed_lamp"] == ["lamp · run 2/2"]  # with the "failed" filter
    assert probed["nothing"] == [] and probed["nothing_line"] is True


@pytest.mark.browser
def test_in_chromium_no_regression_cell_runs_into_the_next(probed: dict[str, Any]) -> None:
    assert probed["overlaps_wide"] == []
    assert probed["overlaps_narrow"] == []


@pytest.mark.browser
def test_in_chromium_the_changed_call_shows_the_argument_that_differs(probed: dict[str, Any]) -> None:
    expected = "≠set_temperature(location='Living Room', temperature=23)"
    made = "≠set_temperature(location='living room', temperature=23)\nlocation: 'Living Room' → 'living room'"
    assert probed["diff"] == [expected, made] * 2  # thermostat, both runs


# ------------------------------------------------------------------------------------------- the command line
def history_section(page: str) -> str:
    start = page.index("<h2>History of ")
    return page[start : page.index("</section>", start)]


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_server", "quiet_cli_env")
def test_run_html_has_the_history_report_shows_and_both_say_what_they_wrote(
    tmp_path: Path, sqlite_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    eval_file, _ = write_echo_set(tmp_path, ["alpha", "bravo"])
    run = ["run", str(eval_file), "--agent", "tests.flows.regression_agents:switchable_agent"]
    run += ["--db-url", sqlite_url, "-q"]
    assert main(run) == 0
    assert main([*run, "--html", "ran.html"]) == 0
    ran_out = capsys.readouterr().out
    run_id = list_runs(get_engine(sqlite_url), 1)[0].id

    assert main(["report", run_id, "-o", "reported.html", "--db-url", sqlite_url]) == 0
    reported_out = capsys.readouterr().out

    ran, reported = ((tmp_path / name).read_text(encoding="utf-8") for name in ("ran.html", "reported.html"))
    assert "no earlier runs" not in ran
    assert history_section(ran) == history_section(reported)
    assert f'{eval_file.name.removesuffix(".evalset.json")} <span class="muted">2 runs</span>' in history_section(ran)
    assert ran == reported  # the same report by either path
    assert ran_out.splitlines()[-1] == f"Wrote {tmp_path / 'ran.html'}"
    assert reported_out == f"Wrote {tmp_path / 'reported.html'}\n"
