"""ADK eval history: a run as ADK `EvalSetResult`s, the `*.evalset_result.json` files `adk eval` writes.

Field names follow `google.adk.evaluation.eval_result` and `eval_metrics` (google-adk 2.13), written snake_case
with unset fields left out. Where ADK's runner decides something, we do the same:

- one `EvalSetResult` per eval set, `eval_set_result_id = f"{app_name}_{eval_set_id}_{timestamp}"`, the name
  is the id with "/" replaced by "_", `creation_timestamp` = the run's completion time (epoch seconds);
- one `EvalCaseResult` per case run (with `num_runs > 1` a case appears once per run, as ADK does);
- every metric result carries the `EvalMetric` it came from (`metric_name`, `threshold`, `criterion`,
  `custom_function_path`), its `score`, `eval_status` and `details` (rubric scores, token usage and duration
  breakdowns when the metric reported them);
- `eval_metric_result_per_invocation` pairs each actual invocation with the expected one at the same index
  and holds every metric's result on it (a placeholder NOT_EVALUATED result when the metric gave no
  per-invocation results that line up, as ADK does);
- a case whose agent failed has no metric results, as in ADK.

Where we differ: `final_eval_status` is our case status (`results.aggregate`: a criterion that applies but could
not score the case, e.g. a metric that raised, makes it NOT_EVALUATED, where ADK would pass it on the other
criteria), and `session_id` is `agent-eval-session-<run_id>-<eval_id>-<run_index>`, except for an ADK api_server session
kept with `AGENT_EVAL_KEEP_SESSIONS=1`, whose own id is written (open it in `adk web`).

The app name in the ids and file names is ADK's: the agent's folder, or for an ADK api_server reference
(`adk-api+http://HOST:PORT/APP`) the app APP it serves; any other URL gives its last path segment, else its host.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from agent_eval.results.model import CaseResult, InvocationScore, MetricResult, RunReport
from agent_eval.schema import SERVER_SESSION_KEY, Invocation

__all__ = ["EVAL_SET_RESULT_SUFFIX", "app_name_of", "eval_set_results", "write_eval_set_results"]

EVAL_SET_RESULT_SUFFIX = ".evalset_result.json"
_DETAIL_KEYS = ("rubric_scores", "token_usage_details", "duration_details")


def app_name_of(agent_reference: str) -> str:
    """ADK's app name (the agent's folder) from an agent reference.

    `examples/home_automation/agent.py:root_agent` and `examples.home_automation.agent:root_agent` give
    `home_automation`; `pkg.bot:agent` gives `bot`; `adk-api+http://127.0.0.1:8000/home_app` gives `home_app`
    (the app the api_server serves); another URL its last path segment, else its host. Characters other than
    letters, digits, `_` and `-` become `_`.
    """
    if "://" in agent_reference:
        return _safe(_url_app_name(agent_reference))
    target = agent_reference.split(":", 1)[0] if ":" in agent_reference else agent_reference
    target = target.removesuffix(".py")
    parts = [part for part in re.split(r"[./\\]", target) if part]
    if len(parts) > 1 and parts[-1] == "agent":
        parts.pop()
    return _safe(parts[-1]) if parts else "agent"


def _url_app_name(reference: str) -> str:
    """The app of an ADK api_server URL (its last path segment), else the URL's host."""
    parsed = urlsplit(reference)
    segments = [segment for segment in parsed.path.split("/") if segment]
    return segments[-1] if segments else (parsed.hostname or "agent")


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)


def _dump(invocation: Invocation) -> dict[str, Any]:
    return invocation.model_dump(mode="json", exclude_none=True)


def _eval_metrics(report: RunReport) -> dict[str, dict[str, Any]]:
    """ADK's `EvalMetric` fields per metric name, from the run's config."""
    criteria: dict[str, Any] = report.config.get("criteria", {})
    customs: dict[str, Any] = report.config.get("custom_metrics") or {}
    metrics: dict[str, dict[str, Any]] = {}
    for name, criterion in criteria.items():
        entry: dict[str, Any] = {"metric_name": name}
        if isinstance(criterion, dict) and criterion.get("threshold") is not None:
            entry["threshold"] = criterion["threshold"]
            entry["criterion"] = criterion  # ADK's BaseCriterion requires a threshold
        if name in customs:
            entry["custom_function_path"] = customs[name]["code_config"]["name"]
        metrics[name] = entry
    return metrics


def _eval_metric(result: MetricResult, metrics: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The `EvalMetric` of a result: the config's, else one built from the result's threshold."""
    if result.metric_name in metrics:
        return metrics[result.metric_name]
    if result.threshold is None:
        return {"metric_name": result.metric_name}
    threshold = result.threshold
    return {"metric_name": result.metric_name, "threshold": threshold, "criterion": {"threshold": threshold}}


def _details(values: dict[str, Any]) -> dict[str, Any]:
    """ADK's `EvalMetricResultDetails`: only the fields it knows, None values left out."""
    details: dict[str, Any] = {}
    for key in _DETAIL_KEYS:
        value = values.get(key)
        if isinstance(value, dict):
            value = {k: v for k, v in value.items() if v is not None}
        if value is not None:
            details[key] = value
    return details


def _invocation_details(result: MetricResult, index: int) -> dict[str, Any]:
    """The per-invocation breakdowns of one invocation (`details["per_invocation_<name>"][index]`)."""
    values = {}
    for key in _DETAIL_KEYS:
        per_invocation = result.details.get(f"per_invocation_{key}")
        if isinstance(per_invocation, list) and index < len(per_invocation):
            values[key] = per_invocation[index]
    return _details(values)


def _overall_result(result: MetricResult, metric: dict[str, Any]) -> dict[str, Any]:
    return {
        **metric,
        "score": result.score,
        "eval_status": int(result.status),
        "details": _details(result.details),
    }


def _invocation_result(result: MetricResult, metric: dict[str, Any], index: int, count: int) -> dict[str, Any]:
    """A metric's result on invocation `index` of `count`; a placeholder when its results do not line up."""
    lined_up = len(result.per_invocation) == count
    score = result.per_invocation[index] if lined_up else InvocationScore()
    return {
        **metric,
        "score": score.score,
        "eval_status": int(score.status),
        "details": _invocation_details(result, index) if lined_up else {},
    }


def _per_invocation(case: CaseResult, metrics: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    actual = case.agent_run.invocations
    expected = case.expected_invocations or []
    entries = []
    for index, invocation in enumerate(actual):
        entry: dict[str, Any] = {"actual_invocation": _dump(invocation)}
        if index < len(expected):
            entry["expected_invocation"] = _dump(expected[index])
        entry["eval_metric_results"] = [
            _invocation_result(result, _eval_metric(result, metrics), index, len(actual)) for result in case.metrics
        ]
        entries.append(entry)
    return entries


def _session_id(report: RunReport, case: CaseResult) -> str:
    """The agent server's session when it was kept (so `adk web` opens the session the file names), else ours."""
    server = (case.agent_run.final_session_state or {}).get(SERVER_SESSION_KEY)
    if isinstance(server, dict) and server.get("kept") and isinstance(server.get("session_id"), str):
        return str(server["session_id"])
    return f"agent-eval-session-{report.run_id}-{case.eval_id}-{case.run_index}"


def _case_result(report: RunReport, case: CaseResult, metrics: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One case run as ADK's `EvalCaseResult` (statuses as ADK's integers)."""
    agent_failed = case.agent_run.failed
    overall = [] if agent_failed else [_overall_result(r, _eval_metric(r, metrics)) for r in case.metrics]
    return {
        "eval_set_file": case.eval_set_id,  # deprecated in ADK, still written by its runner
        "eval_set_id": case.eval_set_id,
        "eval_id": case.eval_id,
        "final_eval_status": int(case.status),
        "overall_eval_metric_results": overall,
        "eval_metric_result_per_invocation": [] if agent_failed else _per_invocation(case, metrics),
        "session_id": _session_id(report, case),
    }


def _eval_set_ids(report: RunReport) -> list[str]:
    """The report's eval sets in order, then any other eval set its cases name."""
    return list(dict.fromkeys([*report.eval_set_ids, *(case.eval_set_id for case in report.cases)]))


def eval_set_results(report: RunReport, *, app_name: str | None = None) -> list[dict[str, Any]]:
    """The run as ADK `EvalSetResult`s, one per eval set (sets without cases are left out).

    Args:
        report: the run report.
        app_name: the app name in the result ids; default: the agent's folder (`app_name_of`).

    Returns:
        JSON-ready dicts that `google.adk.evaluation.eval_result.EvalSetResult` validates.
    """
    app = app_name or app_name_of(report.agent_reference)
    metrics = _eval_metrics(report)
    timestamp = report.completed_at.timestamp()
    results = []
    for eval_set_id in _eval_set_ids(report):
        cases: Sequence[CaseResult] = [case for case in report.cases if case.eval_set_id == eval_set_id]
        if not cases:
            continue
        result_id = f"{app}_{eval_set_id}_{timestamp}"
        results.append(
            {
                "eval_set_result_id": result_id,
                "eval_set_result_name": result_id.replace("/", "_"),
                "eval_set_id": eval_set_id,
                "eval_case_results": [_case_result(report, case, metrics) for case in cases],
                "creation_timestamp": timestamp,
            }
        )
    return results


def write_eval_set_results(report: RunReport, folder: str | Path, *, app_name: str | None = None) -> list[Path]:
    """Write `<eval_set_result_name>.evalset_result.json` per eval set into `folder` (created if missing).

    Args:
        report: the run report.
        folder: where to write (ADK's own place is `<agent_dir>/.adk/eval_history`).
        app_name: the app name in the result ids; default: the agent's folder.

    Returns:
        The files written, one per eval set.
    """
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    paths = []
    for result in eval_set_results(report, app_name=app_name):
        path = target / f"{result['eval_set_result_name']}{EVAL_SET_RESULT_SUFFIX}"
        path.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        paths.append(path)
    return paths
