"""`agent-eval run --estimate`: a run's projected tokens and dollars (`agent_eval.results.estimate`) as text."""

from __future__ import annotations

from agent_eval.render.console import format_usd, token_lines, unpriced_lines
from agent_eval.results.estimate import CostEstimate, SideEstimate

__all__ = ["estimate_lines"]


def estimate_lines(estimate: CostEstimate) -> list[str]:
    """E.g.
    ```
    Estimate for 30 case runs, from run 1f2e3d4c5b6a (nothing was run: no agent or judge was called)
      agent: 41,200 tokens (36,000 to 48,100), $0.0120 ($0.0105 to $0.0140)
      judges: 90 calls, 120,000 tokens (110,000 to 131,000), $0.0300 ($0.0270 to $0.0330)
      total: $0.0420 ($0.0375 to $0.0470); prices: genai-prices 0.2.5
    Tokens, agent: gemini-2.5-flash 30 calls, 40,000 in / 1,200 out
    ```
    then the models without a price and the notes (what cannot be known)."""
    source = f", from run {estimate.from_run_id}" if estimate.from_run_id else ""
    lines = [f"Estimate for {estimate.case_runs} case runs{source} (nothing was run: no agent or judge was called)"]
    if estimate.agent is not None:
        lines.append(f"  agent: {_side_text(estimate.agent)}")
    if estimate.judges is not None:
        lines.append(f"  judges: {estimate.judge_calls:,} calls, {_side_text(estimate.judges)}")
    if estimate.agent is not None or estimate.judges is not None:
        lines.append(f"  total: {_range(estimate.usd, estimate.usd_low, estimate.usd_high)}; prices: {estimate.table}")
    lines.extend(
        token_lines(estimate.agent.tokens if estimate.agent else {}, estimate.judges.tokens if estimate.judges else {})
    )
    return lines + unpriced_lines(estimate.unpriced) + estimate.notes


def _side_text(side: SideEstimate) -> str:
    tokens = f"{side.total_tokens:,} tokens ({side.tokens_low:,} to {side.tokens_high:,})"
    return f"{tokens}, {_range(side.usd, side.usd_low, side.usd_high)}"


def _range(usd: float | None, low: float | None, high: float | None) -> str:
    if usd is None or low is None or high is None:
        return "cost unknown"
    return f"{format_usd(usd)} ({format_usd(low)} to {format_usd(high)})"
