"""What an evaluation is asked to do: `EvalRequest`, the `agent-eval` flow's parameters.

Internal: the public API is `agent_eval`'s; this module's names may change between releases. `agent_eval.plan`
checks a request and builds the plan from it."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agent_eval.io import InputFormat
from agent_eval.io.recorded import RecordedSource
from agent_eval.secrets import ConfigParameter, UrlParameter
from agent_eval.settings import DEFAULT_MAX_CONCURRENCY, DEFAULT_TURN_TIMEOUT_SECONDS

__all__ = ["SHARD_DEPLOYMENT", "EvalRequest"]


SHARD_DEPLOYMENT = "agent-eval-shard/shard"
"""The deployment of `deployments/prefect.yaml` that runs one shard of a sharded run."""


class EvalRequest(BaseModel):
    """The parameters of one evaluation (the `agent-eval` flow's parameters, shown as a form in the UI).

    Prefect stores a flow run's parameters as this model's JSON, so its JSON never holds a secret: an inline
    config is written redacted (`agent_eval.secrets.redact_config`: a literal `regression.alert_webhook` as
    `https://host/***`, references such as `env:NAME` as they are) and `db_url` without its password. The
    object itself keeps the literal values: the flow that runs in this process gets it as it was given. A flow
    run started from Prefect (a deployment, a retry from the UI) gets the redacted JSON: give secrets there as
    references (`env:NAME`, `prefect-secret:BLOCK`) and the store URL as `$AGENT_EVAL_DB_URL`.
    """

    model_config = ConfigDict(extra="forbid")

    paths: list[str] = Field(
        default_factory=list,
        description="Eval files or folders; `FILE:case1,case2` selects cases. With `recorded`: the eval sets whose "
        "cases give references to the recorded sessions of the same case id (optional).",
    )
    format: InputFormat = Field(
        default="auto", description="Input format: auto (detect from content), adk (EvalSet / legacy), vertex."
    )
    agent: str | None = Field(
        default=None,
        description="Agent reference: 'package.module:attr', 'file.py:attr', an agent folder, or 'replay'. "
        "Default: 'replay' when every case holds its predictions, else the agent.py beside the eval files.",
    )
    config: ConfigParameter = Field(
        default=None,
        description="An ADK test_config.json path, or the config itself, for every eval set. Default: each eval "
        "file's test_config.json beside it (ADK's default criteria without one).",
    )
    num_runs: int = Field(default=1, ge=1, le=100, description="How many times each case is run.")
    max_concurrency: int = Field(
        default=DEFAULT_MAX_CONCURRENCY, ge=1, le=256, description="Agent invocations running at once."
    )
    db_url: UrlParameter = Field(default=None, description="Store URL. Default: $AGENT_EVAL_DB_URL or SQLite.")
    refresh_cache: bool = Field(default=False, description="Invoke the agent even where a cached run exists.")
    reuse_max_age_hours: float | None = Field(
        default=None,
        gt=0,
        description="Reuse answers of earlier evaluations no older than this (hours). Default: none; every "
        "evaluation invokes the agent (retries and resumes of this evaluation still reuse what finished).",
    )
    reuse_from_runs: list[str] = Field(
        default_factory=list,
        description="Runs whose finished answers this evaluation resumes (set by `rerun`).",
    )
    tags: list[str] = Field(default_factory=list, description="Labels stored with the run (e.g. a release).")
    baseline_run_id: str | None = Field(
        default=None, description="Compare with this run; default: the latest comparable completed run."
    )
    turn_timeout_seconds: float | None = Field(
        default=DEFAULT_TURN_TIMEOUT_SECONDS,
        gt=0,
        description="Seconds one agent turn may take before it is interrupted and retried (None: no limit).",
    )
    shards: int = Field(
        default=1,
        ge=1,
        le=256,
        description="Split the agent invocations into this many flow runs of `shard_deployment`, which any worker "
        "of its work pool runs; the run then scores, compares and alerts as one. 1: invoke in this flow run.",
    )
    shard_deployment: str = Field(
        default=SHARD_DEPLOYMENT, description="The deployment that runs one shard, as FLOW/DEPLOYMENT."
    )
    concurrency_limits: list[str] = Field(
        default_factory=list,
        description="Prefect global concurrency limits (`prefect gcl create NAME --limit N`) of which every agent "
        "invocation holds one slot, across runs and workers: e.g. the model API's quota.",
    )
    dask_address: str | None = Field(
        default=None,
        description="Invoke the agent on the Dask cluster whose scheduler listens here (e.g. tcp://HOST:8786), "
        "through prefect-dask's DaskTaskRunner. Default: $AGENT_EVAL_DASK_ADDRESS; unset: in this process.",
    )
    recorded: RecordedSource | None = Field(
        default=None,
        description="Score recorded traffic (OpenTelemetry traces, ADK sessions) as it is, with no agent call.",
    )
    budget_usd: float | None = Field(
        default=None,
        gt=0,
        description="The most the run may spend on agent and judge calls, in US dollars (default: the config's "
        "`budget`); once reached no new call starts and the run ends `stopped`.",
    )
    max_tokens: int | None = Field(
        default=None,
        gt=0,
        description="The most tokens (input, output, thinking) the run may spend on agent and judge calls "
        "(default: the config's `budget`); once reached no new call starts and the run ends `stopped`.",
    )
    estimate: bool = Field(
        default=False,
        description="Run nothing: project the run's tokens and cost from the last comparable run, shown in the "
        "flow run's log and as its `cost-estimate` artifact.",
    )

    @model_validator(mode="after")
    def _some_input(self) -> EvalRequest:
        if not self.paths and self.recorded is None:
            raise ValueError("give eval files (paths) or recorded traffic (recorded)")
        return self
