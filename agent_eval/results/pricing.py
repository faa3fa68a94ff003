"""What a run's tokens cost, in US dollars: the config's `pricing` first, else genai-prices' table.

Internal: the public API is `agent_eval`'s; this module's names may change between releases.

The rules:
- A model's price comes from the config's `pricing` section when it names the model (`ModelPrice`, per million
  tokens), else from genai-prices (pydantic's maintained table of providers' prices, with cached-token prices and
  tiers; its version is named in the summary), matched by model name. A model neither knows is *unpriced*.
- A model's cost is unknown (None, never $0) when it is unpriced or when its calls did not report both input and
  output tokens. Thinking tokens are billed as output tokens; cached input tokens at the cached price (the config's
  `cached_input_per_mtok`, else its input price; genai-prices' cache-read price).
- The agent's (or the judges') cost is the sum of its models' costs, unknown when any of them is: a partial sum
  would read as the whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from functools import cache

from pydantic import BaseModel, ConfigDict, Field

from agent_eval.schema import ModelPrice, ModelUsage

JUDGE_TOKENS = "judge_tokens"
"""The key, in a metric result's `details`, of its judge calls' tokens per model (`{model: ModelUsage as JSON}`,
`agent_eval.metrics.judged.usage`)."""

__all__ = ["JUDGE_TOKENS", "ModelCost", "RunCost", "model_cost", "price_table", "run_cost", "stored_prices"]

_PER_MILLION = 1_000_000


class ModelCost(BaseModel):
    """One model's calls, priced: the dollars (None: unknown) and where the price came from."""

    model_config = ConfigDict(frozen=True)

    usd: float | None
    source: str | None = Field(description="`config` or the price table's name and version; None: unpriced.")


class RunCost(BaseModel):
    """What a run's agent and judges cost (rules in the module docstring)."""

    model_config = ConfigDict(frozen=True)

    agent_usd: float | None
    judge_usd: float | None
    agent: dict[str, ModelCost] = Field(default_factory=dict)
    judges: dict[str, ModelCost] = Field(default_factory=dict)
    unpriced: list[str] = Field(default_factory=list, description="Models no price covers, sorted.")
    table: str = Field(description="The price table consulted, e.g. `genai-prices 0.2.5`.")

    @property
    def total_usd(self) -> float | None:
        """Agent and judges together; unknown when either is (a side with no calls costs 0)."""
        sides = [(self.agent, self.agent_usd), (self.judges, self.judge_usd)]
        if any(models and usd is None for models, usd in sides):
            return None
        return sum(usd or 0.0 for _, usd in sides)


def run_cost(
    agent: Mapping[str, ModelUsage], judges: Mapping[str, ModelUsage], pricing: Mapping[str, ModelPrice] | None
) -> RunCost:
    """The cost of a run's per-model tokens, agent and judges apart."""
    overrides = dict(pricing or {})
    agent_costs = {model: model_cost(model, usage, overrides) for model, usage in agent.items()}
    judge_costs = {model: model_cost(model, usage, overrides) for model, usage in judges.items()}
    unpriced = sorted({m for costs in (agent_costs, judge_costs) for m, c in costs.items() if c.source is None})
    return RunCost(
        agent_usd=_total(agent_costs),
        judge_usd=_total(judge_costs),
        agent=agent_costs,
        judges=judge_costs,
        unpriced=unpriced,
        table=price_table(),
    )


def model_cost(model: str, usage: ModelUsage, overrides: Mapping[str, ModelPrice]) -> ModelCost:
    """One model's calls, priced by the config's price for it, else the table's (rules in the module docstring)."""
    if model in overrides:
        return ModelCost(usd=_configured(usage, overrides[model]), source="config")
    found = _table_price(model, usage)
    if found is None:
        return ModelCost(usd=None, source=None)
    return ModelCost(usd=found if _complete(usage) else None, source=price_table())


@cache
def price_table() -> str:
    """The price table's name and version, e.g. `genai-prices 0.2.5`."""
    from importlib.metadata import version

    return f"genai-prices {version('genai-prices')}"


def _complete(usage: ModelUsage) -> bool:
    return usage.input_tokens is not None and usage.output_tokens is not None


def _configured(usage: ModelUsage, price: ModelPrice) -> float | None:
    if not _complete(usage):
        return None
    cached = usage.cached_input_tokens or 0
    fresh = (usage.input_tokens or 0) - cached
    cached_price = price.input_per_mtok if price.cached_input_per_mtok is None else price.cached_input_per_mtok
    thinking_price = price.output_per_mtok if price.thinking_per_mtok is None else price.thinking_per_mtok
    dollars = (
        fresh * price.input_per_mtok
        + cached * cached_price
        + (usage.output_tokens or 0) * price.output_per_mtok
        + (usage.thinking_tokens or 0) * thinking_price
    )
    return dollars / _PER_MILLION


def _table_price(model: str, usage: ModelUsage) -> float | None:
    """genai-prices' price of the calls (None: the table does not know the model)."""
    from genai_prices import Usage, calc_price

    counted = Usage(
        input_tokens=usage.input_tokens or 0,
        cache_read_tokens=usage.cached_input_tokens or 0,
        output_tokens=(usage.output_tokens or 0) + (usage.thinking_tokens or 0),
    )
    try:
        found = calc_price(counted, model.removeprefix("openai:"))
    except LookupError:
        return None
    total = found.total_price
    return float(total) if isinstance(total, Decimal | int | float) else None


def _total(costs: Mapping[str, ModelCost]) -> float | None:
    if any(cost.usd is None for cost in costs.values()):
        return None
    return sum(cost.usd or 0.0 for cost in costs.values())


def stored_prices(config: object) -> dict[str, ModelPrice]:
    """The `pricing` section of a run's stored config (`RunReport.config`), as its cost was priced."""
    pricing = (config.get("pricing") or {}) if isinstance(config, Mapping) else {}
    return {name: ModelPrice.model_validate(price) for name, price in pricing.items()}
