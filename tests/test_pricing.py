"""What a run's tokens cost (`agent_eval.results.pricing`): the config's `pricing` first, else genai-prices'
table (its version named), an unpriced model or an unreported count unknown (never $0), thinking billed as
output, cached input at the cached price; and the summary's `Cost:` lines."""

from __future__ import annotations

from importlib.metadata import version

import pytest

from agent_eval.render.console import cost_lines
from agent_eval.results.pricing import run_cost
from agent_eval.schema import EvalConfig, ModelPrice, ModelUsage, scoring_fingerprint

TABLE = f"genai-prices {version('genai-prices')}"
FLASH = "gemini-2.5-flash"
OURS = ModelPrice(input_per_mtok=0.2, output_per_mtok=0.8)


def test_the_configs_price_wins_and_counts_cached_input_and_thinking() -> None:
    usage = ModelUsage(calls=2, input_tokens=1_000, output_tokens=100, cached_input_tokens=400, thinking_tokens=50)
    priced = ModelPrice(input_per_mtok=1.0, output_per_mtok=4.0, cached_input_per_mtok=0.25)
    cost = run_cost({FLASH: usage}, {}, {FLASH: priced})
    # 600 fresh x 1.0 + 400 cached x 0.25 + 100 out x 4.0 + 50 thinking x 4.0 (the output price), per million
    assert cost.agent_usd == pytest.approx((600 * 1.0 + 400 * 0.25 + 100 * 4.0 + 50 * 4.0) / 1e6)
    assert cost.agent[FLASH].source == "config"
    assert cost.judge_usd == 0.0 and cost.judges == {} and cost.total_usd == cost.agent_usd  # no judge call: $0


def test_the_table_prices_a_known_model_and_names_its_version() -> None:
    usage = ModelUsage(calls=1, input_tokens=1_000_000, output_tokens=100_000, cached_input_tokens=200_000)
    cost = run_cost({}, {FLASH: usage}, None)
    from genai_prices import Usage, calc_price

    expected = calc_price(Usage(input_tokens=1_000_000, cache_read_tokens=200_000, output_tokens=100_000), FLASH)
    assert cost.judge_usd == pytest.approx(float(expected.total_price))
    assert cost.judge_usd > 0 and cost.judges[FLASH].source == TABLE == cost.table
    assert cost.unpriced == []


def test_an_unpriced_model_or_an_unreported_count_is_unknown_never_zero() -> None:
    cost = run_cost(
        {"my-self-hosted": ModelUsage(calls=1, input_tokens=10, output_tokens=5)},
        {FLASH: ModelUsage(calls=3)},  # three calls that reported no tokens
        None,
    )
    assert (cost.agent_usd, cost.judge_usd, cost.total_usd) == (None, None, None)
    assert cost.agent["my-self-hosted"].source is None and cost.judges[FLASH].source == TABLE
    assert cost.unpriced == ["my-self-hosted"]
    assert cost_lines(cost, 4) == [
        f"Cost: unknown (agent unknown, judges unknown); prices: {TABLE}",
        "Cost unknown for my-self-hosted: no price known; add it to the config's `pricing`",
    ]


def test_cost_lines_give_the_total_the_sides_and_the_cost_per_case_run() -> None:
    cost = run_cost(
        {"ours": ModelUsage(calls=1, input_tokens=1_000_000, output_tokens=1_000_000)},
        {"judge": ModelUsage(calls=1, input_tokens=500_000, output_tokens=0)},
        {"ours": OURS, "judge": OURS},
    )
    # agent 1.0 x 0.2 + 1.0 x 0.8 = 1.00; judges 0.5 x 0.2 = 0.10; 4 case runs
    assert cost_lines(cost, 4) == [f"Cost: $1.10 (agent $1.00, judges $0.1000), $0.2750 per case run; prices: {TABLE}"]


def test_pricing_is_a_config_section_that_does_not_change_what_a_run_measured() -> None:
    config = EvalConfig.model_validate({"pricing": {"my-model": {"input_per_mtok": 0.2, "output_per_mtok": 0.8}}})
    assert config.pricing == {"my-model": OURS}
    assert scoring_fingerprint(config.model_dump(mode="json")) == scoring_fingerprint({})
    with pytest.raises(ValueError, match="input_per_mtok"):
        EvalConfig.model_validate({"pricing": {"m": {"input_per_mtok": -1, "output_per_mtok": 0}}})
