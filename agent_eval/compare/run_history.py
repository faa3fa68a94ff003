"""Run history from the store as pandas DataFrames: list runs, show one run, compare two runs.

    >>> from agent_eval.compare.run_history import history, show, compare
    >>> history(eval_set="home_automation_demo", limit=5)      # one row per run, newest first
    >>> show(run_id).failed_cases()                             # the RunReport, as the flow returned it
    >>> compare(old_id, new_id).cases                           # per shared case run: what changed

Each function takes `db_url` (default `$AGENT_EVAL_DB_URL` or the SQLite file), and a run id or a unique prefix of
at least 6 characters of one (`agent_eval.store.queries.resolve_run_id`); it raises `RunNotFoundError` for an
unknown run id, `EvalInputError` for an ambiguous or too short prefix.
"""

from __future__ import annotations

import importlib
import json
import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeAlias

from agent_eval.compare.history_table import format_history
from agent_eval.render.html_charts import HistoryPoint
from agent_eval.render.verdict import regression_verdict
from agent_eval.results.model import RunReport
from agent_eval.results.pricing import RunCost
from agent_eval.store import (
    CaseScore,
    RunNotFoundError,
    RunRead,
    case_scores,
    eval_set_hashes,
    get_engine,
    get_run,
    list_runs,
    load_report,
    metric_means,
)
from agent_eval.store.queries import resolve_run_id, subset_runs

__all__ = [
    "HISTORY_COLUMNS",
    "Comparison",
    "RunNotFoundError",
    "compare",
    "format_comparison",
    "format_history",
    "history",
    "history_json",
    "history_points",
    "run_info",
    "show",
]

HISTORY_COLUMNS = [
    "run_id",
    "started_at",
    "completed_at",
    "status",
    "agent_reference",
    "eval_set_ids",
    "num_runs",
    "total",
    "passed",
    "failed",
    "pass_rate",
    "not_evaluated",
    "pass_at_k",
    "flaky_cases",
    "regression",
    "cost_usd",
    "tokens",
    "baseline_run_id",
    "regressed",
    "source_run_id",
    "source",
    "tags",
    "git_commit",
    "deployment_name",
    "flow_run_id",
]
"""The fixed columns of `history()`; one `<metric>/mean` column per metric follows them.

`pass_rate` is over the evaluated case runs (`results.aggregate`), `not_evaluated` counts the others; `pass_at_k`
(`{"1": ..., "2": ...}`, mean over cases) and `flaky_cases` (how many cases both passed and failed) come from
the run's summary when cases ran more than once (else `{}` and 0); `regression` is the verdict against the
baseline (`regressed vs RUN`, `ok vs RUN`, `no comparable baseline`, or None when the run was not compared);
`source` says how a run made from another one (`source_run_id`) came from it: `rerun`, `subset rerun` (of some of
its cases, `agent_eval.store.queries.subset_runs`) or `rescore` (None for any other run). `cost_usd` is what the
run's agent and judge tokens cost (`RunSummary.cost`; None when no call reported tokens or a model has no price)
and `tokens` all their input and output tokens (None when none were reported).
"""

DataFrame: TypeAlias = Any
"""A `pandas.DataFrame` (pandas ships no type hints, so it is `Any` to mypy)."""

CASE_KEY = ["eval_set_id", "eval_id", "run_index"]
_EPSILON = 1e-9


@dataclass(frozen=True)
class Comparison:
    """Two runs side by side.

    Attributes:
        run_a: the first (baseline) run.
        run_b: the second run.
        metrics: per metric, `mean_a`, `mean_b` (over each run's scored case runs) and `delta` (b - a).
        cases: per case run both runs share (keyed by eval set, eval id, run index): `status_a`,
            `status_b`, `change` (`passed → failed`, ..., or `unchanged`) and `<metric>/delta` (b - a).
        changed_eval_sets: eval sets both runs evaluated whose content differs between them (where both
            runs recorded their versions).
    """

    run_a: RunRead
    run_b: RunRead
    metrics: DataFrame
    cases: DataFrame
    changed_eval_sets: list[str]

    def changed_cases(self) -> DataFrame:
        """The shared case runs whose status changed or whose score moved on some metric."""
        deltas = self.cases[[c for c in self.cases.columns if c.endswith("/delta")]]
        moved = (deltas.abs() > _EPSILON).any(axis=1)
        return self.cases[(self.cases["change"] != "unchanged") | moved]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (missing values as None)."""
        return {
            "run_a": self.run_a.id,
            "run_b": self.run_b.id,
            "changed_eval_sets": self.changed_eval_sets,
            "metrics": _records(self.metrics),
            "cases": _records(self.cases),
        }


def history(
    *,
    eval_set: str | None = None,
    agent: str | None = None,
    limit: int | None = 20,
    db_url: str | None = None,
) -> DataFrame:
    """Runs, newest first, with their pass rate and the mean score of each metric.

    Args:
        eval_set: only runs that evaluated this eval set id.
        agent: only runs of this agent reference.
        limit: at most this many runs (None: all).
        db_url: the store.

    Returns:
        One row per run: `HISTORY_COLUMNS`, then `<metric>/mean` per metric (NaN where a run lacks it).
    """
    engine = get_engine(db_url)
    runs = list_runs(engine, limit, eval_set_id=eval_set, agent_reference=agent)
    means = metric_means([run.id for run in runs], engine)
    subsets = subset_runs(runs, engine)
    rows = [_history_row(run, means.get(run.id, {}), run.id in subsets) for run in runs]
    names = sorted({name for run_means in means.values() for name in run_means})
    return _pandas().DataFrame(rows, columns=[*HISTORY_COLUMNS, *(f"{name}/mean" for name in names)])


def history_points(report: RunReport, *, limit: int = 30, db_url: str | None = None) -> list[HistoryPoint]:
    """The trend of the report's eval sets: one point per completed run (at most `limit`, newest first) that
    evaluated the report's first eval set, for `render_html`."""
    engine = get_engine(db_url)
    eval_set = report.eval_set_ids[0] if report.eval_set_ids else None
    runs = list_runs(engine, limit, eval_set_id=eval_set)
    means = metric_means([run.id for run in runs], engine)
    return [
        HistoryPoint(
            run_id=run.id, started_at=run.started_at, pass_rate=run.pass_rate, metric_means=means.get(run.id, {})
        )
        for run in runs
        if run.status == "completed"
    ]


def show(run_id: str, *, db_url: str | None = None) -> RunReport:
    """The `RunReport` of a stored run (see `agent_eval.store.load_report`)."""
    engine = get_engine(db_url)
    return load_report(resolve_run_id(run_id, engine), engine)


def run_info(run_id: str, *, db_url: str | None = None) -> RunRead:
    """The stored run row: status, provenance (git commit, deployment, tags), timestamps, totals."""
    engine = get_engine(db_url)
    return get_run(resolve_run_id(run_id, engine), engine)


def compare(run_a: str, run_b: str, *, db_url: str | None = None) -> Comparison:
    """Compare run B with run A: per-metric means and, on the case runs they share, what changed."""
    engine = get_engine(db_url)
    run_a, run_b = resolve_run_id(run_a, engine), resolve_run_id(run_b, engine)
    first, second = get_run(run_a, engine), get_run(run_b, engine)
    means = metric_means([run_a, run_b], engine)
    hashes_a, hashes_b = eval_set_hashes(run_a, engine), eval_set_hashes(run_b, engine)
    known = {s for s in hashes_a.keys() & hashes_b.keys() if hashes_a[s] and hashes_b[s]}
    changed = sorted(s for s in known if hashes_a[s] != hashes_b[s])
    return Comparison(
        run_a=first,
        run_b=second,
        metrics=_metric_deltas(means.get(run_a, {}), means.get(run_b, {})),
        cases=_case_changes(case_scores(run_a, engine), case_scores(run_b, engine)),
        changed_eval_sets=changed,
    )


def _history_row(run: RunRead, means: dict[str, float], subset: bool) -> dict[str, Any]:
    row: dict[str, Any] = {name: getattr(run, name, None) for name in HISTORY_COLUMNS}
    summary = run.summary or {}
    row.update(
        run_id=run.id,
        source=_source_kind(run, subset),
        not_evaluated=run.total - run.passed - run.failed,
        pass_at_k={str(k): value for k, value in (summary.get("pass_at_k") or {}).items()},
        flaky_cases=len(summary.get("flaky_cases") or []),
        regression=regression_verdict(run.regression),
        cost_usd=_cost(summary),
        tokens=_tokens(summary),
    )
    row.update({f"{name}/mean": mean for name, mean in means.items()})
    return row


def _cost(summary: dict[str, Any]) -> float | None:
    """The run's cost in dollars, from its stored summary (None: no tokens, or some cost unknown)."""
    cost = summary.get("cost")
    return RunCost.model_validate(cost).total_usd if isinstance(cost, dict) else None


def _tokens(summary: dict[str, Any]) -> int | None:
    """Every input and output token the run's agent and judges reported (None: none reported)."""
    counts = [
        usage.get(kind)
        for side in ("agent_tokens", "judge_tokens")
        for usage in (summary.get(side) or {}).values()
        if isinstance(usage, dict)
        for kind in ("input_tokens", "output_tokens")
    ]
    known = [count for count in counts if isinstance(count, int)]
    return sum(known) if known else None


def _source_kind(run: RunRead, subset: bool) -> str | None:
    """`rerun`, `subset rerun` or `rescore` (told by the tag the flow gives it) for a run made from another."""
    if run.source_run_id is None:
        return None
    kind = "rescore" if "rescore" in run.tags else "rerun"
    return f"subset {kind}" if subset else kind


def _metric_deltas(means_a: dict[str, float], means_b: dict[str, float]) -> DataFrame:
    names = sorted(means_a.keys() | means_b.keys())
    frame = _pandas().DataFrame(
        {
            "metric_name": names,
            "mean_a": [means_a.get(n, math.nan) for n in names],
            "mean_b": [means_b.get(n, math.nan) for n in names],
        }
    )
    frame["delta"] = frame["mean_b"] - frame["mean_a"]
    return frame


def _case_changes(scores_a: list[CaseScore], scores_b: list[CaseScore]) -> DataFrame:
    """One row per shared case run, sorted by eval set id, eval id and run index (whatever order either run
    wrote them in): statuses, the change, and per-metric score deltas."""
    statuses = _pandas().merge(_statuses(scores_a), _statuses(scores_b), on=CASE_KEY, suffixes=("_a", "_b"))
    statuses["change"] = [_change(a, b) for a, b in zip(statuses["status_a"], statuses["status_b"], strict=True)]
    deltas = _scores(scores_b).sub(_scores(scores_a), fill_value=None)
    deltas.columns = [f"{name}/delta" for name in deltas.columns]
    changes = statuses.merge(deltas, left_on=CASE_KEY, right_index=True, how="left")
    return changes.sort_values(CASE_KEY, kind="stable").reset_index(drop=True)


def _statuses(scores: list[CaseScore]) -> DataFrame:
    """Each case run's status as a word: `passed`, `failed`, `not evaluated`, `informational`."""
    rows = {(s.eval_set_id, s.eval_id, s.run_index): s.status.name.lower().replace("_", " ") for s in scores}
    return _pandas().DataFrame([(*key, status) for key, status in rows.items()], columns=[*CASE_KEY, "status"])


def _scores(scores: list[CaseScore]) -> DataFrame:
    """Scores indexed by case key, one column per metric (sorted)."""
    rows = [(s.eval_set_id, s.eval_id, s.run_index, s.metric_name, s.score) for s in scores if s.metric_name]
    frame = _pandas().DataFrame(rows, columns=[*CASE_KEY, "metric_name", "score"])
    frame["score"] = _pandas().to_numeric(frame["score"]).astype(float)
    table = frame.pivot(index=CASE_KEY, columns="metric_name", values="score")
    return table.reindex(columns=sorted(table.columns))


def _pandas() -> Any:
    """pandas, imported on first use (untyped: `Any`)."""
    return importlib.import_module("pandas")


def _missing(value: Any) -> bool:
    """None, NaN or NaT."""
    if isinstance(value, float):
        return math.isnan(value)
    return value is None or (isinstance(value, datetime) and bool(_pandas().isna(value)))


def _change(status_a: str, status_b: str) -> str:
    return "unchanged" if status_a == status_b else f"{status_a} → {status_b}"


def _records(frame: DataFrame) -> list[dict[str, Any]]:
    """Rows as JSON-ready dicts: NaN as None, timestamps as ISO strings, numbers at full precision."""
    rows: list[dict[str, Any]] = frame.astype(object).to_dict(orient="records")
    return [{key: _json_value(value) for key, value in row.items()} for row in rows]


def _json_value(value: Any) -> Any:
    if hasattr(value, "item"):  # a numpy scalar
        value = value.item()
    if _missing(value):
        return None
    return value.isoformat() if isinstance(value, datetime) else value


def history_json(frame: DataFrame) -> str:
    """`history()` as an indented JSON list of runs."""
    return json.dumps(_records(frame), indent=2, ensure_ascii=False)


def format_comparison(comparison: Comparison) -> str:
    """The per-metric means and deltas, then each shared case run that changed."""
    a, b = comparison.run_a, comparison.run_b
    lines = [f"A: {a.id}  {a.started_at:%Y-%m-%d %H:%M:%S}  {a.agent_reference}  {a.status}"]
    lines.append(f"B: {b.id}  {b.started_at:%Y-%m-%d %H:%M:%S}  {b.agent_reference}  {b.status}")
    if comparison.changed_eval_sets:
        lines.append(f"Eval sets changed between the runs: {', '.join(comparison.changed_eval_sets)}")
    width = max([len("metric"), *(len(n) for n in comparison.metrics["metric_name"])])
    lines.append(f"{'metric':<{width}}  {'A':>6}  {'B':>6}  {'delta':>7}")
    for row in comparison.metrics.to_dict(orient="records"):
        lines.append(
            f"{row['metric_name']:<{width}}  {_number(row['mean_a'])}  {_number(row['mean_b'])}  "
            f"{_number(row['delta'], signed=True)}"
        )
    changed = comparison.changed_cases()
    lines.append(f"Shared case runs: {len(comparison.cases)}  changed: {len(changed)}")
    several = max(a.num_runs, b.num_runs) > 1
    lines.extend(_case_line(row, several) for row in changed.to_dict(orient="records"))
    return "\n".join(lines)


def _case_line(row: dict[str, Any], several_runs: bool) -> str:
    run = f" (run {row['run_index'] + 1})" if several_runs else ""
    deltas = [
        f"{key.removesuffix('/delta')} {value:+.3f}"
        for key, value in row.items()
        if key.endswith("/delta") and not _missing(value) and abs(value) > _EPSILON
    ]
    return f"  {row['change']:<16}  {row['eval_set_id']}/{row['eval_id']}{run}  {'  '.join(deltas)}".rstrip()


def _number(value: float, *, signed: bool = False) -> str:
    if _missing(value):
        return f"{'-':>7}" if signed else f"{'-':>6}"
    return f"{value:+7.3f}" if signed else f"{value:6.3f}"
