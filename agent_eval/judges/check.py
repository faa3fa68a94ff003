"""Re-checking a judge: `agent-eval judges check METRIC` and the `judge-check` deployment.

A check sends every labelled item of a metric again to the judge as it is configured now, with fresh calls (the
judge cache is off for the check), and measures the agreement of those new verdicts with the labels:

1. the items: each distinct labelled content key of the metric once, taken from the newest run that judged it
   (its stored case run and the stored version of its eval case);
2. the criterion: the `--config` file's criterion for the metric, else the criterion the newest of those runs
   stored for that eval set; the judge identity is the one that criterion resolves to here and now
   (`agent_eval.metrics.judged.identity`);
3. each item's case run is scored again with that criterion, and the item's new verdict is read from the result
   by its content key; an item whose content now differs (say, an edited rubric text) is left out and counted;
4. the agreement (`agent_eval.results.agreement.binary_agreement`) is stored as a check of that identity
   (`judge_checks`) with every item's new verdict, and compared with the last check of the same identity (else
   the last check of the metric).

Drift: the check's kappa is below `floor`, or it fell by more than `max_drop` since the last check. A provider
that changes the model behind a name keeps the identity and shows up here.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeAlias

from sqlalchemy.engine import Engine
from sqlmodel import Session

from agent_eval.errors import EvalInputError
from agent_eval.metrics.judged.credentials import check_judge_credentials
from agent_eval.metrics.judged.identity import JudgeIdentity, judge_identity
from agent_eval.metrics.judged.voting import set_judge_factory
from agent_eval.metrics.registry import REGISTRY, MetricSpec
from agent_eval.metrics.scoring import score_case_run
from agent_eval.results.agreement import binary_agreement
from agent_eval.results.agreement_model import BinaryAgreement
from agent_eval.results.judged_items import judged_items
from agent_eval.results.model import CaseResult, MetricResult
from agent_eval.results.run_configs import configs_by_eval_set
from agent_eval.schema import AgentRun, EvalCase, EvalConfig, EvalMetric, EvalStatus
from agent_eval.store.engine import get_engine
from agent_eval.store.labels import (
    LabelledPair,
    judge_checks,
    labelled_pairs,
    rubric_texts_by_eval_set,
    save_judge_check,
)
from agent_eval.store.models import CaseRecord, JudgeCheckRecord, Run, as_utc
from agent_eval.store.queries import stored_eval_sets
from agent_eval.store.reports import agent_run_of

__all__ = [
    "DEFAULT_MAX_DROP",
    "JudgeCheck",
    "StoredCase",
    "case_result_of",
    "check_judge",
    "drift_text",
    "judge_again",
    "labelled_items",
    "stored_cases",
    "stored_criterion",
]

DEFAULT_MAX_DROP = 0.15
"""The largest fall of kappa between two checks that is not drift."""


@dataclass(frozen=True)
class JudgeCheck:
    """One check of a judge: who judged, the agreement, the previous check and whether it drifted."""

    metric: str
    judge: JudgeIdentity
    agreement: BinaryAgreement
    previous: JudgeCheckRecord | None
    stored: JudgeCheckRecord
    left_out: int
    drift: str | None

    @property
    def change(self) -> float | None:
        """Kappa now minus kappa at the previous check (None when either is unknown)."""
        before = self.previous.kappa if self.previous is not None else None
        now = self.agreement.kappa
        return None if before is None or now is None else now - before

    def describe(self) -> str:
        """The check in lines: the judge, the agreement, the change since the last check, drift."""
        binary = self.agreement
        lines = [f"{self.metric}  judge: {self.judge.describe()}  ({binary.n} labelled items judged again)"]
        if binary.insufficient or binary.kappa is None:
            lines.append(f"  agreement: not measured: {binary.insufficient or 'kappa undefined'}")
        else:
            lines.append(f"  kappa {binary.kappa_text()}  agreement {binary.agreement:.0%}")
        lines.append(f"  since the last check: {_change_text(self)}")
        if self.left_out:
            lines.append(f"  left out: {self.left_out} labelled item(s) whose content differs under this config")
        if self.drift:
            lines.append(f"  DRIFT: {self.drift}")
        return "\n".join(lines)


def drift_text(metric: str, before: float | None, now: float | None, labels: int) -> str:
    """E.g. `judge drift: final_response_match_v2 kappa 0.71 → 0.48 on 64 labels`."""
    shown = "–" if before is None else f"{before:.2f}"
    return f"judge drift: {metric} kappa {shown} → {'–' if now is None else f'{now:.2f}'} on {labels} labels"


async def check_judge(
    metric: str,
    engine: Engine | None = None,
    *,
    config: EvalConfig | None = None,
    floor: float | None = None,
    max_drop: float = DEFAULT_MAX_DROP,
) -> JudgeCheck:
    """Check the judge of `metric` against every label of it (rules in the module docstring) and store the check.

    Raises:
        EvalInputError: the metric has no labelled item, the config has no criterion for it, or its judge cannot
            be called from this environment (no credentials).
    """
    engine = engine or get_engine()
    items = labelled_items(labelled_pairs(engine, metric=metric), metric)
    eval_metric, spec = stored_criterion(metric, config, list(items.values())[-1], engine)
    identity = judge_identity(eval_metric, spec)
    if identity is None:
        raise EvalInputError(f"{metric} has no LLM judge to check", field=f"criteria.{metric}")
    check_judge_credentials(identity.model)
    verdicts = await judge_again(items, eval_metric, spec, engine)
    found = [(verdicts[key], pair.label.passed) for key, pair in items.items() if verdicts.get(key) is not None]
    known = [(judged, human) for judged, human in found if judged is not None and human is not None]
    agreement = binary_agreement([j for j, _ in known], [h for _, h in known])
    previous = _previous(metric, identity, engine)
    stored = save_judge_check(_record(metric, identity, agreement, verdicts), engine)
    drift = _drift(metric, agreement, previous, floor, max_drop)
    return JudgeCheck(metric, identity, agreement, previous, stored, len(items) - len(found), drift)


def labelled_items(pairs: Sequence[LabelledPair], metric: str) -> dict[str, LabelledPair]:
    """Each labelled content key once, from the newest run that judged it (pairs come oldest item first)."""
    if not pairs:
        raise EvalInputError(
            f"no labelled item of {metric}: label some first (`agent-eval label RUN_ID` or `labels import`)",
            field="metric",
        )
    newest: dict[str, LabelledPair] = {}
    for pair in pairs:
        newest[pair.item.item_key] = pair
    return newest


def stored_criterion(
    metric: str, config: EvalConfig | None, pair: LabelledPair, engine: Engine
) -> tuple[EvalMetric, MetricSpec]:
    """The criterion of `metric` to judge with: `config`'s, else the one the run of `pair` stored for its eval set.

    Raises:
        EvalInputError: the config has no such criterion, or a bad option.
    """
    chosen = config if config is not None else _stored_config(pair, engine)
    if metric not in chosen.criteria:
        raise EvalInputError(f"the config has no criterion {metric!r} to check", field=f"criteria.{metric}")
    resolved = REGISTRY.resolve(chosen.model_copy(update={"criteria": {metric: chosen.criteria[metric]}}))
    return resolved[0]


def _stored_config(pair: LabelledPair, engine: Engine) -> EvalConfig:
    with Session(engine) as session:
        run = session.get(Run, pair.run_id)
        stored = dict(run.config or {}) if run is not None else {}
        eval_set_ids = list(run.eval_set_ids) if run is not None else []
    config = configs_by_eval_set(stored, eval_set_ids).get(pair.eval_set_id, {})
    return EvalConfig.model_validate(config)


async def judge_again(
    items: Mapping[str, LabelledPair], eval_metric: EvalMetric, spec: MetricSpec, engine: Engine
) -> dict[str, bool | None]:
    """Per content key, the judge's new verdict (None: unscored), or absent when the content now differs."""
    cases = list(stored_cases(items.values(), engine).values())
    with _fresh_judges():
        results = await asyncio.gather(*(score_case_run(spec, eval_metric, case, run) for case, run, _ in cases))
    verdicts: dict[str, bool | None] = {}
    for stored, result in zip(cases, results, strict=True):
        scored = case_result_of(stored, result)
        rubric_texts = stored[2]
        verdicts.update(
            (item.key, item.judge_passed) for item in judged_items(scored, rubric_texts) if item.key in items
        )
    return verdicts


StoredCase: TypeAlias = tuple[EvalCase, AgentRun, Mapping[str, str]]
"""A labelled item's case run: its eval case, the stored agent run and its criterion's rubric texts."""


def case_result_of(stored: StoredCase, result: MetricResult | None = None) -> CaseResult:
    """A stored case run as a `CaseResult` (with `result` as its one metric), what `judged_items` and
    `turn_content` read."""
    case, run, _ = stored
    return CaseResult(
        eval_set_id=run.eval_set_id,
        eval_id=run.eval_id,
        run_index=run.run_index,
        status=result.status if result is not None else EvalStatus.NOT_EVALUATED,
        agent_run=run,
        expected_invocations=case.conversation,
        metrics=[result] if result is not None else [],
    )


def stored_cases(pairs: Iterable[LabelledPair], engine: Engine) -> dict[int, StoredCase]:
    """Each distinct case run of the labelled items, with its eval case and its criterion's rubric texts (one
    session for the rows, closed before the eval sets are read: SQLite transactions here are `BEGIN IMMEDIATE`)."""
    rows: dict[int, tuple[CaseRecord, Run]] = {}
    with Session(engine) as session:
        for pair in pairs:
            record, run = session.get(CaseRecord, pair.item.case_result_id), session.get(Run, pair.run_id)
            if record is not None and run is not None and record.id is not None:
                rows.setdefault(record.id, (record, run))
    eval_cases: dict[str, dict[str, EvalCase]] = {}
    found: dict[int, StoredCase] = {}
    for case_id, (record, run) in rows.items():
        if run.id not in eval_cases:
            eval_cases[run.id] = _cases_of(run.id, engine)
        case = eval_cases[run.id].get(f"{record.eval_set_id}/{record.eval_id}")
        if case is not None:
            texts = rubric_texts_by_eval_set(run.config or {}, run.eval_set_ids).get(record.eval_set_id, {})
            found[case_id] = (case, agent_run_of(record), texts)
    return found


def _cases_of(run_id: str, engine: Engine) -> dict[str, EvalCase]:
    return {f"{s.eval_set_id}/{c.eval_id}": c for s in stored_eval_sets(run_id, engine) for c in s.eval_cases}


@contextlib.contextmanager
def _fresh_judges() -> Iterator[None]:
    """Every judge made meanwhile asks the model: no answer from the judge cache."""
    from agent_eval.metrics.judged.client import make_judge

    previous = set_judge_factory(lambda model: make_judge(model, cache=False))
    try:
        yield
    finally:
        set_judge_factory(previous)


def _previous(metric: str, identity: JudgeIdentity, engine: Engine) -> JudgeCheckRecord | None:
    same = judge_checks(engine, metric=metric, judge_key=identity.key, limit=1)
    return same[0] if same else next(iter(judge_checks(engine, metric=metric, limit=1)), None)


def _record(
    metric: str, identity: JudgeIdentity, agreement: BinaryAgreement, verdicts: Mapping[str, bool | None]
) -> JudgeCheckRecord:
    interval = agreement.kappa_interval
    return JudgeCheckRecord(
        metric_name=metric,
        judge_key=identity.key,
        judge=identity.stored(),
        checked_at=datetime.now(UTC),
        labels=agreement.n,
        kappa=agreement.kappa,
        kappa_low=interval[0] if interval else None,
        kappa_high=interval[1] if interval else None,
        agreement=agreement.model_dump(mode="json"),
        verdicts=dict(verdicts),
    )


def _drift(
    metric: str,
    agreement: BinaryAgreement,
    previous: JudgeCheckRecord | None,
    floor: float | None,
    max_drop: float,
) -> str | None:
    now = agreement.kappa
    before = previous.kappa if previous is not None else None
    if now is None:
        return None
    if floor is not None and now < floor:
        return drift_text(metric, before, now, agreement.n) + f" (below the floor {floor:.2f})"
    if before is not None and before - now > max_drop:
        return drift_text(metric, before, now, agreement.n) + f" (a fall of more than {max_drop:.2f})"
    return None


def _change_text(check: JudgeCheck) -> str:
    if check.previous is None:
        return "first check of this metric"
    when = (as_utc(check.previous.checked_at) or check.previous.checked_at).strftime("%Y-%m-%d %H:%M UTC")
    before = "–" if check.previous.kappa is None else f"{check.previous.kappa:.2f}"
    change = check.change
    delta = "" if change is None else f" ({change:+.2f})"
    same = "same judge" if check.previous.judge_key == check.judge.key else "another judge"
    return f"kappa {before} on {when} ({same}){delta}"
