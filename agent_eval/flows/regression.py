"""The regression step of a run: compare with the baseline, record the comparison, alert on a regression."""

from __future__ import annotations

from typing import Any

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE
from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from agent_eval.compare.alerts import (
    OUTAGE_EVENT,
    REGRESSION_EVENT,
    alert_payload,
    emit_regression_event,
    outage_payload,
    post_webhook,
    webhook_reference,
)
from agent_eval.compare.efficiency import EfficiencyRules
from agent_eval.compare.regression import NO_BASELINE, compare_runs, no_baseline_payload
from agent_eval.compare.stored_turns import stored_turn_seconds
from agent_eval.plan.eval_plan import EvalPlan
from agent_eval.results.model import RunReport
from agent_eval.schema import RegressionConfig
from agent_eval.secrets import redact_text
from agent_eval.store import Run, get_engine, get_run, load_report, record_regression
from agent_eval.store.queries import choose_baseline

__all__ = ["alert_outage", "compare_with_baseline"]


@task(name="compare-with-baseline", cache_policy=NO_CACHE)
def compare_with_baseline(
    plan: EvalPlan, report: RunReport, baseline_run_id: str | None, run_url: str | None
) -> RunReport:
    """The report with its comparison to the baseline (`report.regression`), also stored with the run.

    The baseline is `baseline_run_id` when pinned, else the latest comparable run (the rule is
    `agent_eval.store.queries.choose_baseline`'s); the comparison keeps to what both runs measured alike
    (`agent_eval.compare.regression`); a rerun of a subset of a run's cases is compared with that run, on the
    case runs it ran again only. With no comparable baseline, `report.regression` (and the stored run)
    says "no comparable baseline" and why, and nothing regressed. Cost per case run and per-turn latency are
    compared too, the turns' seconds read from the store (the baseline is read without its invocations). On a
    regression of any kind (a cost or latency one included, failing the run or not) the `agent-eval.regression`
    event is emitted and the webhook (config or `$AGENT_EVAL_ALERT_WEBHOOK`) is called; a webhook that fails
    is logged and noted in the stored payload, never fatal.
    """
    engine = get_engine(plan.request.db_url)
    choice = choose_baseline(report.run_id, engine, pinned=baseline_run_id)
    if choice.run_id is None:
        get_run_logger().info("%s: %s", NO_BASELINE, choice.reason)
        payload = no_baseline_payload(report.run_id, choice.reason)
        _record_no_baseline(report.run_id, payload, engine)
        return report.model_copy(update={"regression": payload})
    settings = plan.config.regression or RegressionConfig()
    current = report.model_copy(update={"config": get_run(report.run_id, engine).config})  # names each eval set's
    comparison = compare_runs(
        load_report(choice.run_id, engine, details=False),
        current,
        tolerance=settings.tolerance,
        confidence=settings.confidence,
        baseline_reason=choice.reason,
        subset=choice.subset,
        efficiency=EfficiencyRules.of(settings),
        turn_seconds=(stored_turn_seconds(choice.run_id, engine), stored_turn_seconds(report.run_id, engine)),
    )
    payload = alert_payload(comparison, report.eval_set_ids, run_url)
    if comparison.alerted:
        payload["alerts"] = _alert(payload, settings.alert_webhook)
    record_regression(report.run_id, choice.run_id, comparison.regressed, payload, engine)
    return report.model_copy(update={"regression": payload})


def _record_no_baseline(run_id: str, payload: dict[str, Any], engine: Engine) -> None:
    """Store that the run was not compared, and why (`baseline_run_id` and `regressed` stay None)."""
    with Session(engine) as session, session.begin():
        session.execute(update(Run).where(col(Run.id) == run_id).values(regression=payload))


@task(name="alert-outage", cache_policy=NO_CACHE)
def alert_outage(plan: EvalPlan, report: RunReport, run_url: str | None) -> None:
    """An errored run alerts "could not evaluate": the `agent-eval.outage` event and the webhook; it is
    never compared with a baseline."""
    settings = plan.config.regression or RegressionConfig()
    payload = outage_payload(report.run_id, report.eval_set_ids, report.error or "could not evaluate", run_url)
    _alert(payload, settings.alert_webhook, OUTAGE_EVENT)


def _alert(payload: dict[str, object], webhook: str | None, event_name: str = REGRESSION_EVENT) -> dict[str, object]:
    """Emit the event and call the webhook; what happened, for the record.

    The record and the log name the webhook by its reference (`env:NAME`, `prefect-secret:BLOCK`, or a literal
    URL redacted) and show its errors redacted: an httpx error holds the URL, which is a credential.
    """
    logger = get_run_logger()
    if event_name == REGRESSION_EVENT:
        logger.warning("regression against run %s:\n%s", payload.get("baseline_run_id"), payload.get("summary"))
    event_id = emit_regression_event(dict(payload), event_name)
    sent: dict[str, object] = {"event_id": event_id, "webhook": webhook_reference(webhook)}
    try:
        sent["webhook_status"] = post_webhook(dict(payload), webhook)
    except Exception as error:  # an unreachable webhook must not lose the run
        sent["webhook_error"] = redact_text(f"{type(error).__name__}: {error}")
    if "webhook_error" in sent:  # logged outside `except`: a handler that fails prints the exception in hand
        logger.error("the alert webhook %s failed: %s", sent["webhook"], sent["webhook_error"])
    return sent
