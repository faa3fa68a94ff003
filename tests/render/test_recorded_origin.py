"""A recorded case's origin (each turn's first span, or the session) is shown by the HTML report and JUnit XML,
as the console summary shows it."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from agent_eval.render.html import render_html
from agent_eval.render.junit import junit_xml
from agent_eval.results.model import RunReport
from tests.render.builders import sample_report


def recorded_report() -> RunReport:
    report = sample_report()
    cases = [
        case.model_copy(update={"recorded_from": [f"spans.jsonl:{i + 3}", f"spans.jsonl:{i + 9}"]})
        for i, case in enumerate(report.cases)
    ]
    return report.model_copy(update={"cases": cases})


def test_the_html_report_says_where_a_case_was_recorded() -> None:
    page = render_html(recorded_report())

    assert "recorded at spans.jsonl:3 …" in page
    assert "recorded at" not in render_html(sample_report())


def test_junit_names_every_turns_origin_in_a_property() -> None:
    root = ET.fromstring(junit_xml(recorded_report()))

    first = root.find(".//testcase")
    assert first is not None
    values = {p.get("name"): p.get("value") for p in first.iter("property")}
    assert values["recorded_at"] == "spans.jsonl:3 spans.jsonl:9"
    plain = ET.fromstring(junit_xml(sample_report())).find(".//testcase")
    assert plain is not None and not [p for p in plain.iter("property") if p.get("name") == "recorded_at"]
