"""JUnit XML: valid against the JUnit schema CI systems read, counts, names, outcomes and escaping."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path

import pytest
import xmlschema

from agent_eval.render.junit import junit_xml, write_junit
from agent_eval.results.model import RunReport
from agent_eval.schema import CacheOrigin, EvalStatus
from tests.render.builders import BROKEN, LOWERCASE_WHY, RESPONSE, TRAJECTORY, metric, repeated_report, sample_report

SCHEMA = xmlschema.XMLSchema(Path(__file__).with_name("junit.xsd"))


def parse(report: RunReport) -> ET.Element:
    """The report's JUnit XML, validated against `junit.xsd`, parsed."""
    text = junit_xml(report)
    SCHEMA.validate(text)
    return ET.fromstring(text)


def cases_by_name(root: ET.Element) -> dict[str, ET.Element]:
    return {case.get("name", ""): case for case in root.iter("testcase")}


def not_evaluated_report() -> RunReport:
    """`fine` whose only metric could not score it (no agent error): a NOT_EVALUATED case run."""
    report = repeated_report(num_runs=1)
    result = metric(TRAJECTORY, "fine", None, EvalStatus.NOT_EVALUATED, explanation="no expected invocations")
    case = report.cases[0].model_copy(update={"status": EvalStatus.NOT_EVALUATED, "metrics": [result]})
    return report.model_copy(update={"cases": [case]})


def test_the_schema_rejects_a_testcase_without_a_name() -> None:
    broken = junit_xml(sample_report()).replace('name="lowercase" ', "")

    with pytest.raises(xmlschema.XMLSchemaValidationError, match="name"):
        SCHEMA.validate(broken)


def test_one_testsuite_per_eval_set_with_counts_time_and_timestamp() -> None:
    root = parse(sample_report())

    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    expected = {"tests": "5", "failures": "2", "errors": "1", "skipped": "1"}  # broken_metric: not evaluated
    assert {key: suite.get(key) for key in expected} == expected
    assert {key: root.get(key) for key in expected} == expected
    assert suite.get("name") == "home"
    assert suite.get("time") == "2.500"  # 1.0 + 0.25 + 0.5 + 0.25 + 0.5
    assert suite.get("timestamp") == root.get("timestamp") == "2026-12-02T12:00:00"
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["run_id"] == "run-1"
    assert properties["agent_fingerprint"] == "abc123"


def test_testcases_are_named_by_eval_id_with_latency_as_time() -> None:
    cases = cases_by_name(parse(sample_report()))

    assert list(cases) == ["two_turns", "lowercase", "boom", "fine", "broken_metric"]
    assert {case.get("classname") for case in cases.values()} == {"home"}
    assert [case.get("time") for case in cases.values()] == ["1.000", "0.250", "0.500", "0.250", "0.500"]
    assert list(cases["fine"]) == []


def test_repeated_runs_are_named_with_the_run_index() -> None:
    assert list(cases_by_name(parse(repeated_report(num_runs=3)))) == ["fine#0", "fine#1", "fine#2"]
    assert list(cases_by_name(parse(repeated_report(num_runs=1)))) == ["fine"]


def test_a_failed_case_lists_each_failing_criterion() -> None:
    cases = cases_by_name(parse(sample_report()))

    failure = cases["two_turns"].find("failure")
    assert failure is not None
    assert failure.get("message") == f"criteria failed: {RESPONSE}"
    assert failure.get("type") == "EvalFailure"
    assert failure.text == f"{RESPONSE}: score 0.600, threshold 0.8, FAILED\n  turn 2: rouge1 0.200"
    lowercase = cases["lowercase"].find("failure")
    assert lowercase is not None
    assert lowercase.text == f"{TRAJECTORY}: score 0.000, threshold 1, FAILED\n  {LOWERCASE_WHY}"
    assert cases["broken_metric"].find("failure") is None  # a metric that raised scored nothing: skipped


def test_an_agent_error_is_an_error_with_a_transcript() -> None:
    boom = cases_by_name(parse(sample_report()))["boom"]

    error = boom.find("error")
    assert error is not None
    assert (error.get("message"), error.get("type"), error.text) == (
        "ValueError: nope",
        "AgentError",
        "ValueError: nope",
    )
    assert boom.find("failure") is None
    assert boom.findtext("system-out") == (
        "turn 1\n  user: boom please\n  expected calls: (none)\n  expected response: Sure.\n  actual: (no turn)"
    )


def test_a_not_evaluated_case_is_skipped() -> None:
    root = parse(not_evaluated_report())

    skipped = cases_by_name(root)["fine"].find("skipped")
    assert skipped is not None
    assert skipped.get("message") == f"not evaluated: {TRAJECTORY} (no expected invocations)"
    assert (root.get("skipped"), root.get("failures"), root.get("errors")) == ("1", "0", "0")


def test_a_case_a_criterion_could_not_score_is_skipped_with_the_reason_not_failed() -> None:
    cases = cases_by_name(parse(sample_report()))

    broken = cases["broken_metric"]
    skipped = broken.find("skipped")
    assert skipped is not None
    assert skipped.get("message") == f"not evaluated: {RESPONSE} ({BROKEN})"
    assert skipped.text == f"{RESPONSE} ({BROKEN})"
    assert (broken.find("failure"), broken.find("error")) == (None, None)


def test_a_case_with_a_reused_invocation_carries_where_it_came_from() -> None:
    report = sample_report()
    origin = CacheOrigin(run_id="ab12cd34", invoked_at=datetime(2026, 12, 2, 21, 14, 5, tzinfo=UTC))
    fine = report.cases[3]
    cached = fine.model_copy(update={"agent_run": fine.agent_run.model_copy(update={"cached_from": origin})})
    root = parse(report.model_copy(update={"cases": [*report.cases[:3], cached, report.cases[4]]}))

    cases = cases_by_name(root)
    assert {p.get("name"): p.get("value") for p in cases["fine"].iter("property")} == {
        "cached_from_run_id": "ab12cd34",
        "cached_at": "2026-12-02T21:14:05+00:00",
    }
    assert cases["lowercase"].find("properties") is None


def test_every_eval_set_gets_a_testsuite() -> None:
    report = sample_report()
    moved = [
        case.model_copy(update={"eval_set_id": "office"}) if case.eval_id == "fine" else case for case in report.cases
    ]
    report = report.model_copy(update={"cases": moved, "eval_set_ids": ["home", "office", "empty"]})

    root = parse(report)

    suites = {suite.get("name"): suite for suite in root.findall("testsuite")}
    assert list(suites) == ["home", "office", "empty"]
    assert [suites[name].get("tests") for name in suites] == ["4", "1", "0"]
    assert [case.get("classname") for case in suites["office"].iter("testcase")] == ["office"]
    assert root.get("tests") == "5"


def test_markup_quotes_and_control_characters_round_trip() -> None:
    nasty = 'a <b>&"quoted"</b> ]]> \x1b[31mred\x00'
    report = sample_report()
    result = report.cases[1].metrics[0].model_copy(update={"explanation": nasty})
    case = report.cases[1].model_copy(update={"eval_id": "<case & co>", "metrics": [result]})
    report = report.model_copy(update={"cases": [case]})

    root = parse(report)

    (testcase,) = root.iter("testcase")
    assert testcase.get("name") == "<case & co>"
    failure = testcase.find("failure")
    assert failure is not None
    assert 'a <b>&"quoted"</b> ]]> \ufffd[31mred\ufffd' in (failure.text or "")
    assert "<b>" not in junit_xml(report)


def test_write_junit_creates_the_folder(tmp_path: Path) -> None:
    path = write_junit(sample_report(), tmp_path / "out" / "junit.xml")

    assert path == tmp_path / "out" / "junit.xml"
    assert path.read_text(encoding="utf-8") == junit_xml(sample_report())
    SCHEMA.validate(str(path))
