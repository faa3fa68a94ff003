"""The `agent-eval-traces` flow: score what was recorded since the last successful run, on a schedule.

Each run scores the turns that started in `[watermark, now - settle_seconds)`, as one run of the recorded
traffic (stored, compared with its baseline and alerted on like any run), then moves the watermark (kept in the
store, `agent_eval.store.watermarks`) to the end of that window. Only a run that completed moves it: a run that
fails, is cancelled or killed leaves it, and the next run scores every turn that one did not finish. No turn is
scored twice by completed runs, and none is skipped.

`settle_seconds` leaves the newest turns for the next run: exporters write a trace's spans in batches, and a
turn whose root span is not written yet cannot be read whole. The first run (no watermark yet) scores
`first_hours` back.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from prefect import flow, get_run_logger
from prefect.states import Completed
from pydantic import BaseModel, ConfigDict, Field

from agent_eval.flows.evaluate import run_plan
from agent_eval.flows.lifecycle import on_cancelled, on_crashed
from agent_eval.io.recorded import NoRecordedTurns, RecordedSource
from agent_eval.plan.eval_plan import EvalRequest, prepare
from agent_eval.results.model import RunReport
from agent_eval.secrets import ConfigParameter, UrlParameter
from agent_eval.store import RunStatus, get_engine
from agent_eval.store.watermarks import advance_watermark, read_watermark

__all__ = ["TracesRequest", "traces_flow"]


class TracesRequest(BaseModel):
    """The parameters of a scheduled evaluation of recorded traffic (the `traces` deployment's form)."""

    model_config = ConfigDict(extra="forbid")

    recorded: RecordedSource = Field(
        description="What is recorded and which of it to score (span folders, a session database as env:NAME, "
        "filters, a sample per window); its since/until are set by each run from the watermark."
    )
    references: list[str] = Field(default_factory=list, description="Eval files giving references by case id.")
    config: ConfigParameter = Field(default=None, description="A test_config.json path, or the config itself.")
    db_url: UrlParameter = Field(default=None, description="Store URL. Default: $AGENT_EVAL_DB_URL or SQLite.")
    watermark: str = Field(default="traces", description="The name of the watermark this schedule keeps.")
    settle_seconds: float = Field(default=300.0, ge=0, description="Leave turns younger than this to later.")
    first_hours: float = Field(default=24.0, gt=0, description="How far back the first run scores.")
    tags: list[str] = Field(default_factory=list, description="Labels stored with each run.")

    def window(self, watermark: datetime | None, now: datetime) -> tuple[datetime, datetime]:
        """`[since, until)`: from the watermark (or `first_hours` back) to `settle_seconds` ago."""
        until = now - timedelta(seconds=self.settle_seconds)
        return (watermark or until - timedelta(hours=self.first_hours)), until

    def eval_request(self, since: datetime, until: datetime) -> EvalRequest:
        """The evaluation of one window."""
        return EvalRequest(
            paths=self.references,
            config=self.config,
            db_url=self.db_url,
            tags=[*self.tags, "traces"],
            recorded=self.recorded.model_copy(update={"since": since, "until": until}),
        )


@flow(name="agent-eval-traces", log_prints=False, on_cancellation=[on_cancelled], on_crashed=[on_crashed])
async def traces_flow(request: TracesRequest) -> Any:
    """Score the recorded turns of the window since the watermark; move the watermark when the run completed.

    Returns the run's report (or its regression state, as the `agent-eval` flow does), or a Completed state
    saying there was nothing new.
    """
    engine = get_engine(request.db_url)
    since, until = request.window(read_watermark(request.watermark, engine), datetime.now(UTC))
    if since >= until:
        return Completed(message=f"nothing to score before {until.isoformat()}")
    try:
        plan = prepare(request.eval_request(since, until))
    except NoRecordedTurns:
        advance_watermark(request.watermark, until, None, engine)
        return Completed(message=f"no recorded turn in [{since.isoformat()}, {until.isoformat()})")
    plans = [plan]
    del plan  # run_plan takes it over: held here too, its outline would outlive its storing (`without_outline`)
    outcome = await run_plan(plans.pop())
    report = outcome if isinstance(outcome, RunReport) else outcome.data
    if isinstance(report, RunReport) and report.status == RunStatus.COMPLETED:
        advance_watermark(request.watermark, until, report.run_id, engine)
        get_run_logger().info("watermark %r now at %s (run %s)", request.watermark, until.isoformat(), report.run_id)
    return outcome
