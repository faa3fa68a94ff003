"""A run's budget (issue 31 item 5), below the flows: the rule of `agent_eval.results.budget.Spend` with
hand-computed dollars and tokens, the caps' precedence and texts, the models no price covers, the check before a
run (`agent_eval.plan.budget`), and the spend the processes of a sharded run share through the store
(`agent_eval.store.spend`) on SQLite and PostgreSQL.

The agent's model `my-model` is priced by the config at $1 per million input tokens and $10 per million output
tokens, so one call of 1,000 in / 100 out costs $0.001 + $0.001 = $0.002 and 1,100 tokens.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from agent_eval.errors import EvalInputError
from agent_eval.plan.budget import check_budget, plan_budget, spend_of
from agent_eval.plan.eval_plan import EvalRequest, prepare
from agent_eval.results.budget import Budget, Spend, SpendTotals, active_spend, spending, unpriced_models
from agent_eval.schema import BudgetConfig, ModelPrice, ModelUsage
from agent_eval.store import RunCreate, get_engine, start_run
from agent_eval.store.spend import others_spend, publish_spend, run_spend_of
from tests.fakes.gemini_server import CREDENTIAL_VARIABLES, FAKE_API_KEY
from tests.flows.helpers import write_echo_set
from tests.store.conftest import postgres_url  # noqa: F401  (fixture)

MODEL = "my-model"
PRICING = {MODEL: ModelPrice(input_per_mtok=1.0, output_per_mtok=10.0)}
ECHO_AGENT = "tests.flows.agents_for_tests:echo_agent"


def call(input_tokens: int = 1_000, output_tokens: int = 100, model: str = MODEL) -> dict[str, ModelUsage]:
    """What one agent case run spent: one call of `model`."""
    return {model: ModelUsage(calls=1, input_tokens=input_tokens, output_tokens=output_tokens)}


def started(spend: Spend, count: int) -> list[str | None]:
    """`count` agent case runs asked to start, in order: None for each allowed, else why it was refused."""
    return [spend.start("agent") for _ in range(count)]


# ------------------------------------------------------------------------------------------------- the rule
def test_the_spend_is_the_configs_price_of_the_finished_calls_tokens() -> None:
    spend = Spend(Budget(usd=1.0, tokens=1_000_000), PRICING)

    assert spend.start("agent") is None
    spend.finish("agent", call(1_000, 100))
    assert spend.start("agent") is None
    spend.finish("agent", call(3_000, 300))  # $0.003 + $0.003

    assert spend.spent_text() == "$0.0080 and 4,400 tokens spent"
    assert spend.totals == SpendTotals(
        agent={MODEL: ModelUsage(calls=2, input_tokens=4_000, output_tokens=400)},
        finished={"agent": 2},
        in_flight={"agent": 0},
    )
    assert spend.stopped is None


def test_one_call_at_a_time_stops_before_the_call_that_would_pass_the_dollars() -> None:
    """The README's example: $0.002 per case run, a budget of $0.009. The 5th would make $0.002 x 5 = $0.010."""
    spend = Spend(Budget(usd=0.009), PRICING)
    answers = []
    for _ in range(10):
        answer = spend.start("agent")
        answers.append(answer)
        if answer is None:
            spend.finish("agent", call())

    assert answers[:4] == [None] * 4
    assert answers[4:] == ["budget of $0.0090 reached ($0.0080 spent)"] * 6
    assert spend.stopped == "budget of $0.0090 reached"
    assert spend.totals.finished == {"agent": 4}


def test_calls_in_flight_count_at_the_mean_of_the_finished_ones() -> None:
    """Budget 10,000 tokens. A, B, C start with nothing finished (counted at nothing); A ends with 1,000 tokens and
    B with 3,000: 4,000 spent, 2,000 per call, C in flight. D: 4,000 + (1 + 1) x 2,000 = 8,000; E: 4,000 +
    (2 + 1) x 2,000 = 10,000, still within; F: 4,000 + (3 + 1) x 2,000 = 12,000, refused."""
    spend = Spend(Budget(tokens=10_000), PRICING)

    assert started(spend, 3) == [None, None, None]
    spend.finish("agent", call(900, 100))
    spend.finish("agent", call(2_700, 300))
    assert started(spend, 3) == [None, None, "budget of 10,000 tokens reached (4,000 tokens spent)"]

    assert spend.totals.in_flight == {"agent": 3}  # C, D, E
    assert spend.totals.finished == {"agent": 2}


def test_three_start_before_any_finished_and_the_fourth_counts_the_two_still_in_flight() -> None:
    """Budget 4,400 tokens, 1,100 a call: three start at nothing; once one finished, the next is 1,100 +
    (2 + 1) x 1,100 = 4,400 (within, the limit included), the one after 1,100 + (3 + 1) x 1,100 = 5,500."""
    spend = Spend(Budget(tokens=4_400), PRICING)

    assert started(spend, 3) == [None, None, None]
    spend.finish("agent", call())
    assert spend.start("agent") is None
    assert spend.start("agent") == "budget of 4,400 tokens reached (1,100 tokens spent)"


def test_once_a_call_is_refused_every_later_one_is_too() -> None:
    """Budget 10 tokens. A ends with 4 (4 per call); B: 4 + 4 = 8; C: 4 + 2 x 4 = 12, refused. B then ends with
    nothing: 4 spent, 2 per call, none in flight, so a new call (4 + 2 = 6) would fit, but the run is stopped."""
    spend = Spend(Budget(tokens=10))
    assert spend.start("agent") is None
    spend.finish("agent", call(3, 1))
    assert started(spend, 2) == [None, "budget of 10 tokens reached (4 tokens spent)"]

    spend.finish("agent", None)

    assert spend.totals.in_flight == {"agent": 0}
    assert started(spend, 2) == ["budget of 10 tokens reached (4 tokens spent)"] * 2
    assert spend.stopped == "budget of 10 tokens reached"


def test_the_other_processes_spend_and_calls_in_flight_count_read_at_each_start() -> None:
    """Another shard spent 1,100 tokens ($0.002) on one finished call and has two in flight. Budget 4,400 tokens:
    1,100 + (2 + 1) x 1,100 = 4,400 lets one start here; once the other shard says it spent 3,300 on three
    calls, 3,300 + (0 + 1 + 1) x 1,100 = 5,500 does not."""
    theirs = [SpendTotals(agent=call(), finished={"agent": 1}, in_flight={"agent": 2})]
    spend = Spend(Budget(usd=1.0, tokens=4_400), PRICING, others=lambda: theirs[-1])

    assert spend.start("agent") is None
    assert spend.spent_text() == "$0.0020 and 1,100 tokens spent"
    theirs.append(SpendTotals(agent=call(3_000, 300), finished={"agent": 3}, in_flight={}))
    assert spend.start("agent") == "budget of $1.00 and 4,400 tokens reached ($0.0060 and 3,300 tokens spent)"
    assert spend.totals.in_flight == {"agent": 1}  # this process's own only


def test_publish_gets_this_processs_totals_after_each_start_and_finish_and_not_after_a_refusal() -> None:
    published: list[SpendTotals] = []
    spend = Spend(Budget(tokens=2_000), PRICING, publish=published.append)

    assert spend.start("agent") is None
    spend.finish("agent", call())
    assert spend.start("agent") == "budget of 2,000 tokens reached (1,100 tokens spent)"  # 1,100 + 1,100

    assert published == [
        SpendTotals(in_flight={"agent": 1}),
        SpendTotals(agent=call(), finished={"agent": 1}, in_flight={"agent": 0}),
    ]


def test_a_model_without_a_price_stops_a_dollar_budget_at_the_next_call_naming_it_and_pricing() -> None:
    spend = Spend(Budget(usd=1.0), PRICING)
    assert spend.start("agent") is None  # nothing is known of the model before its first call
    spend.finish("agent", {**call(), **call(model="mystery-model-x")})

    refusal = spend.start("agent")

    assert refusal is not None
    assert refusal.startswith(
        "budget of $1.00: the cost of mystery-model-x is unknown (add it to the config's `pricing`)"
    )
    assert spend.stopped == "budget of $1.00: the cost of mystery-model-x is unknown (add it to the config's `pricing`)"


def test_a_model_that_reported_no_token_counts_stops_a_dollar_budget_too() -> None:
    spend = Spend(Budget(usd=1.0), PRICING)
    assert spend.start("agent") is None
    spend.finish("agent", {MODEL: ModelUsage(calls=1)})  # priced, but its cost cannot be computed

    spend.start("agent")

    assert spend.stopped == (
        "budget of $1.00: the cost of a model that reported no token counts is unknown "
        "(add it to the config's `pricing`)"
    )


def test_a_token_budget_needs_no_price() -> None:
    spend = Spend(Budget(tokens=10_000))
    assert spend.start("agent") is None
    spend.finish("agent", call(model="mystery-model-x"))

    assert spend.start("agent") is None
    assert spend.spent_text() == "1,100 tokens spent"


def test_the_refusal_for_a_model_of_unknown_cost_says_what_was_spent() -> None:
    spend = Spend(Budget(usd=1.0), PRICING)
    assert spend.start("agent") is None
    spend.finish("agent", {**call(), **call(model="mystery-model-x")})

    refusal = spend.start("agent")

    assert refusal is not None
    spent = re.fullmatch(r".*\(add it to the config's `pricing`\) \((.*) spent\)", refusal)
    assert spent is not None and spent.group(1).strip() != ""
    assert spend.spent_text().strip() != "spent"


def test_concurrent_starts_and_finishes_from_many_threads_lose_no_count() -> None:
    spend = Spend(Budget(tokens=10**9), PRICING)

    def work() -> None:
        for _ in range(50):
            assert spend.start("agent") is None
            spend.finish("agent", call(10, 1))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert spend.totals == SpendTotals(
        agent={MODEL: ModelUsage(calls=400, input_tokens=4_000, output_tokens=400)},
        finished={"agent": 400},
        in_flight={"agent": 0},
    )


def test_spend_totals_plus_adds_tokens_per_model_and_counts_per_kind() -> None:
    mine = SpendTotals(agent=call(), finished={"agent": 1}, in_flight={"agent": 2})
    theirs = SpendTotals(agent={**call(), **call(5, 5, "other")}, finished={"agent": 2, "judge": 1})

    assert mine.plus(theirs) == SpendTotals(
        agent={
            MODEL: ModelUsage(calls=2, input_tokens=2_000, output_tokens=200),
            "other": ModelUsage(calls=1, input_tokens=5, output_tokens=5),
        },
        finished={"agent": 3, "judge": 1},
        in_flight={"agent": 2},
    )


# ------------------------------------------------------------------------------------------------- caps and texts
@pytest.mark.parametrize(
    ("usd", "tokens", "config", "expected"),
    [
        (2.0, None, BudgetConfig(usd=5.0, tokens=100), Budget(usd=2.0, tokens=100)),
        (None, 50, BudgetConfig(usd=5.0, tokens=100), Budget(usd=5.0, tokens=50)),
        (1.0, 50, BudgetConfig(usd=5.0, tokens=100), Budget(usd=1.0, tokens=50)),
        (None, None, BudgetConfig(usd=5.0), Budget(usd=5.0)),
        (0.5, None, None, Budget(usd=0.5)),
        (None, None, BudgetConfig(), None),
        (None, None, None, None),
    ],
)  # fmt: skip
def test_the_requests_caps_come_before_the_configs(
    usd: float | None, tokens: int | None, config: BudgetConfig | None, expected: Budget | None
) -> None:
    assert Budget.of(usd, tokens, config) == expected


@pytest.mark.parametrize(
    ("budget", "text"),
    [
        (Budget(usd=5.0), "$5.00"),
        (Budget(usd=0.009), "$0.0090"),
        (Budget(usd=1_234.5), "$1,234.50"),
        (Budget(tokens=2_000_000), "2,000,000 tokens"),
        (Budget(usd=5.0, tokens=2_000_000), "$5.00 and 2,000,000 tokens"),
    ],
)
def test_describe(budget: Budget, text: str) -> None:
    assert budget.describe() == text


def test_unpriced_models_are_those_neither_the_config_nor_the_table_prices_sorted_once() -> None:
    pricing = {"priced-here-x": ModelPrice(input_per_mtok=1.0, output_per_mtok=2.0)}
    models = ["zz-unpriced-x", "gemini-2.5-flash", "aa-unpriced-x", "priced-here-x", "zz-unpriced-x"]

    assert unpriced_models(models, pricing) == ["aa-unpriced-x", "zz-unpriced-x"]
    assert unpriced_models(models, None) == ["aa-unpriced-x", "priced-here-x", "zz-unpriced-x"]
    assert unpriced_models([], None) == []


def test_the_active_spend_is_the_latest_started_and_none_outside() -> None:
    outer, inner = Spend(Budget(usd=1.0)), Spend(Budget(tokens=10))
    assert active_spend() is None
    with spending(outer) as entered:
        assert entered is outer and active_spend() is outer
        with spending(None) as nothing:
            assert nothing is None and active_spend() is outer
        with spending(inner):
            assert active_spend() is inner
        assert active_spend() is outer
    assert active_spend() is None


# ------------------------------------------------------------------------------------------------- the plan
@pytest.fixture
def judge_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """A (fake) Gemini key, which a judged criterion needs to be planned; no judge is called here."""
    for name in CREDENTIAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GOOGLE_API_KEY", FAKE_API_KEY)


def judged_config(folder: Path, **sections: object) -> Path:
    """A config with a judged criterion scored by `my-unpriced-judge`, and `sections` (pricing, budget)."""
    criteria = {
        "response_match_score": 0.5,
        "final_response_match_v2": {"threshold": 0.8, "judge_model_options": {"judge_model": "my-unpriced-judge"}},
    }
    path = folder / "judged_config.json"
    path.write_text(json.dumps({"criteria": criteria, **sections}), encoding="utf-8")
    return path


@pytest.mark.usefixtures("judge_key")
def test_a_dollar_budget_with_an_unpriced_judge_is_refused_before_the_run(tmp_path: Path) -> None:
    path, _ = write_echo_set(tmp_path, ["a"])
    config = str(judged_config(tmp_path))
    plan = prepare(EvalRequest(paths=[str(path)], agent=ECHO_AGENT, config=config, budget_usd=1.0))

    with pytest.raises(EvalInputError) as raised:
        check_budget(plan)

    assert raised.value.field == "budget"
    assert raised.value.message == (
        "a budget of $1.00 needs a price for my-unpriced-judge: none is known; give it in the config's `pricing` "
        'section, e.g. "pricing": {"MODEL": {"input_per_mtok": 0.3, "output_per_mtok": 2.5}}'
    )


@pytest.mark.parametrize(
    ("request_fields", "sections"),
    [
        ({}, {}),  # no budget
        ({"max_tokens": 1_000}, {}),  # tokens need no price
        ({"budget_usd": 1.0}, {"pricing": {"my-unpriced-judge": {"input_per_mtok": 1, "output_per_mtok": 2}}}),
    ],
)
@pytest.mark.usefixtures("judge_key")
def test_no_budget_a_token_budget_or_a_priced_judge_passes_the_check(
    tmp_path: Path, request_fields: dict[str, object], sections: dict[str, object]
) -> None:
    path, _ = write_echo_set(tmp_path, ["a"])
    config = str(judged_config(tmp_path, **sections))
    plan = prepare(EvalRequest(paths=[str(path)], agent=ECHO_AGENT, config=config, **request_fields))

    check_budget(plan)  # raises nothing


def test_the_plans_budget_is_the_requests_over_the_configs_budget_section(tmp_path: Path) -> None:
    path, _ = write_echo_set(tmp_path, ["a"])
    config = tmp_path / "budget_config.json"
    config.write_text(json.dumps({"criteria": {"response_match_score": 0.5}, "budget": {"usd": 3, "tokens": 9}}))

    def budget(**fields: object) -> Budget | None:
        return plan_budget(prepare(EvalRequest(paths=[str(path)], agent=ECHO_AGENT, config=str(config), **fields)))

    assert budget() == Budget(usd=3.0, tokens=9)
    assert budget(budget_usd=0.5) == Budget(usd=0.5, tokens=9)
    assert budget(budget_usd=0.5, max_tokens=100) == Budget(usd=0.5, tokens=100)


# ------------------------------------------------------------------------------------------------- the store
@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Engine:
    """A fresh store on SQLite, and (marker `postgres`) on the local PostgreSQL server."""
    if request.param == "sqlite":
        return get_engine(f"sqlite:///{tmp_path / 'store.db'}")
    return get_engine(str(request.getfixturevalue("postgres_url")))


def a_run(engine: Engine) -> str:
    """A run row (the spend rows refer to it); its id."""
    run_id = uuid.uuid4().hex
    started_at = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
    row = RunCreate(id=run_id, agent_reference="m:a", agent_fingerprint="f", config_hash="h", started_at=started_at)
    start_run(row, engine=engine)
    return run_id


def test_each_worker_has_one_row_the_others_are_summed_without_its_own(engine: Engine) -> None:
    run_id, other_run = a_run(engine), a_run(engine)
    first = SpendTotals(agent=call(), finished={"agent": 1}, in_flight={"agent": 2})
    second = SpendTotals(agent=call(3_000, 300), finished={"agent": 3}, in_flight={"agent": 1})
    publish_spend(run_id, "shard-1", SpendTotals(in_flight={"agent": 9}), engine)
    publish_spend(run_id, "shard-1", first, engine)  # replaces its row
    publish_spend(run_id, "shard-2", second, engine)
    publish_spend(other_run, "shard-3", SpendTotals(agent=call(7, 7), finished={"agent": 1}), engine)

    assert others_spend(run_id, "shard-1", engine) == second
    assert others_spend(run_id, "shard-2", engine) == first
    assert others_spend(run_id, "parent-1", engine) == first.plus(second)
    assert run_spend_of(run_id, engine) == SpendTotals(
        agent={MODEL: ModelUsage(calls=2, input_tokens=4_000, output_tokens=400)},
        finished={"agent": 4},
        in_flight={"agent": 3},
    )
    assert run_spend_of(uuid.uuid4().hex, engine) == SpendTotals()


def test_two_shards_spends_share_one_budget_through_the_store(engine: Engine, tmp_path: Path) -> None:
    """`spend_of` for a run in two shards, each shard's own `Spend` over one store. Budget 3,300 tokens, 1,100 a
    call: A spends 1,100; B starts (1,100 + 1 x 1,100 = 2,200); A starts (1,100 + 2 x 1,100 = 3,300, within);
    B's next is 1,100 + 3 x 1,100 = 4,400: refused, though B alone spent nothing yet."""
    path, _ = write_echo_set(tmp_path, ["a", "b"])
    db_url = str(engine.url.render_as_string(hide_password=False))
    request = EvalRequest(paths=[str(path)], agent=ECHO_AGENT, db_url=db_url, shards=2, max_tokens=3_300)
    plan = prepare(request)
    run_id = a_run(engine)
    shard_a, shard_b = spend_of(plan, run_id, "shard-a", shared=True), spend_of(plan, run_id, "shard-b", shared=True)
    assert shard_a is not None and shard_b is not None

    assert shard_a.start("agent") is None
    shard_a.finish("agent", call())
    assert shard_b.start("agent") is None
    assert shard_a.start("agent") is None
    assert shard_b.start("agent") == "budget of 3,300 tokens reached (1,100 tokens spent)"

    assert run_spend_of(run_id, engine) == SpendTotals(agent=call(), finished={"agent": 1}, in_flight={"agent": 2})
    unbudgeted = prepare(request.model_copy(update={"max_tokens": None}))
    assert spend_of(unbudgeted, run_id, "shard-c", shared=True) is None
