"""The budget of a run, planned: the `Spend` of this process (`agent_eval.results.budget`), shared through the
store with the run's other processes when the run is sharded, and the check before the run starts."""

from __future__ import annotations

from agent_eval.errors import EvalInputError
from agent_eval.plan.eval_plan import EvalPlan
from agent_eval.results.budget import Budget, Spend, SpendTotals, unpriced_models
from agent_eval.store import get_engine
from agent_eval.store.spend import others_spend, publish_spend

__all__ = ["check_budget", "plan_budget", "spend_of"]


def plan_budget(plan: EvalPlan) -> Budget | None:
    """The run's budget: the request's `budget_usd` / `max_tokens` first, else the config's `budget`."""
    return Budget.of(plan.request.budget_usd, plan.request.max_tokens, plan.config.budget)


def check_budget(plan: EvalPlan) -> None:
    """Before anything runs: a dollar budget needs a price for every model known now (the judges' and the LLM
    user simulator's).

    Raises:
        EvalInputError: a model without a price, named, with the config section that gives one.
    """
    budget = plan_budget(plan)
    if budget is None or budget.usd is None:
        return
    models = {str(judge["model"]) for criteria in plan.judges().values() for judge in criteria.values()}
    simulator = getattr(getattr(plan.agent, "simulator", None), "model", None)
    models |= {simulator} if isinstance(simulator, str) else set()
    unpriced = unpriced_models(models, plan.config.pricing)
    if unpriced:
        raise EvalInputError(
            f"a budget of {budget.describe()} needs a price for {', '.join(unpriced)}: none is known; "
            'give it in the config\'s `pricing` section, e.g. "pricing": {"MODEL": {"input_per_mtok": 0.3, '
            '"output_per_mtok": 2.5}}',
            field="budget",
        )


def spend_of(plan: EvalPlan, run_id: str, worker: str, *, shared: bool) -> Spend | None:
    """This process's `Spend` of run `run_id` (None: no budget). The processes of a sharded run (`shared`: the
    parent and each shard's attempt, `worker` naming it) share their spend through the store
    (`agent_eval.store.spend`): a crashed attempt's calls in flight stay counted, so the budget errs on the side
    of stopping."""
    budget = plan_budget(plan)
    if budget is None:
        return None
    if not shared:
        return Spend(budget, plan.config.pricing)
    engine = get_engine(plan.request.db_url)

    def others() -> SpendTotals:
        return others_spend(run_id, worker, engine)

    def publish(totals: SpendTotals) -> None:
        publish_spend(run_id, worker, totals, engine)

    return Spend(budget, plan.config.pricing, others=others, publish=publish)
