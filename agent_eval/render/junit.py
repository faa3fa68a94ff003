"""The run report as JUnit XML, the test-report format CI systems read (Jenkins, GitLab, GitHub reporters).

Shape (the Jenkins / Maven Surefire one): a `<testsuites>` root with one `<testsuite>` per eval set of the run
(in the report's order, an eval set without case runs included with `tests="0"`) and one `<testcase>` per case
run: `classname` is the eval set id, `name` the eval id (with `#<run_index>`, 0-based as in the store, when each
case runs more than once), `time` the agent's latency in seconds. Outcomes:

- an agent error: `<error type="AgentError">`, its first line as `message`, the whole error as text;
- a failed case: `<failure type="EvalFailure" message="criteria failed: a, b">`, each failing criterion's score,
  threshold and explanation (or the error it raised) as text;
- a case run not evaluated (nothing failed, but a criterion could not score it; `agent_eval.results.aggregate`): not a
  failure but `<skipped message="not evaluated: name (reason); ...">`, each criterion that could not score it
  with its reason (the error it raised, else its explanation), and the same per line as text.

A case run whose invocations were reused from an earlier evaluation carries `<properties>` (as pytest's
`record_property` writes them): `cached_from_run_id` and `cached_at` (ISO 8601, UTC), when recorded.

Case runs that did not pass also get a `<system-out>` transcript (user text, calls and responses per turn).
A suite's `time` is the sum of its case runs' latencies (case runs run concurrently, so it can exceed the
wall-clock time); the root's `time` is the run's wall-clock duration. `timestamp` is the run's start in UTC
(`YYYY-MM-DDTHH:MM:SS`, no zone, as Jenkins expects). Characters XML 1.0 forbids (control characters other
than tab and newlines) are replaced by U+FFFD so that the file always parses.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from agent_eval.results.model import CaseResult, MetricResult, RunReport
from agent_eval.results.tool_calls import format_call
from agent_eval.schema import EvalStatus, Invocation, content_text, tool_calls_of

__all__ = ["junit_element", "junit_xml", "write_junit"]

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_MAX_MESSAGE = 200


def _clean(text: str) -> str:
    """The text with the characters XML 1.0 cannot carry replaced by U+FFFD."""
    return _NOT_XML.sub("\ufffd", text)


def _seconds(value: float) -> str:
    return f"{max(value, 0.0):.3f}"


def _aware(moment: datetime) -> datetime:
    """The moment in UTC (a naive time is taken as UTC)."""
    return (moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)).astimezone(UTC)


def _timestamp(moment: datetime) -> str:
    return _aware(moment).strftime("%Y-%m-%dT%H:%M:%S")


def _first_line(text: str) -> str:
    return _clip(text.strip().splitlines()[0] if text.strip() else "")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _clip(line: str) -> str:
    return line if len(line) <= _MAX_MESSAGE else line[: _MAX_MESSAGE - 3] + "..."


def _case_name(case: CaseResult, num_runs: int) -> str:
    return f"{case.eval_id}#{case.run_index}" if num_runs > 1 else case.eval_id


def _criterion_text(result: MetricResult) -> str:
    score = "-" if result.score is None else f"{result.score:.3f}"
    threshold = "-" if result.threshold is None else f"{result.threshold:g}"
    lines = [f"{result.metric_name}: score {score}, threshold {threshold}, {EvalStatus(result.status).name}"]
    if result.explanation:
        lines.append(f"  {result.explanation}")
    if result.error:
        lines.append(f"  error: {result.error}")
    return "\n".join(lines)


def _outcome(case: CaseResult) -> ET.Element | None:
    """The `<error>`, `<failure>` or `<skipped>` element of a case run that did not pass, else None."""
    if case.agent_run.not_started:
        return ET.Element("skipped", message=_clean(case.agent_run.error or "not started"))
    if case.agent_run.error:
        element = ET.Element("error", message=_clean(_first_line(case.agent_run.error)), type="AgentError")
        element.text = _clean(case.agent_run.error)
        return element
    if case.status is EvalStatus.FAILED:
        return _failure(case)
    if case.status is EvalStatus.NOT_EVALUATED:
        return _skipped(case)
    return None


def _failure(case: CaseResult) -> ET.Element:
    """Each failing criterion in the message; those and the criteria that could not score it in the text."""
    failing = [result for result in case.metrics if result.gates]
    names = ", ".join(result.metric_name for result in failing) or "none reported"
    element = ET.Element("failure", message=_clean(f"criteria failed: {names}"), type="EvalFailure")
    shown = [result for result in case.metrics if result.gates or result.unscored]
    element.text = _clean("\n".join(_criterion_text(result) for result in shown))
    return element


def _skipped(case: CaseResult) -> ET.Element:
    """`not evaluated: name (reason); ...` for each criterion that could not score the case run."""
    reasons = [f"{m.metric_name} ({_one_line(m.reason or 'no reason given')})" for m in case.metrics if m.unscored]
    message = "not evaluated: " + ("; ".join(reasons) or "no criterion result")
    element = ET.Element("skipped", message=_clean(_clip(message)))
    element.text = _clean("\n".join(reasons)) if reasons else None
    return element


def _calls(invocation: Invocation) -> str:
    return ", ".join(format_call(call) for call in tool_calls_of(invocation)) or "(none)"


def _turn_lines(index: int, expected: Invocation | None, actual: Invocation | None) -> list[str]:
    either = expected if expected is not None else actual
    user = content_text(either.user_content) if either is not None else ""
    lines = [f"turn {index + 1}", f"  user: {user}"]
    for side, invocation in (("expected", expected), ("actual", actual)):
        if invocation is None:
            lines.append(f"  {side}: (no turn)")
            continue
        lines.append(f"  {side} calls: {_calls(invocation)}")
        lines.append(f"  {side} response: {content_text(invocation.final_response)}")
    return lines


def _transcript(case: CaseResult) -> str:
    expected = case.expected_invocations or []
    actual = case.agent_run.invocations
    lines: list[str] = []
    for index in range(max(len(expected), len(actual))):
        turn_expected = expected[index] if index < len(expected) else None
        lines.extend(_turn_lines(index, turn_expected, actual[index] if index < len(actual) else None))
    return "\n".join(lines)


def _testcase(case: CaseResult, num_runs: int) -> ET.Element:
    element = ET.Element(
        "testcase",
        classname=_clean(case.eval_set_id),
        name=_clean(_case_name(case, num_runs)),
        time=_seconds(case.agent_run.latency_seconds),
    )
    properties = _case_properties(case)
    if properties is not None:
        element.append(properties)
    outcome = _outcome(case)
    if outcome is not None:
        element.append(outcome)
        transcript = _transcript(case)
        if transcript:
            ET.SubElement(element, "system-out").text = _clean(transcript)
    return element


def _case_properties(case: CaseResult) -> ET.Element | None:
    """`<properties>` naming the run a reused invocation came from and when it was made, and where a recorded
    case was recorded (`recorded_at`, each turn's first span or the session); None if neither."""
    values = {"recorded_at": " ".join(case.recorded_from)} if case.recorded_from else {}
    origin = case.agent_run.cached_from
    if origin is not None:
        values["cached_from_run_id"] = origin.run_id or "unrecorded"
        if origin.invoked_at is not None:
            values["cached_at"] = _aware(origin.invoked_at).isoformat()
    return _property_list(values) if values else None


def _property_list(values: dict[str, str]) -> ET.Element:
    element = ET.Element("properties")
    for name, value in values.items():
        ET.SubElement(element, "property", name=name, value=_clean(value))
    return element


def _counts(cases: Sequence[CaseResult]) -> dict[str, str]:
    errors = sum(case.agent_run.failed for case in cases)
    failures = sum(case.status is EvalStatus.FAILED and not case.agent_run.failed for case in cases)
    skipped = sum(case.status is EvalStatus.NOT_EVALUATED and not case.agent_run.failed for case in cases)
    return {"tests": str(len(cases)), "failures": str(failures), "errors": str(errors), "skipped": str(skipped)}


def _properties(report: RunReport) -> ET.Element:
    values = {
        "run_id": report.run_id,
        "agent_reference": report.agent_reference,
        "agent_fingerprint": report.agent_fingerprint,
        "config_hash": report.config_hash,
        "num_runs": str(report.num_runs),
    }
    if report.flow_run_id:
        values["flow_run_id"] = report.flow_run_id
    return _property_list(values)


def _testsuite(report: RunReport, eval_set_id: str) -> ET.Element:
    cases = [case for case in report.cases if case.eval_set_id == eval_set_id]
    suite = ET.Element("testsuite", {"name": _clean(eval_set_id), **_counts(cases)})
    suite.set("time", _seconds(sum(case.agent_run.latency_seconds for case in cases)))
    suite.set("timestamp", _timestamp(report.started_at))
    suite.append(_properties(report))
    suite.extend(_testcase(case, report.num_runs) for case in cases)
    return suite


def junit_element(report: RunReport) -> ET.Element:
    """The `<testsuites>` element of a run: one `<testsuite>` per eval set, one `<testcase>` per case run."""
    eval_set_ids = list(dict.fromkeys([*report.eval_set_ids, *(case.eval_set_id for case in report.cases)]))
    root = ET.Element("testsuites", {"name": _clean(f"agent-eval {report.run_id}"), **_counts(report.cases)})
    root.set("time", _seconds((report.completed_at - report.started_at).total_seconds()))
    root.set("timestamp", _timestamp(report.started_at))
    root.extend(_testsuite(report, eval_set_id) for eval_set_id in eval_set_ids)
    return root


def junit_xml(report: RunReport) -> str:
    """The run as an indented JUnit XML document (with its XML declaration).

    Args:
        report: the run to export.

    Returns:
        The XML text; see the module docstring for the shape.
    """
    root = junit_element(report)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def write_junit(report: RunReport, path: str | Path) -> Path:
    """Write `junit_xml(report)` to `path` (UTF-8), creating its folder.

    Returns:
        The path written.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(junit_xml(report), encoding="utf-8")
    return target
