"""The `agent-eval-judge-check` flow: re-check every labelled judge on a schedule, and alert on drift.

Each run checks the judge of every metric that has labelled items (or of the metrics it is given) as
`agent-eval judges check` does (`agent_eval.judges.check`: fresh calls on every labelled item, the check stored),
then, for each check that drifted (its kappa below `min_kappa`, or fallen by more than `max_drop` since the last
check), emits the Prefect event `agent-eval.judge-drift` and POSTs the alert to the webhook, as regressions do:
"judge drift: final_response_match_v2 kappa 0.71 → 0.48 on 64 labels". With `fail_on_drift` a drift ends the
flow run Failed, so Prefect's own notifications on Failed work too.
"""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger
from prefect.states import Completed, Failed
from pydantic import BaseModel, ConfigDict, Field

from agent_eval.compare.alerts import emit_regression_event, post_webhook, webhook_reference
from agent_eval.io import load_eval_config
from agent_eval.judges.check import DEFAULT_MAX_DROP, JudgeCheck, check_judge
from agent_eval.metrics.judged import close_judge_clients
from agent_eval.schema import EvalConfig
from agent_eval.secrets import ConfigParameter, UrlParameter, redact_text
from agent_eval.store import get_engine
from agent_eval.store.labels import labels

__all__ = ["JUDGE_DRIFT_EVENT", "JudgeCheckRequest", "judge_check_flow"]

JUDGE_DRIFT_EVENT = "agent-eval.judge-drift"


class JudgeCheckRequest(BaseModel):
    """The parameters of a scheduled judge check (the `judge-check` deployment's form)."""

    model_config = ConfigDict(extra="forbid")

    metrics: list[str] = Field(
        default_factory=list, description="The judged metrics to check; empty: every labelled one."
    )
    config: ConfigParameter = Field(
        default=None, description="A test_config.json path, or the config itself; default: each metric's last stored."
    )
    db_url: UrlParameter = Field(default=None, description="Store URL. Default: $AGENT_EVAL_DB_URL or SQLite.")
    min_kappa: float | None = Field(default=None, ge=-1, le=1, description="Drift when kappa is below this.")
    max_drop: float = Field(default=DEFAULT_MAX_DROP, ge=0, le=2, description="Drift when kappa fell by more.")
    alert_webhook: UrlParameter = Field(default=None, description="Webhook (or env:NAME) of the drift alert.")
    fail_on_drift: bool = Field(default=False, description="End the flow run Failed when a judge drifted.")


@flow(name="agent-eval-judge-check", log_prints=False)
async def judge_check_flow(request: JudgeCheckRequest) -> Any:
    """Check each labelled judge; alert on drift. Returns every check's summary (or a Failed state on drift when
    `fail_on_drift`)."""
    logger = get_run_logger()
    engine = get_engine(request.db_url)
    config = _config(request.config)
    metrics = request.metrics or sorted({label.metric_name for label in labels(engine)})
    checks: list[JudgeCheck] = []
    try:
        for metric in metrics:
            check = await check_judge(metric, engine, config=config, floor=request.min_kappa, max_drop=request.max_drop)
            logger.info("%s", check.describe())
            checks.append(check)
    finally:
        await close_judge_clients()
    drifted = [check for check in checks if check.drift]
    for check in drifted:
        _alert(check, request.alert_webhook)
    summary = [_summary(check) for check in checks]
    if drifted and request.fail_on_drift:
        return Failed(message="; ".join(check.drift or "" for check in drifted), data=summary)
    return Completed(message=f"{len(checks)} judge(s) checked, {len(drifted)} drifted", data=summary)


def _config(value: str | dict[str, Any] | None) -> EvalConfig | None:
    if value is None:
        return None
    return EvalConfig.model_validate(value) if isinstance(value, dict) else load_eval_config(value)


def _summary(check: JudgeCheck) -> dict[str, Any]:
    return {
        "metric": check.metric,
        "judge": check.judge.describe(),
        "labels": check.agreement.n,
        "kappa": check.agreement.kappa,
        "kappa_interval": check.agreement.kappa_interval,
        "change": check.change,
        "drift": check.drift,
        "check_id": check.stored.id,
    }


def _alert(check: JudgeCheck, webhook: str | None) -> dict[str, Any]:
    """The drift's Prefect event and webhook POST (an unreachable webhook is logged, never raised)."""
    logger = get_run_logger()
    payload = {"text": f":warning: agent-eval {check.drift}", "summary": check.drift, **_summary(check)}
    payload["eval_set_ids"] = [f"judge-{check.metric}"]
    logger.warning("%s", check.drift)
    sent: dict[str, Any] = {"event_id": emit_regression_event(payload, JUDGE_DRIFT_EVENT)}
    sent["webhook"] = webhook_reference(webhook)
    try:
        sent["webhook_status"] = post_webhook(payload, webhook)
    except Exception as error:  # an unreachable webhook must not lose the check
        sent["webhook_error"] = redact_text(f"{type(error).__name__}: {error}")
        logger.error("the alert webhook %s failed: %s", sent["webhook"], sent["webhook_error"])
    return sent
