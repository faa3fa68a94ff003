"""The regression step of a run: compare with the baseline, record the comparison, alert on a regression."""

from __future__ import annotations

from prefect import get_run_logger, task

from agent_eval.alerts import alert_payload, emit_regression_event, post_webhook
from agent_eval.plan import EvalPlan
from agent_eval.report.models import RunReport
from agent_eval.report.regression import compare_runs
from agent_eval.schema import RegressionConfig
from agent_eval.store import find_baseline, get_engine, load_report, record_regression

__all__ = ["compare_with_baseline"]


@task(name="compare-with-baseline")
def compare_with_baseline(
    plan: EvalPlan, report: RunReport, baseline_run_id: str | None, run_url: str | None
) -> RunReport:
    """The report with its comparison to the baseline (`report.regression`), also stored with the run.

    The baseline is `baseline_run_id` when pinned, else the latest other completed run of the same agent
    reference over the same eval set versions; with none, the report is returned as it is. On a regression
    the `agent-eval.regression` event is emitted and the webhook (config or `$AGENT_EVAL_ALERT_WEBHOOK`) is
    called; a webhook that fails is logged and noted in the stored payload, never fatal.
    """
    engine = get_engine(plan.request.db_url)
    baseline_id = baseline_run_id or find_baseline(report.run_id, engine)
    if baseline_id is None:
        get_run_logger().info("no baseline run to compare with")
        return report
    settings = plan.config.regression or RegressionConfig()
    comparison = compare_runs(
        load_report(baseline_id, engine), report, tolerance=settings.tolerance, confidence=settings.confidence
    )
    payload = alert_payload(comparison, report.eval_set_ids, run_url)
    if comparison.regressed:
        payload["alerts"] = _alert(payload, settings.alert_webhook)
    record_regression(report.run_id, baseline_id, comparison.regressed, payload, engine)
    return report.model_copy(update={"regression": payload})


def _alert(payload: dict[str, object], webhook: str | None) -> dict[str, object]:
    """Emit the event and call the webhook; what happened, for the record."""
    logger = get_run_logger()
    logger.warning("regression against run %s:\n%s", payload.get("baseline_run_id"), payload.get("summary"))
    sent: dict[str, object] = {"event_id": emit_regression_event(dict(payload))}
    try:
        sent["webhook_status"] = post_webhook(dict(payload), webhook)
    except Exception as error:  # an unreachable webhook must not lose the run
        logger.error("the alert webhook failed: %s", error)
        sent["webhook_error"] = f"{type(error).__name__}: {error}"
    return sent
