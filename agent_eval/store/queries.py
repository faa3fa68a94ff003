"""Reading runs back: run lists, per-metric means, case scores for comparisons, whole reports."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from agent_eval.errors import EvalInputError
from agent_eval.results.run_configs import judge_differences, scoring_fingerprints
from agent_eval.schema import EvalSet, EvalStatus
from agent_eval.store.engine import get_engine
from agent_eval.store.models import (
    CaseRecord,
    EvalSetVersion,
    MetricRecord,
    Run,
    RunEvalSet,
    RunRead,
    RunStatus,
    as_utc,
    comparable_version,
)

__all__ = [
    "MIN_RUN_ID_PREFIX",
    "BaselineChoice",
    "CaseScore",
    "RunNotFoundError",
    "case_run_outcomes",
    "case_scores",
    "choose_baseline",
    "eval_set_hashes",
    "eval_set_versions",
    "find_baseline",
    "get_run",
    "list_runs",
    "load_case_records",
    "metric_means",
    "resolve_run_id",
    "run_row",
    "stored_eval_sets",
    "subset_runs",
]

MIN_RUN_ID_PREFIX = 6
"""The fewest characters of a run id that name it (git's rule for commits, with a floor of 6)."""
_HEX_DIGITS = frozenset("0123456789abcdef")
_SHOWN_ID = 8


class RunNotFoundError(EvalInputError, LookupError):
    """No run with this id in the store (bad input: the CLI exits 2 with this one line)."""

    def __init__(self, run_id: str, store: str = "the store") -> None:
        self.run_id = run_id
        super().__init__(f"no run {run_id!r} in {store}; `agent-eval history` lists the runs")


@dataclass(frozen=True)
class CaseScore:
    """One case run's status and one metric's score on it (`metric_name` None: the case has no metric)."""

    eval_set_id: str
    eval_id: str
    run_index: int
    status: EvalStatus
    metric_name: str | None
    score: float | None


def list_runs(
    engine: Engine | None = None,
    limit: int | None = 20,
    *,
    eval_set_id: str | None = None,
    agent_reference: str | None = None,
) -> list[RunRead]:
    """Runs, newest first, optionally of one eval set or one agent reference."""
    statement = select(Run).order_by(col(Run.started_at).desc(), col(Run.id)).limit(limit)
    if eval_set_id is not None:
        with_set = select(RunEvalSet.run_id).where(RunEvalSet.eval_set_id == eval_set_id)
        statement = statement.where(col(Run.id).in_(with_set))
    if agent_reference is not None:
        statement = statement.where(Run.agent_reference == agent_reference)
    with Session(engine or get_engine()) as session:
        return [RunRead.model_validate(run) for run in session.exec(statement).all()]


def get_run(run_id: str, engine: Engine | None = None) -> RunRead:
    """One run.

    Raises:
        RunNotFoundError: no such run.
    """
    with Session(engine or get_engine()) as session:
        return RunRead.model_validate(run_row(session, run_id))


def resolve_run_id(run_id: str, engine: Engine | None = None) -> str:
    """The full id of the run that `run_id` names: a whole run id, or a unique prefix of one (git's rule).

    A run id is 32 hexadecimal characters (`uuid4().hex`); a prefix of at least `MIN_RUN_ID_PREFIX` of them
    names the one run whose id starts with it (any case: ids are lower case). An id that is stored as given is
    that run, whatever its form (runs saved by other tools). Every command and API function that takes a run id
    resolves it here.

    Raises:
        RunNotFoundError: no run has this id or an id starting with it.
        EvalInputError: the prefix is shorter than `MIN_RUN_ID_PREFIX`, or several runs' ids start with it
            (the message names two of them).
    """
    with Session(engine or get_engine()) as session:
        return _resolved_run_id(session, run_id)


def _resolved_run_id(session: Session, run_id: str) -> str:
    if session.get(Run, run_id) is not None:
        return run_id
    prefix = run_id.lower()
    if not prefix or not set(prefix) <= _HEX_DIGITS:  # no run id starts with it: it is unknown
        raise RunNotFoundError(run_id, _store_name(session))
    if len(prefix) < MIN_RUN_ID_PREFIX:
        raise EvalInputError(
            f"run id prefix {run_id!r} is too short: give at least {MIN_RUN_ID_PREFIX} characters of a run id "
            "from `agent-eval history`"
        )
    statement = select(Run.id).where(col(Run.id).like(f"{prefix}%")).order_by(col(Run.id)).limit(2)
    matches = list(session.exec(statement).all())
    if not matches:
        raise RunNotFoundError(run_id, _store_name(session))
    if len(matches) > 1:
        raise EvalInputError(
            f"run id prefix {run_id!r} is ambiguous: {', '.join(_distinct(matches))}; give more of the run id"
        )
    return matches[0]


def _distinct(run_ids: Sequence[str]) -> list[str]:
    """The ids cut where they differ (at least `_SHOWN_ID` characters), e.g. `abc1234f...`, `abc123a0...`."""
    shared = next(
        (i for i, chars in enumerate(zip(*run_ids, strict=False)) if len(set(chars)) > 1), min(map(len, run_ids))
    )
    shown = max(_SHOWN_ID, shared + 1)
    return [run_id if len(run_id) <= shown else f"{run_id[:shown]}..." for run_id in run_ids]


def _store_name(session: Session) -> str:
    return str(session.get_bind().engine.url)  # the password is masked


def metric_means(run_ids: Sequence[str], engine: Engine | None = None) -> dict[str, dict[str, float]]:
    """Per run, the mean score of each metric over its scored case runs (metrics ordered by name)."""
    statement = (
        select(MetricRecord.run_id, MetricRecord.metric_name, func.avg(MetricRecord.score))
        .where(col(MetricRecord.run_id).in_(run_ids), col(MetricRecord.score).is_not(None))
        .group_by(col(MetricRecord.run_id), col(MetricRecord.metric_name))
        .order_by(col(MetricRecord.metric_name))
    )
    means: dict[str, dict[str, float]] = defaultdict(dict)
    with Session(engine or get_engine()) as session:
        for run_id, metric_name, mean in session.exec(statement).all():
            means[run_id][metric_name] = float(mean)
    return dict(means)


def case_scores(run_id: str, engine: Engine | None = None) -> list[CaseScore]:
    """Every case run of a run with each of its metric scores, in the order they were written.

    Raises:
        RunNotFoundError: no such run.
    """
    statement = (
        select(CaseRecord, MetricRecord.metric_name, MetricRecord.score)
        .outerjoin(MetricRecord, col(MetricRecord.case_result_id) == col(CaseRecord.id))
        .where(CaseRecord.run_id == run_id)
        .order_by(col(CaseRecord.id), col(MetricRecord.id))
    )
    with Session(engine or get_engine()) as session:
        run_row(session, run_id)
        rows = session.exec(statement).all()
    return [
        CaseScore(case.eval_set_id, case.eval_id, case.run_index, EvalStatus(case.status), name, score)
        for case, name, score in rows
    ]


def eval_set_hashes(run_id: str, engine: Engine | None = None) -> dict[str, str | None]:
    """The content hash of each eval set the run evaluated (None when not recorded)."""
    statement = select(RunEvalSet.eval_set_id, RunEvalSet.eval_set_hash).where(RunEvalSet.run_id == run_id)
    with Session(engine or get_engine()) as session:
        return dict(session.exec(statement).all())


@dataclass(frozen=True)
class BaselineChoice:
    """The run a run is compared with and why, or (`run_id` None) why there is no comparable one."""

    run_id: str | None
    reason: str
    subset: bool = False
    """The run evaluated a subset of the baseline's case runs (`rerun --only-failed` of it): compare the two on
    the case runs the run has, never on the others."""


def find_baseline(run_id: str, engine: Engine | None = None) -> str | None:
    """The id of the run `choose_baseline` picks for `run_id`, or None (rule there)."""
    return choose_baseline(run_id, engine).run_id


def choose_baseline(run_id: str, engine: Engine | None = None, *, pinned: str | None = None) -> BaselineChoice:
    """The baseline of `run_id`: the pinned run, else the latest comparable one; with the reason either way.

    A run is comparable with `run_id` when it is an other run that started no later, is `completed` (an
    `errored`, `cancelled`, `crashed` or `running` run never is), has the same agent reference, the same eval
    set ids with the same content versions, and scored each eval set with the same criteria: the same scoring
    fingerprint (`agent_eval.schema.scoring_fingerprint` of the config that scored it: criteria with their
    thresholds and options, custom metrics, user simulator; the `regression` section does not count). The
    fingerprints are computed from `runs.config`, so runs of earlier releases are compared by the same rule.
    And its judged criteria were scored by the same judge identities (`runs.judges`: model, resolved judge mode,
    prompts' version, samples; `agent_eval.results.run_configs.judge_differences`): a laptop with the `adk` extra
    and a worker without it score one config with two algorithms, and the reason then says which judge differs.

    A pinned run is used whatever its config (the comparison then keeps to what both measured alike, see
    `agent_eval.compare.regression`), unless it is missing or not completed; it may be given by a unique
    prefix of its id (`resolve_run_id`).

    A run that evaluated a subset of its source run's cases (`subset_runs`: `rerun --only-failed`) is compared
    with its source when that is completed (`BaselineChoice.subset`: on the case runs the rerun has only), and
    has no baseline when it is not.

    Raises:
        RunNotFoundError: no run `run_id`.
    """
    engine = engine or get_engine()
    with Session(engine) as session:
        run = run_row(session, run_id)
        if pinned is not None:
            return _pinned(session, pinned)
        if (source := _subset_source(session, run)) is not None:
            return source
        candidates = _earlier_runs(session, run)
        versions = _eval_set_versions(session, [run_id, *(c.id for c in candidates)])
        completed = [c for c in candidates if c.status == RunStatus.COMPLETED]
        same_sets = [c for c in completed if versions.get(c.id, {}) == versions.get(run_id, {})]
        configs = _configs(session, [c.id for c in same_sets])
        judges = _judges(session, [c.id for c in same_sets])
    wanted = scoring_fingerprints(run.config, run.eval_set_ids)
    same_criteria = [c for c in same_sets if scoring_fingerprints(configs[c.id], run.eval_set_ids) == wanted]
    judged = {c.id: judge_differences(run.judges, judges[c.id], run.eval_set_ids) for c in same_criteria}
    chosen = next((c for c in same_criteria if not judged[c.id]), None)
    if chosen is None and same_criteria:
        latest = same_criteria[0]
        return BaselineChoice(
            None,
            f"the latest run of the same criteria ({latest.id[:8]}, {_minute(latest.started_at)}) "
            f"was scored by another judge: {'; '.join(judged[latest.id])}",
        )
    if chosen is not None:
        when = _minute(chosen.started_at)
        return BaselineChoice(
            chosen.id, f"latest completed run of the same agent, eval set versions and criteria, {when}"
        )
    return BaselineChoice(None, _no_baseline_reason(candidates, completed, same_sets))


@dataclass(frozen=True)
class _Candidate:
    id: str
    status: str
    started_at: datetime


def _pinned(session: Session, pinned: str) -> BaselineChoice:
    try:
        pinned = _resolved_run_id(session, pinned)
    except RunNotFoundError:
        return BaselineChoice(None, f"the pinned baseline run {pinned!r} is not in the store")
    except EvalInputError as error:
        return BaselineChoice(None, f"the pinned baseline: {error.one_line()}")
    baseline = run_row(session, pinned)
    if baseline.status != RunStatus.COMPLETED:
        return BaselineChoice(
            None, f"the pinned baseline run {pinned!r} is {baseline.status}: only a completed run is a baseline"
        )
    return BaselineChoice(pinned, f"pinned with --baseline, {_minute(baseline.started_at)}")


def subset_runs(runs: Sequence[RunRead], engine: Engine | None = None) -> set[str]:
    """The ids of those of `runs` that evaluated a subset of their source run's cases (`rerun --only-failed`).

    A rerun or a rescore evaluates the eval set versions stored with its source run (`source_run_id`), so one
    whose versions differ from its source's (eval sets left out, or fewer cases in one) evaluated a part of
    them; every version of recorded traffic counts as one (`comparable_version`). One query for all the runs.
    """
    sources = {run.id: run.source_run_id for run in runs if run.source_run_id}
    if not sources:
        return set()
    with Session(engine or get_engine()) as session:
        versions = _eval_set_versions(session, [*sources, *sources.values()])
    return {
        run_id for run_id, source in sources.items() if _narrower(versions.get(run_id, {}), versions.get(source, {}))
    }


def _narrower(versions: dict[str, str | None], source_versions: dict[str, str | None]) -> bool:
    """Whether a run with these eval set versions evaluated a part of its source's (see `subset_runs`)."""
    return bool(versions) and versions.keys() <= source_versions.keys() and versions != source_versions


def _subset_source(session: Session, run: Run) -> BaselineChoice | None:
    """The baseline of a run that evaluated a subset of its source run: the source, if completed; None for a
    run that is no such subset."""
    source_id = run.source_run_id
    if source_id is None:
        return None
    versions = _eval_set_versions(session, [run.id, source_id])
    source = session.get(Run, source_id)
    if source is None or not _narrower(versions.get(run.id, {}), versions.get(source_id, {})):
        return None
    if source.status != RunStatus.COMPLETED:
        return BaselineChoice(
            None,
            f"a rerun of a subset of run {source_id}, which is {source.status}: only a completed run is a baseline",
        )
    reason = f"the source of this rerun of a subset of its cases, {_minute(source.started_at)}"
    return BaselineChoice(source_id, reason, subset=True)


def _earlier_runs(session: Session, run: Run) -> list[_Candidate]:
    """Every other run of the same agent reference that started no later than `run`, newest first."""
    statement = (
        select(Run.id, Run.status, Run.started_at)
        .where(col(Run.agent_reference) == run.agent_reference, col(Run.id) != run.id)
        .where(col(Run.started_at) <= run.started_at)
        .order_by(col(Run.started_at).desc(), col(Run.id))
    )
    return [_Candidate(*row) for row in session.exec(statement).all()]


def _configs(session: Session, run_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    statement = select(Run.id, Run.config).where(col(Run.id).in_(run_ids))
    return {run_id: dict(config or {}) for run_id, config in session.exec(statement).all()}


def _judges(session: Session, run_ids: Sequence[str]) -> dict[str, dict[str, Any] | None]:
    statement = select(Run.id, Run.judges).where(col(Run.id).in_(run_ids))
    return {run_id: dict(judges) if judges is not None else None for run_id, judges in session.exec(statement).all()}


def _eval_set_versions(session: Session, run_ids: Sequence[str]) -> dict[str, dict[str, str | None]]:
    """Per run, each eval set id with its content hash: one query for all the runs, not one each."""
    statement = select(RunEvalSet.run_id, RunEvalSet.eval_set_id, RunEvalSet.eval_set_hash).where(
        col(RunEvalSet.run_id).in_(run_ids)
    )
    versions: dict[str, dict[str, str | None]] = defaultdict(dict)
    for run_id, eval_set_id, eval_set_hash in session.exec(statement).all():
        versions[run_id][eval_set_id] = comparable_version(eval_set_hash)
    return versions


def _no_baseline_reason(candidates: list[_Candidate], completed: list[_Candidate], same_sets: list[_Candidate]) -> str:
    """E.g. "2 earlier runs of this agent and eval set versions used other criteria"."""
    if same_sets:
        reason = f"{_runs(len(same_sets))} of this agent and eval set versions used other criteria"
    elif completed:
        reason = f"{_runs(len(completed))} of this agent evaluated other eval sets or other versions of them"
    else:
        reason = "no earlier completed run of this agent"
    others = sorted({c.status for c in candidates if c.status != RunStatus.COMPLETED})
    if others:
        counts = ", ".join(f"{sum(c.status == status for c in candidates)} {status}" for status in others)
        reason += f" (never a baseline: {counts})"
    return reason


def _runs(count: int) -> str:
    return f"{count} earlier completed run" + ("s" if count != 1 else "")


def _minute(started_at: datetime) -> str:
    """E.g. `2026-12-02 21:14 UTC`."""
    moment = as_utc(started_at) or started_at
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def stored_eval_sets(run_id: str, engine: Engine | None = None) -> list[EvalSet]:
    """The eval set versions a run evaluated, in the run's order.

    Raises:
        RunNotFoundError: no such run.
    """
    with Session(engine or get_engine()) as session:
        run = run_row(session, run_id)
        by_id = eval_set_versions(session, run_id)
        return [by_id[eval_set_id] for eval_set_id in run.eval_set_ids if eval_set_id in by_id]


def case_run_outcomes(run_id: str, engine: Engine | None = None) -> dict[str, int]:
    """How many case runs of the run are stored, by outcome: `failed` (the agent failed), `cached` (an answer
    reused from another run), `invoked` (the others); one counting query, for progress."""
    failed = col(CaseRecord.failure) > 0
    cached = col(CaseRecord.cached_from_run_id).is_not(None)
    statement = select(failed, cached, func.count()).where(CaseRecord.run_id == run_id).group_by(failed, cached)
    counts = dict.fromkeys(("invoked", "cached", "failed"), 0)
    with Session(engine or get_engine()) as session:
        for is_failed, is_cached, count in session.exec(statement).all():
            counts["failed" if is_failed else "cached" if is_cached else "invoked"] += count
    return counts


def load_case_records(run_id: str, engine: Engine | None = None) -> list[CaseRecord]:
    """The case results of one run, in the order they were written."""
    with Session(engine or get_engine()) as session:
        statement = select(CaseRecord).where(CaseRecord.run_id == run_id).order_by(col(CaseRecord.id))
        return list(session.exec(statement).all())


def run_row(session: Session, run_id: str) -> Run:
    """The run's row.

    Raises:
        RunNotFoundError: no such run.
    """
    run = session.get(Run, run_id)
    if run is None:
        raise RunNotFoundError(run_id, _store_name(session))
    return run


def eval_set_versions(session: Session, run_id: str) -> dict[str, EvalSet]:
    """The eval set versions a run evaluated, by eval set id."""
    statement = (
        select(EvalSetVersion)
        .join(RunEvalSet, col(RunEvalSet.eval_set_hash) == col(EvalSetVersion.content_hash))
        .where(RunEvalSet.run_id == run_id)
    )
    return {v.eval_set_id: EvalSet.model_validate(v.content) for v in session.exec(statement).all()}
