"""The evaluation config (ADK's `test_config.json` and agent-eval's own sections: regression, judge, limits) and
the fingerprint of what a config measures."""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, ConfigDict, Field, ValidationInfo, alias_generators, field_validator, model_validator

from agent_eval.schema.base import EvalBaseModel, content_hash
from agent_eval.schema.metrics import BaseCriterion, EvalMetric, MetricInfo
from agent_eval.settings import JUDGE_RETRY_LIMITS  # the one copy of the ranges: Settings.judge_retry_* use it too

__all__ = [
    "DEFAULT_CRITERIA",
    "JUDGE_RETRY_LIMITS",
    "CodeConfig",
    "CustomMetricConfig",
    "EvalConfig",
    "JudgeConfig",
    "LimitsConfig",
    "ModelPrice",
    "RegressionConfig",
    "judge_retry_expected",
    "judge_retry_valid",
    "scoring_fingerprint",
]


class CodeConfig(EvalBaseModel):
    """Where a custom metric's function lives: `pkg.module.function`."""

    name: str
    args: list[Any] | None = None


class CustomMetricConfig(EvalBaseModel):
    """A custom metric declared in the config's `custom_metrics`."""

    code_config: CodeConfig
    metric_info: MetricInfo | None = None
    description: str = ""


class RegressionConfig(EvalBaseModel):
    """agent-eval extension (`regression` in the config): how a run is compared with its baseline.

    A metric regresses when its mean drops by more than `tolerance` (absolute; a dict gives per-metric
    values) and the paired bootstrap interval at `confidence` excludes zero (`agent_eval.compare.regression`).
    Cost per case run and p50 / p95 per-turn latency regress when they rise, relatively, by more than
    `cost_tolerance` / `latency_tolerance` (0.25 = +25%; `agent_eval.compare.efficiency`): reported and alerted
    always, counted in the run's regression verdict (exit code 3) only with `fail_on_cost_regression` /
    `fail_on_latency_regression`.
    """

    tolerance: float | dict[str, float] = 0.05
    confidence: float = Field(default=0.95, gt=0, lt=1)
    fail_on_regression: bool = False
    alert_webhook: str | None = None
    cost_tolerance: float = 0.25
    latency_tolerance: float = 0.5
    fail_on_cost_regression: bool = False
    fail_on_latency_regression: bool = False

    @field_validator("cost_tolerance", "latency_tolerance", mode="before")
    @classmethod
    def _a_relative_rise(cls, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
            raise ValueError(f"must be a relative rise of 0 or more, e.g. 0.25 for +25%, got {value!r}")
        return value


def judge_retry_expected(name: str) -> str:
    """What the judge retry setting `name` (a key of `JUDGE_RETRY_LIMITS`) must be, e.g. `a whole number from 1
    to 100`."""
    low, high = JUDGE_RETRY_LIMITS[name]
    kind = "a whole number" if name == "attempts" else "a number of seconds"
    return f"{kind} from {low:g} to {high:g}"


def judge_retry_valid(name: str, value: object) -> bool:
    """Whether `value` is a valid judge retry setting `name` (a key of `JUDGE_RETRY_LIMITS`)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    low, high = JUDGE_RETRY_LIMITS[name]
    return low <= value <= high and (name != "attempts" or float(value).is_integer())


class JudgeConfig(EvalBaseModel):
    """agent-eval extension (`judge` in the config): how failed judge calls are retried, and which judges may gate.

    Each setting left out comes from the environment (`AGENT_EVAL_JUDGE_RETRY_ATTEMPTS`,
    `AGENT_EVAL_JUDGE_RETRY_INITIAL_DELAY`, `AGENT_EVAL_JUDGE_RETRY_MAX_DELAY`), else ADK's default (7 attempts,
    5 s doubling up to 120 s). Retry settings never change a judge answer's cache key nor what a run measured.

    `min_agreement` gates on calibrated judges: a judged criterion whose judge identity has no check
    (`agent-eval judges check`) or whose last check's kappa is below the floor still scores and shows, but is
    informational: it neither fails a case nor raises a regression (`agent_eval.judges.gate`). Unset: every
    judged criterion gates as before. It says how verdicts are used, not what is measured: no part of the
    scoring fingerprint.

    Attributes:
        retry_attempts: calls in all, the first included (1 = no retry), 1..100.
        retry_initial_delay: seconds before the first retry, 0..3600.
        retry_max_delay: the longest wait between attempts, in seconds, 0..3600.
        min_agreement: the least kappa, in [-1, 1], of a judge's last check; a dict gives it per criterion,
            `"default"` for the others (a criterion missing from a dict without `"default"` is not gated).
    """

    retry_attempts: int | None = None
    retry_initial_delay: float | None = None
    retry_max_delay: float | None = None
    min_agreement: float | dict[str, float] | None = None

    @field_validator("min_agreement")
    @classmethod
    def _a_kappa(cls, value: float | dict[str, float] | None) -> float | dict[str, float] | None:
        values = value.values() if isinstance(value, dict) else [] if value is None else [value]
        for one in values:
            if not -1.0 <= one <= 1.0:
                raise ValueError(f"must be a kappa from -1 to 1, e.g. 0.6, got {one!r}")
        return value

    def agreement_floor(self, metric_name: str) -> float | None:
        """The least kappa the judge of `metric_name` must have shown at its last check; None: not gated."""
        if isinstance(self.min_agreement, dict):
            return self.min_agreement.get(metric_name, self.min_agreement.get("default"))
        return self.min_agreement

    @field_validator("retry_attempts", "retry_initial_delay", "retry_max_delay", mode="before")
    @classmethod
    def _in_range(cls, value: Any, info: ValidationInfo) -> Any:
        name = str(info.field_name).removeprefix("retry_")
        if value is not None and not judge_retry_valid(name, value):
            raise ValueError(f"must be {judge_retry_expected(name)}, got {value!r}")
        return value


class ModelPrice(EvalBaseModel):
    """agent-eval extension (`pricing` in the config): what one model's tokens cost, in US dollars per million
    tokens, for a model the price table does not know (a self-hosted model) or a negotiated rate.

    Attributes:
        input_per_mtok: the prompt's tokens.
        output_per_mtok: the answer's tokens.
        cached_input_per_mtok: prompt tokens read from the provider's cache (default: `input_per_mtok`).
        thinking_per_mtok: the model's thinking tokens (default: `output_per_mtok`, as providers bill them).
    """

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)
    cached_input_per_mtok: float | None = Field(default=None, ge=0)
    thinking_per_mtok: float | None = Field(default=None, ge=0)


class BudgetConfig(EvalBaseModel):
    """agent-eval extension (`budget` in the config): the most a run may spend on its agent's and judges' model
    calls, in US dollars (`usd`) and/or tokens (`tokens`: input, output and thinking); `--budget` and
    `--max-tokens` (the deployments' `budget_usd` and `max_tokens`) take precedence. The rule that stops a run is
    `agent_eval.results.budget`'s."""

    usd: float | None = Field(default=None, gt=0)
    tokens: int | None = Field(default=None, gt=0)


class LimitsConfig(EvalBaseModel):
    """agent-eval extension (`limits` in the config): Prefect global concurrency or rate limits, by name, that
    hold across every run, shard and worker naming them (`prefect gcl create NAME --limit N`, plus
    `--slot-decay-per-second R` for a rate limit; see `agent_eval.tasks.limits`).

    Limits never change what a run measures: they are no part of the config's scoring fingerprint.

    Attributes:
        invocations: limits every agent invocation holds (with the run's `--concurrency-limit` names).
        judge_calls: limits every judge request holds, e.g. the judge's API key's requests per minute.
    """

    invocations: list[str] = Field(default_factory=list)
    judge_calls: list[str] = Field(default_factory=list)

    @field_validator("invocations", "judge_calls")
    @classmethod
    def _names(cls, names: list[str]) -> list[str]:
        if any(not name.strip() for name in names):
            raise ValueError("a limit name must not be empty")
        return names


DEFAULT_CRITERIA: dict[str, float] = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}
"""What ADK uses when no config file is given."""


class EvalConfig(EvalBaseModel):
    """Which metrics to compute and how (ADK `test_config.json`).

    A criterion is a bare threshold (`"response_match_score": 0.8`) or an object with `threshold` and options.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True, alias_generator=alias_generators.to_camel)

    criteria: dict[str, BaseCriterion] = Field(
        default_factory=lambda: {k: BaseCriterion(threshold=v) for k, v in DEFAULT_CRITERIA.items()}
    )
    custom_metrics: dict[str, CustomMetricConfig] | None = None
    user_simulator_config: dict[str, Any] | None = Field(
        default=None, validation_alias=AliasChoices("user_simulator_config", "userSimulatorConfig")
    )
    regression: RegressionConfig | None = None
    judge: JudgeConfig | None = None
    limits: LimitsConfig | None = None
    pricing: dict[str, ModelPrice] | None = None
    budget: BudgetConfig | None = None

    @model_validator(mode="before")
    @classmethod
    def _bare_thresholds(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("criteria"), dict):
            data = dict(data)
            data["criteria"] = {
                name: {"threshold": value} if isinstance(value, int | float) and not isinstance(value, bool) else value
                for name, value in data["criteria"].items()
            }
        return data

    def eval_metrics(self) -> list[EvalMetric]:
        """One `EvalMetric` per criterion, with the custom function path where one is declared."""
        customs = self.custom_metrics or {}
        return [
            EvalMetric(
                metric_name=name,
                threshold=criterion.threshold,
                criterion=criterion,
                custom_function_path=customs[name].code_config.name if name in customs else None,
            )
            for name, criterion in self.criteria.items()
        ]

    def fingerprint(self) -> str:
        """A stable hash of the config's whole content (`runs.config_hash`), regression settings included."""
        return content_hash(self)

    def scoring_fingerprint(self) -> str:
        """A stable hash of what the config measures: all but the `regression`, `judge`, `limits`, `pricing` and
        `budget` sections (see `scoring_fingerprint`). Two runs with the same scoring fingerprint measured alike."""
        return scoring_fingerprint(self.model_dump(mode="json", exclude_none=True))


_NOT_MEASURED = ("regression", "judge", "limits", "pricing", "budget")


def scoring_fingerprint(config: dict[str, Any]) -> str:
    """The hash of what a config (as JSON: a `test_config.json`'s content, or `runs.config` of any release)
    measures: the criteria with their thresholds and options, the custom metrics' code and the user simulator.

    The `regression` section (tolerance, confidence, fail_on_regression, alert webhook), the `judge` section
    (retry settings, calibration floors), the `limits` section (global limits), the `pricing` section (prices)
    and the `budget` section are left out: they say how runs are compared, paced, priced or capped, not what a
    run measured. Bare thresholds count
    as `{"threshold": x}`, option keys as snake_case (`matchType` is `match_type`), and a config with no
    `criteria` as ADK's default criteria, so equal configs written differently hash alike. A criterion's
    `judge_profile` and `judge_examples` are left out too: they are part of the judge's identity
    (`agent_eval.metrics.judged.identity`), which decides, and names, whether two runs' judges are alike.
    """
    data = {key: value for key, value in config.items() if key not in _NOT_MEASURED}
    criteria = data.get("criteria", DEFAULT_CRITERIA)
    if isinstance(criteria, dict):
        data["criteria"] = {
            name: {"threshold": value} if isinstance(value, int | float) and not isinstance(value, bool) else value
            for name, value in criteria.items()
        }
    snake = _snake_keys(data)
    if isinstance(snake.get("criteria"), dict):
        snake["criteria"] = {name: _without_examples(value) for name, value in snake["criteria"].items()}
    return content_hash(snake)


def _without_examples(criterion: Any) -> Any:
    if not isinstance(criterion, dict):
        return criterion
    return {key: value for key, value in criterion.items() if key not in ("judge_profile", "judge_examples")}


def _snake_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {alias_generators.to_snake(str(k)): _snake_keys(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_snake_keys(item) for item in value]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)  # a threshold of 1 and of 1.0 is the same threshold
    return value
