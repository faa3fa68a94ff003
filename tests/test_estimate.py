"""`--estimate`'s projection (`agent_eval.results.estimate.estimate_cost`, issue 31 item 4) on run reports built
by hand: the agent's tokens per planned case run from the earlier run's case runs of that case (mean, cheapest,
dearest), a new case at the mean of the earlier cases' means, failed / cached / token-less case runs left out,
judge tokens per sample times the samples drawn now on the model named now, what cannot be known said in the
notes; dollars from the config's prices, and the console's lines (`estimate_lines`).

Every expectation is computed by hand from the tokens written in the test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from agent_eval.render.estimate import estimate_lines
from agent_eval.results.aggregate import build_report
from agent_eval.results.estimate import CostEstimate, PlannedCaseRun, PlannedJudge, estimate_cost
from agent_eval.results.model import CaseResult, MetricResult, RunReport
from agent_eval.results.pricing import JUDGE_TOKENS, price_table
from agent_eval.schema import AgentRun, CacheOrigin, EvalConfig, EvalStatus, ModelPrice, ModelUsage, TokenUsage

SET = "travel"
EARLIER = "earlier1"
AGENT_MODEL = "my-model"
JUDGE_MODEL = "judge-model"
NEW_JUDGE = "new-judge-model"
UNPRICED = "my-unlisted-model-7"
SAFETY = "safety_v1"
HALLUCINATIONS = "hallucinations_v1"
# $ per million tokens: input, output
PRICING = {
    AGENT_MODEL: ModelPrice(input_per_mtok=0.2, output_per_mtok=0.8),
    JUDGE_MODEL: ModelPrice(input_per_mtok=1.0, output_per_mtok=4.0),
    NEW_JUDGE: ModelPrice(input_per_mtok=2.0, output_per_mtok=8.0),
}
NO_EARLIER_RUN = "no earlier completed run of this agent on these eval sets: tokens and cost cannot be projected"


def usage(input_tokens: int, output_tokens: int, calls: int = 1) -> ModelUsage:
    return ModelUsage(calls=calls, input_tokens=input_tokens, output_tokens=output_tokens)


def dollars(input_tokens: float, output_tokens: float, model: str) -> float:
    price = PRICING[model]
    return (input_tokens * price.input_per_mtok + output_tokens * price.output_per_mtok) / 1e6


def case_run(
    eval_id: str,
    agent: Mapping[str, ModelUsage] | None,
    *,
    run_index: int = 0,
    error: str | None = None,
    cached: bool = False,
    judged: Mapping[str, Mapping[str, Any]] | None = None,
    token_usage: TokenUsage | None = None,
) -> CaseResult:
    """A case run of eval set SET whose agent reported `agent` per model (None: no token usage), and one metric
    per `judged` criterion with those judge tokens (`{model: ModelUsage as JSON}`) in its details."""
    if token_usage is None and agent is not None:
        token_usage = TokenUsage(by_model=dict(agent))
    run = AgentRun(
        eval_set_id=SET,
        eval_id=eval_id,
        run_index=run_index,
        token_usage=token_usage,
        error=error,
        cached_from=CacheOrigin(run_id="older") if cached else None,
    )
    metrics = [
        MetricResult(
            metric_name=name,
            eval_set_id=SET,
            eval_id=eval_id,
            run_index=run_index,
            score=1.0,
            status=EvalStatus.PASSED,
            details={JUDGE_TOKENS: dict(tokens)},
        )
        for name, tokens in (judged or {}).items()
    ]
    status = EvalStatus.NOT_EVALUATED if error else EvalStatus.PASSED
    return CaseResult(
        eval_set_id=SET, eval_id=eval_id, run_index=run_index, status=status, agent_run=run, metrics=metrics
    )


def earlier_run(cases: Sequence[CaseResult], judge_samples: Mapping[str, int] | None = None) -> RunReport:
    """A completed run of SET with these case runs; `judge_samples`: each judged criterion's samples then."""
    report = build_report(
        run_id=EARLIER,
        cases=cases,
        config=EvalConfig(),
        eval_set_ids=[SET],
        agent_reference="agent.py:agent",
        agent_fingerprint="fingerprint",
        num_runs=max(case.run_index for case in cases) + 1,
        started_at=datetime(2025, 1, 1, tzinfo=UTC),
        completed_at=datetime(2025, 1, 1, 0, 5, tzinfo=UTC),
    )
    judges = {
        SET: {
            name: {"model": JUDGE_MODEL, "mode": "agent-eval", "prompts": "v1", "samples": samples}
            for name, samples in (judge_samples or {}).items()
        }
    }
    return report.model_copy(update={"judges": judges if judge_samples else None})


def planned(eval_id: str, times: int = 1, **judges: PlannedJudge) -> list[PlannedCaseRun]:
    """`times` planned case runs of the case (its runs), each scored by `judges`."""
    return [PlannedCaseRun(SET, eval_id, judges) for _ in range(times)]


def alpha_twice() -> list[CaseResult]:
    """Case alpha seen twice: 100 in / 10 out (110 tokens), then 300 in / 30 out (330 tokens)."""
    return [
        case_run("alpha", {AGENT_MODEL: usage(100, 10)}),
        case_run("alpha", {AGENT_MODEL: usage(300, 30)}, run_index=1),
    ]


def judge_json(input_tokens: int, output_tokens: int, calls: int) -> dict[str, int]:
    return {"calls": calls, "input_tokens": input_tokens, "output_tokens": output_tokens}


# ------------------------------------------------------------------------------------------------ the agent
def test_a_case_seen_twice_is_projected_at_its_mean_with_its_cheapest_and_dearest_run_as_range() -> None:
    estimate = estimate_cost(planned("alpha"), earlier_run(alpha_twice()), PRICING)

    assert (estimate.case_runs, estimate.from_run_id) == (1, EARLIER)
    assert estimate.agent is not None
    assert estimate.agent.tokens == {AGENT_MODEL: usage(200, 20)}
    assert (estimate.agent.total_tokens, estimate.agent.tokens_low, estimate.agent.tokens_high) == (220, 110, 330)
    assert estimate.agent.usd == pytest.approx(dollars(200, 20, AGENT_MODEL))  # $0.000056
    assert estimate.agent.usd_low == pytest.approx(dollars(100, 10, AGENT_MODEL))
    assert estimate.agent.usd_high == pytest.approx(dollars(300, 30, AGENT_MODEL))
    assert (estimate.judges, estimate.judge_calls, estimate.unpriced, estimate.notes) == (None, None, [], [])
    # no judged criterion: the total is the agent's
    assert (estimate.usd, estimate.usd_low, estimate.usd_high) == (
        estimate.agent.usd,
        estimate.agent.usd_low,
        estimate.agent.usd_high,
    )


def test_three_runs_of_the_case_cost_three_times_as_much() -> None:
    estimate = estimate_cost(planned("alpha", times=3), earlier_run(alpha_twice()), PRICING)

    assert estimate.case_runs == 3
    assert estimate.agent is not None
    assert estimate.agent.tokens == {AGENT_MODEL: usage(600, 60, calls=3)}
    assert (estimate.agent.total_tokens, estimate.agent.tokens_low, estimate.agent.tokens_high) == (660, 330, 990)
    assert estimate.agent.usd == pytest.approx(dollars(600, 60, AGENT_MODEL))
    assert estimate.agent.usd_low == pytest.approx(dollars(300, 30, AGENT_MODEL))
    assert estimate.agent.usd_high == pytest.approx(dollars(900, 90, AGENT_MODEL))


def test_a_case_the_earlier_run_lacks_takes_fractional_means_of_repeated_runs() -> None:
    # alpha ran 3 times (100, 100, 101 input tokens): its mean is fractional, as gamma's projection from it
    runs = [
        case_run("alpha", {AGENT_MODEL: usage(tokens, 10)}, run_index=i) for i, tokens in enumerate((100, 100, 101))
    ]

    estimate = estimate_cost([*planned("gamma", 3)], earlier_run(runs), PRICING)

    assert estimate.agent is not None
    assert estimate.agent.tokens == {AGENT_MODEL: usage(301, 30, calls=3)}  # 3 x 100.33 rounded once, at the end


def test_a_case_the_earlier_run_lacks_costs_the_mean_of_its_cases_means_and_is_noted() -> None:
    # alpha's mean 200 / 20 (220 tokens), beta's 1000 / 100 (1100 tokens)
    earlier = earlier_run([*alpha_twice(), case_run("beta", {AGENT_MODEL: usage(1000, 100)})])

    estimate = estimate_cost([*planned("alpha"), *planned("gamma")], earlier, PRICING)

    assert estimate.agent is not None
    # alpha 200 / 20, gamma (200 + 1000) / 2 = 600 / (20 + 100) / 2 = 60
    assert estimate.agent.tokens == {AGENT_MODEL: usage(800, 80, calls=2)}
    # low: alpha's cheapest run 110 + the cheapest mean 220; high: alpha's dearest 330 + the dearest mean 1100
    assert (estimate.agent.tokens_low, estimate.agent.tokens_high) == (110 + 220, 330 + 1100)
    assert estimate.agent.usd == pytest.approx(dollars(800, 80, AGENT_MODEL))
    assert estimate.agent.usd_low == pytest.approx(dollars(100 + 200, 10 + 20, AGENT_MODEL))
    assert estimate.agent.usd_high == pytest.approx(dollars(300 + 1000, 30 + 100, AGENT_MODEL))
    assert estimate.notes == [
        f"1 case(s) with no usable answer in run {EARLIER} (not in it, failed, or reused): "
        "projected at the mean of its cases"
    ]


def test_failed_cached_and_token_less_case_runs_are_not_examples() -> None:
    earlier = earlier_run(
        [
            case_run("alpha", {AGENT_MODEL: usage(100, 10)}),
            case_run("alpha", {AGENT_MODEL: usage(9_000, 900)}, run_index=1, error="boom"),
            case_run("alpha", {AGENT_MODEL: usage(5_000, 500)}, run_index=2, cached=True),
            case_run("alpha", None, run_index=3),
            case_run("alpha", None, run_index=4, token_usage=TokenUsage(input_tokens=7_000, output_tokens=700)),
        ]
    )

    estimate = estimate_cost(planned("alpha", times=2), earlier, PRICING)

    assert estimate.agent is not None
    assert estimate.agent.tokens == {AGENT_MODEL: usage(200, 20, calls=2)}
    assert (estimate.agent.tokens_low, estimate.agent.tokens_high) == (220, 220)
    assert estimate.agent.usd == estimate.agent.usd_low == estimate.agent.usd_high
    assert estimate.agent.usd == pytest.approx(dollars(200, 20, AGENT_MODEL))
    assert estimate.notes == []


def test_an_earlier_run_with_no_agent_tokens_by_model_projects_no_agent_cost_and_says_so() -> None:
    earlier = earlier_run(
        [
            case_run("alpha", {AGENT_MODEL: usage(9_000, 900)}, error="boom"),
            case_run("alpha", {AGENT_MODEL: usage(5_000, 500)}, run_index=1, cached=True),
            case_run("alpha", None, run_index=2, token_usage=TokenUsage(input_tokens=7_000, output_tokens=700)),
        ]
    )

    estimate = estimate_cost(planned("alpha"), earlier, PRICING)

    assert (estimate.from_run_id, estimate.agent, estimate.judges, estimate.judge_calls) == (EARLIER, None, None, None)
    assert (estimate.usd, estimate.usd_low, estimate.usd_high) == (None, None, None)
    assert estimate.notes == [f"run {EARLIER} recorded no agent tokens by model: the agent's cost cannot be projected"]


def test_thinking_tokens_count_in_the_total_and_are_billed_as_output_cached_input_at_the_input_price() -> None:
    used = ModelUsage(calls=2, input_tokens=1_000, cached_input_tokens=400, output_tokens=100, thinking_tokens=50)
    earlier = earlier_run([case_run("alpha", {AGENT_MODEL: used})])

    estimate = estimate_cost(planned("alpha", times=2), earlier, PRICING)

    assert estimate.agent is not None
    doubled = ModelUsage(calls=4, input_tokens=2_000, cached_input_tokens=800, output_tokens=200, thinking_tokens=100)
    assert estimate.agent.tokens == {AGENT_MODEL: doubled}
    # input (cached included) + output + thinking; cached input is part of the input, not added again
    assert (estimate.agent.total_tokens, estimate.agent.tokens_low, estimate.agent.tokens_high) == (2_300,) * 3
    # 1,200 fresh + 800 cached at 0.2 (no cached price: the input price), 200 out + 100 thinking at 0.8
    assert estimate.agent.usd == pytest.approx((2_000 * 0.2 + 300 * 0.8) / 1e6)


def test_a_case_whose_earlier_runs_all_failed_is_projected_at_the_mean_and_noted() -> None:
    earlier = earlier_run(
        [
            case_run("alpha", {AGENT_MODEL: usage(100, 10)}),
            case_run("beta", {AGENT_MODEL: usage(1_000, 100)}, error="boom"),
        ]
    )

    estimate = estimate_cost([*planned("alpha"), *planned("beta")], earlier, PRICING)

    assert estimate.agent is not None
    assert estimate.agent.tokens == {AGENT_MODEL: usage(200, 20, calls=2)}  # beta at alpha's mean: a guess
    assert len(estimate.notes) == 1  # ... that must be said, as for a case not in the run (today: no note)


# ------------------------------------------------------------------------------------------------ the judges
def judged_alpha_once(samples_then: int = 5) -> RunReport:
    """alpha once: the agent 100 / 10, safety_v1's judge 1000 in / 50 out over 5 calls (5 samples)."""
    judged = {SAFETY: {JUDGE_MODEL: judge_json(1_000, 50, calls=5)}}
    return earlier_run([case_run("alpha", {AGENT_MODEL: usage(100, 10)}, judged=judged)], {SAFETY: samples_then})


def test_judge_tokens_per_earlier_sample_times_the_samples_drawn_now() -> None:
    one = estimate_cost(planned("alpha", safety_v1=PlannedJudge(JUDGE_MODEL, 1)), judged_alpha_once(), PRICING)
    five = estimate_cost(planned("alpha", safety_v1=PlannedJudge(JUDGE_MODEL, 5)), judged_alpha_once(), PRICING)

    assert one.judges is not None and five.judges is not None and one.agent is not None
    # one sample: 1000 / 5 = 200 in, 50 / 5 = 10 out, 5 / 5 = 1 call
    assert one.judges.tokens == {JUDGE_MODEL: usage(200, 10)}
    assert (one.judge_calls, one.judges.tokens_low, one.judges.tokens_high) == (1, 210, 210)
    assert one.judges.usd == pytest.approx(dollars(200, 10, JUDGE_MODEL))
    assert one.usd == pytest.approx(dollars(100, 10, AGENT_MODEL) + dollars(200, 10, JUDGE_MODEL))
    assert five.judges.tokens == {JUDGE_MODEL: usage(1_000, 50, calls=5)}
    assert (five.judge_calls, five.judges.tokens_low, five.judges.tokens_high) == (5, 1_050, 1_050)
    assert five.judges.usd == pytest.approx(dollars(1_000, 50, JUDGE_MODEL))
    assert one.notes == five.notes == []


def test_judge_range_comes_from_the_cases_cheapest_and_dearest_judged_run() -> None:
    earlier = earlier_run(
        [
            case_run("alpha", {AGENT_MODEL: usage(100, 10)}, judged={SAFETY: {JUDGE_MODEL: judge_json(1_000, 50, 5)}}),
            case_run(
                "alpha",
                {AGENT_MODEL: usage(300, 30)},
                run_index=1,
                judged={SAFETY: {JUDGE_MODEL: judge_json(2_000, 100, 5)}},
            ),
        ],
        {SAFETY: 5},
    )

    estimate = estimate_cost(planned("alpha", safety_v1=PlannedJudge(JUDGE_MODEL, 2)), earlier, PRICING)

    assert estimate.judges is not None
    # per sample: 200 / 10 and 400 / 20, mean 300 / 15; two samples now
    assert estimate.judges.tokens == {JUDGE_MODEL: usage(600, 30, calls=2)}
    assert (estimate.judge_calls, estimate.judges.tokens_low, estimate.judges.tokens_high) == (2, 420, 840)
    assert estimate.judges.usd_low == pytest.approx(dollars(400, 20, JUDGE_MODEL))
    assert estimate.judges.usd_high == pytest.approx(dollars(800, 40, JUDGE_MODEL))


def test_a_changed_judge_model_keeps_the_tokens_and_takes_the_new_models_name_and_price() -> None:
    estimate = estimate_cost(planned("alpha", safety_v1=PlannedJudge(NEW_JUDGE, 1)), judged_alpha_once(), PRICING)

    assert estimate.judges is not None
    assert estimate.judges.tokens == {NEW_JUDGE: usage(200, 10)}
    assert estimate.judges.usd == pytest.approx(dollars(200, 10, NEW_JUDGE))  # 2.0 and 8.0 $/Mtok, not 1.0 and 4.0
    assert estimate.judges.usd == pytest.approx((200 * 2.0 + 10 * 8.0) / 1e6)


def test_a_criterion_the_earlier_run_did_not_judge_is_left_out_and_noted() -> None:
    judges = {"safety_v1": PlannedJudge(JUDGE_MODEL, 1), "hallucinations_v1": PlannedJudge(JUDGE_MODEL, 1)}

    estimate = estimate_cost(planned("alpha", **judges), judged_alpha_once(), PRICING)

    assert estimate.judges is not None
    assert estimate.judges.tokens == {JUDGE_MODEL: usage(200, 10)}  # safety_v1's only
    assert estimate.judge_calls == 1
    assert estimate.notes == [
        f"{HALLUCINATIONS}: run {EARLIER} made no judge call for it to learn from: its cost is left out"
    ]


def test_an_earlier_run_with_no_judge_call_at_all_projects_no_judge_side_and_says_so() -> None:
    earlier = earlier_run(alpha_twice())

    estimate = estimate_cost(planned("alpha", safety_v1=PlannedJudge(JUDGE_MODEL, 3)), earlier, PRICING)

    assert (estimate.judges, estimate.judge_calls) == (None, None)
    assert estimate.agent is not None and estimate.agent.tokens == {AGENT_MODEL: usage(200, 20)}
    assert estimate.notes == [f"{SAFETY}: run {EARLIER} made no judge call for it to learn from: its cost is left out"]


def test_judge_answers_reused_from_the_cache_are_not_examples() -> None:
    # run 1's judge answers came from the judge cache: no judge tokens in its details
    earlier = earlier_run(
        [
            case_run("alpha", {AGENT_MODEL: usage(100, 10)}, judged={SAFETY: {JUDGE_MODEL: judge_json(1_000, 50, 5)}}),
            case_run("alpha", {AGENT_MODEL: usage(100, 10)}, run_index=1, judged={SAFETY: {}}),
        ],
        {SAFETY: 5},
    )

    estimate = estimate_cost(planned("alpha", safety_v1=PlannedJudge(JUDGE_MODEL, 1)), earlier, PRICING)

    assert estimate.judges is not None
    assert estimate.judges.tokens == {JUDGE_MODEL: usage(200, 10)}  # not (200 + 0) / 2
    assert (estimate.judges.tokens_low, estimate.judges.tokens_high) == (210, 210)


# ------------------------------------------------------------------------------------------------ unknowns
def test_with_no_earlier_run_nothing_is_projected_and_the_note_says_so() -> None:
    estimate = estimate_cost(
        [*planned("alpha", 2, safety_v1=PlannedJudge(JUDGE_MODEL, 1)), *planned("beta")], None, PRICING
    )

    assert estimate == CostEstimate(
        case_runs=3, from_run_id=None, agent=None, judges=None, judge_calls=None, notes=[NO_EARLIER_RUN]
    )
    assert (estimate.usd, estimate.usd_low, estimate.usd_high, estimate.unpriced) == (None, None, None, [])
    assert estimate_lines(estimate) == [
        "Estimate for 3 case runs (nothing was run: no agent or judge was called)",
        NO_EARLIER_RUN,
    ]


def test_an_unpriced_model_has_no_dollars_but_its_tokens_are_projected() -> None:
    earlier = earlier_run(
        [case_run("alpha", {UNPRICED: usage(100, 10)}), case_run("alpha", {UNPRICED: usage(300, 30)}, run_index=1)]
    )

    estimate = estimate_cost(planned("alpha"), earlier, PRICING)

    assert estimate.agent is not None
    assert estimate.agent.tokens == {UNPRICED: usage(200, 20)}
    assert (estimate.agent.tokens_low, estimate.agent.tokens_high) == (110, 330)
    assert (estimate.agent.usd, estimate.agent.usd_low, estimate.agent.usd_high) == (None, None, None)
    assert (estimate.usd, estimate.usd_low, estimate.usd_high) == (None, None, None)
    assert estimate.unpriced == [UNPRICED]
    assert estimate_lines(estimate) == [
        f"Estimate for 1 case runs, from run {EARLIER} (nothing was run: no agent or judge was called)",
        "  agent: 220 tokens (110 to 330), cost unknown",
        f"  total: cost unknown; prices: {price_table()}",
        f"Tokens, agent: {UNPRICED} 1 call, 200 in / 20 out",
        f"Cost unknown for {UNPRICED}: no price known; add it to the config's `pricing`",
    ]


def test_an_unpriced_judge_model_leaves_the_total_unknown_but_the_agents_cost_known() -> None:
    estimate = estimate_cost(planned("alpha", safety_v1=PlannedJudge(UNPRICED, 1)), judged_alpha_once(), PRICING)

    assert estimate.judges is not None and estimate.agent is not None
    assert estimate.judges.tokens == {UNPRICED: usage(200, 10)}
    assert estimate.judges.usd is None
    assert estimate.agent.usd == pytest.approx(dollars(100, 10, AGENT_MODEL))
    assert (estimate.usd, estimate.unpriced) == (None, [UNPRICED])


def test_a_model_the_price_table_knows_is_priced_by_genai_prices_without_a_config_price() -> None:
    from genai_prices import Usage, calc_price

    flash = "gemini-2.5-flash"
    earlier = earlier_run(
        [
            case_run("alpha", {flash: usage(100_000, 10_000)}),
            case_run("alpha", {flash: usage(300_000, 30_000)}, run_index=1),
        ]
    )

    estimate = estimate_cost(planned("alpha"), earlier, None)

    def table_price(input_tokens: int, output_tokens: int) -> float:
        price = calc_price(Usage(input_tokens=input_tokens, cache_read_tokens=0, output_tokens=output_tokens), flash)
        return float(price.total_price)

    assert estimate.agent is not None
    assert estimate.agent.usd == pytest.approx(table_price(200_000, 20_000))
    assert estimate.agent.usd_low == pytest.approx(table_price(100_000, 10_000))
    assert estimate.agent.usd_high == pytest.approx(table_price(300_000, 30_000))
    assert estimate.agent.usd is not None and estimate.agent.usd > 0
    assert (estimate.unpriced, estimate.table) == ([], price_table())


# ------------------------------------------------------------------------------------------------ the lines
def test_estimate_lines_give_each_side_the_total_the_tokens_and_the_notes() -> None:
    earlier = earlier_run(
        [
            case_run(
                "alpha",
                {AGENT_MODEL: usage(100_000, 10_000)},
                judged={SAFETY: {JUDGE_MODEL: judge_json(50_000, 5_000, 5)}},
            ),
            case_run(
                "alpha",
                {AGENT_MODEL: usage(300_000, 30_000)},
                run_index=1,
                judged={SAFETY: {JUDGE_MODEL: judge_json(150_000, 15_000, 5)}},
            ),
        ],
        {SAFETY: 5},
    )
    judges = {"safety_v1": PlannedJudge(JUDGE_MODEL, 1), "hallucinations_v1": PlannedJudge(JUDGE_MODEL, 1)}

    estimate = estimate_cost(planned("alpha", 3, **judges), earlier, PRICING)

    # agent: 3 x 200,000 / 20,000 at 0.2 / 0.8 $/Mtok = $0.168 (3 x 110,000 = $0.084 to 3 x 330,000 = $0.252)
    # judges: 3 x (per sample 10,000 / 1,000 and 30,000 / 3,000, mean 20,000 / 2,000) at 1.0 / 4.0 $/Mtok
    #   = $0.084 ($0.042 to $0.126)
    assert estimate_lines(estimate) == [
        f"Estimate for 3 case runs, from run {EARLIER} (nothing was run: no agent or judge was called)",
        "  agent: 660,000 tokens (330,000 to 990,000), $0.1680 ($0.0840 to $0.2520)",
        "  judges: 3 calls, 66,000 tokens (33,000 to 99,000), $0.0840 ($0.0420 to $0.1260)",
        f"  total: cost unknown; prices: {price_table()}",
        f"Tokens, agent: {AGENT_MODEL} 3 calls, 600,000 in / 60,000 out",
        f"Tokens, judges: {JUDGE_MODEL} 3 calls, 60,000 in / 6,000 out",
        f"{HALLUCINATIONS}: run {EARLIER} made no judge call for it to learn from: its cost is left out",
    ]
