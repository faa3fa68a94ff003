"""Aggregation: metric results and agent runs into case results and a run report (pure functions).

Internal: the public API is `agent_eval`'s; this module's names may change between releases.

The rules:

Case status (`case_status`, one per case run)
    - FAILED: the agent failed, or some criterion FAILED.
    - NOT_EVALUATED ("not evaluated"): nothing failed, but a criterion that applies could not score the case run
      (the judge gave no usable answer, the metric raised or returned something unusable), or no criterion
      scored it at all. Such a case run is neither passed nor failed.
    - PASSED: every criterion that applies PASSED or is INFORMATIONAL, and at least one scored the case run.
    A criterion that does not apply to the case (NOT_EVALUATED explained "not applicable: ...", e.g. a
    trajectory metric on a `conversation_scenario` case) is left out, as ADK leaves NOT_EVALUATED results out
    of a case's final status.

Run summary (`summarize`, one row per case run)
    - `pass_rate` = passed / (passed + failed): case runs not evaluated are counted apart (`not_evaluated`),
      never as failures; 0.0 when nothing was evaluated.
    - pass@k and flakiness, when some case ran more than once: a case's `n` is its evaluated runs (passed or
      failed) and `c` its passed ones; `pass_at_k` averages the unbiased estimator `1 - C(n-c, k) / C(n, k)`
      (`stats.pass_at_k`) over the cases, each k over the cases with at least k evaluated runs. A case is
      *flaky* when it both passed and failed across its runs (listed as `eval_set_id/eval_id`, in report order).
    - `avg_scores`: per metric, the mean of its scores (scored results only).
    - `cached_case_runs`: the case runs whose invocations were reused from an earlier evaluation
      (`AgentRun.cached_from`); `cache_sources` groups them by that run, with its earliest reused invocation
      time, in order of first appearance.
    - `judge`: the judge counters the caller measured while scoring (`build_report(judge_stats=...)`, e.g.
      `judge_totals().since(before)`), as given; empty when none were given.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

from agent_eval.results.model import CacheSource, CaseResult, MetricResult, RunReport, RunSummary
from agent_eval.results.pricing import JUDGE_TOKENS, run_cost
from agent_eval.results.stats import mean_pass_at_k, pass_at_ks, runs_by_case
from agent_eval.schema import AgentRun, EvalCase, EvalConfig, EvalStatus, ModelPrice, ModelUsage, merged_usage

__all__ = [
    "build_report",
    "cache_sources",
    "case_cost",
    "case_cost_parts",
    "case_results",
    "case_status",
    "case_tokens",
    "metric_judge_costs",
    "repeated_run_stats",
    "summarize",
]

RunKey = tuple[str, str, int]


def case_status(run: AgentRun, metrics: Sequence[MetricResult]) -> EvalStatus:
    """FAILED when the agent or a criterion failed; NOT_EVALUATED when nothing failed but a criterion that
    applies could not score the case run (or none scored it); PASSED otherwise (module docstring)."""
    if run.failed or any(result.gates for result in metrics):
        return EvalStatus.FAILED
    if any(result.unscored for result in metrics) or not any(result.scored for result in metrics):
        return EvalStatus.NOT_EVALUATED
    return EvalStatus.PASSED


def repeated_run_stats(cases: Sequence[CaseResult]) -> tuple[dict[int, float], list[str]]:
    """Mean pass@k over the cases and the flaky cases' labels; `({}, [])` when no case ran more than once."""
    by_case = runs_by_case(cases)
    if all(len(runs) < 2 for runs in by_case.values()):
        return {}, []
    per_case, flaky = [], []
    for (eval_set_id, eval_id), runs in by_case.items():
        passed = sum(run.status is EvalStatus.PASSED for run in runs)
        evaluated = passed + sum(run.status is EvalStatus.FAILED for run in runs)
        if evaluated:
            per_case.append(pass_at_ks(evaluated, passed))
        if 0 < passed < evaluated:
            flaky.append(f"{eval_set_id}/{eval_id}")
    return mean_pass_at_k(per_case), flaky


def cache_sources(cases: Sequence[CaseResult]) -> list[CacheSource]:
    """The earlier runs whose invocations were reused, in order of first appearance, with their earliest time."""
    sources: dict[str | None, CacheSource] = {}
    for case in cases:
        origin = case.agent_run.cached_from
        if origin is None:
            continue
        source = sources.setdefault(origin.run_id, CacheSource(run_id=origin.run_id, case_runs=0))
        source.case_runs += 1
        if origin.invoked_at is not None and (source.invoked_at is None or origin.invoked_at < source.invoked_at):
            source.invoked_at = origin.invoked_at
    return list(sources.values())


def summarize(cases: Sequence[CaseResult]) -> RunSummary:
    """Totals over case runs (one row per case run), pass@k, flaky and reused cases (module docstring)."""
    total = len(cases)
    passed = sum(case.status is EvalStatus.PASSED for case in cases)
    failed = sum(case.status is EvalStatus.FAILED for case in cases)
    pass_at_k, flaky = repeated_run_stats(cases)
    sources = cache_sources(cases)
    scores: dict[str, list[float]] = defaultdict(list)
    for case in cases:
        for result in case.metrics:
            if result.score is not None:
                scores[result.metric_name].append(result.score)
    latencies = [case.agent_run.latency_seconds for case in cases]
    return RunSummary(
        total=total,
        passed=passed,
        failed=failed,
        not_evaluated=total - passed - failed,
        pass_rate=passed / (passed + failed) if passed + failed else 0.0,
        avg_scores={name: statistics.fmean(values) for name, values in scores.items()},
        agent_failures=sum(case.agent_run.failed for case in cases),
        mean_latency_seconds=statistics.fmean(latencies) if latencies else 0.0,
        pass_at_k=pass_at_k,
        flaky_cases=flaky,
        cached_case_runs=sum(source.case_runs for source in sources),
        cache_sources=sources,
        agent_tokens=merged_usage(*(_agent_tokens(case) for case in cases)),
        judge_tokens=merged_usage(*(_judge_tokens(result) for case in cases for result in case.metrics)),
    )


def case_cost_parts(
    case: CaseResult, pricing: Mapping[str, ModelPrice] | None = None
) -> tuple[float | None, float | None]:
    """(agent, judges) dollars of one case run, priced as `case_cost` prices them; a side without tokens costs 0,
    a side with an unknown cost is None."""
    agent = _agent_tokens(case)
    judges = merged_usage(*(_judge_tokens(result) for result in case.metrics))
    cost = run_cost(agent, judges, pricing)
    return (cost.agent_usd if agent else 0.0), (cost.judge_usd if judges else 0.0)


def metric_judge_costs(
    cases: Sequence[CaseResult], pricing: Mapping[str, ModelPrice] | None = None
) -> dict[str, tuple[ModelUsage, float | None]]:
    """Per judged criterion, its judge calls' tokens over the run's case runs (all models together) and their
    dollars (None: unknown); criteria that made no judge call are left out."""
    by_metric: dict[str, dict[str, ModelUsage]] = {}
    for case in cases:
        for result in case.metrics:
            tokens = _judge_tokens(result)
            if tokens:
                by_metric[result.metric_name] = merged_usage(by_metric.get(result.metric_name, {}), tokens)
    return {
        name: (_summed_models(tokens), run_cost({}, tokens, pricing).judge_usd) for name, tokens in by_metric.items()
    }


def _summed_models(tokens: Mapping[str, ModelUsage]) -> ModelUsage:
    total = ModelUsage(calls=0)
    for usage in tokens.values():
        total = total.plus(usage)
    return total


def case_cost(case: CaseResult, pricing: Mapping[str, ModelPrice] | None = None) -> float | None:
    """What one case run's agent tokens (none when its answer was reused) and judge tokens cost, priced as the
    run's (`agent_eval.results.pricing`); None when it reported no tokens or one of them has no known cost."""
    agent = _agent_tokens(case)
    judges = merged_usage(*(_judge_tokens(result) for result in case.metrics))
    if not agent and not judges:
        return None
    return run_cost(agent, judges, pricing).total_usd


def case_tokens(case: CaseResult) -> dict[str, ModelUsage]:
    """Per model, one case run's agent tokens (none for a reused answer) and judge tokens together."""
    return merged_usage(_agent_tokens(case), *(_judge_tokens(result) for result in case.metrics))


def _agent_tokens(case: CaseResult) -> dict[str, ModelUsage]:
    """The case run's agent tokens per model, its user simulator's included (none for an answer reused from an
    earlier run: it cost nothing now)."""
    usage = case.agent_run.token_usage
    return usage.spent if usage is not None and case.agent_run.cached_from is None else {}


def _judge_tokens(result: MetricResult) -> dict[str, ModelUsage]:
    found = result.details.get(JUDGE_TOKENS)
    if not isinstance(found, Mapping):
        return {}
    return {str(model): ModelUsage.model_validate(usage) for model, usage in found.items()}


def case_results(runs: Sequence[tuple[EvalCase, AgentRun]], metric_results: Iterable[MetricResult]) -> list[CaseResult]:
    """One case result per (case, agent run), in the order of `runs`, with its metric results and status."""
    by_run: dict[RunKey, list[MetricResult]] = defaultdict(list)
    for result in metric_results:
        by_run[(result.eval_set_id, result.eval_id, result.run_index)].append(result)
    cases = []
    for case, run in runs:
        metrics = by_run.get((run.eval_set_id, run.eval_id, run.run_index), [])
        cases.append(
            CaseResult(
                eval_set_id=run.eval_set_id,
                eval_id=run.eval_id,
                run_index=run.run_index,
                status=case_status(run, metrics),
                agent_run=run,
                expected_invocations=case.conversation,
                metrics=metrics,
                recorded_from=case.recorded.sources if case.recorded is not None else [],
            )
        )
    return cases


def build_report(
    *,
    run_id: str,
    runs: Sequence[tuple[EvalCase, AgentRun]] = (),
    metric_results: Iterable[MetricResult] = (),
    cases: Sequence[CaseResult] = (),
    config: EvalConfig,
    eval_set_ids: list[str],
    agent_reference: str,
    agent_fingerprint: str,
    num_runs: int,
    started_at: datetime,
    completed_at: datetime,
    flow_run_id: str | None = None,
    source_run_id: str | None = None,
    judge_stats: Mapping[str, int] | None = None,
    invocation_stats: Mapping[str, int] | None = None,
) -> RunReport:
    """The run report: `cases` (built by `case_results`, e.g. a part at a time), then one case result per (case,
    agent run) of `runs`, in that order, with its metric results; `judge_stats` (the judges' counters while
    scoring, see `agent_eval.metrics.judged.policy.judge_totals`) becomes `summary.judge`, and
    `invocation_stats` (the limit on case runs in flight) `summary.invocations`."""
    every_case = [*cases, *case_results(runs, metric_results)]
    return RunReport(
        run_id=run_id,
        eval_set_ids=eval_set_ids,
        agent_reference=agent_reference,
        agent_fingerprint=agent_fingerprint,
        config=config.model_dump(mode="json", exclude_none=True),
        config_hash=config.fingerprint(),
        num_runs=num_runs,
        started_at=started_at,
        completed_at=completed_at,
        flow_run_id=flow_run_id,
        source_run_id=source_run_id,
        cases=every_case,
        summary=_priced(summarize(every_case), config).model_copy(
            update={"judge": dict(judge_stats or {}), "invocations": dict(invocation_stats or {})}
        ),
    )


def _priced(summary: RunSummary, config: EvalConfig) -> RunSummary:
    """The summary with what its tokens cost (`agent_eval.results.pricing`: the config's `pricing` first)."""
    if not summary.agent_tokens and not summary.judge_tokens:
        return summary
    cost = run_cost(summary.agent_tokens, summary.judge_tokens, config.pricing)
    return summary.model_copy(update={"cost": cost})
