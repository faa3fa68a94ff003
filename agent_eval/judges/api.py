"""Labels and judge agreement from Python (notebooks): `agent_eval.label`, `import_labels`, `export_labels`,
`judge_agreements`. The same rules as the commands (`agent_eval.judges.labels_io`, `agent_eval.judges.agreement`).
"""

from __future__ import annotations

from pathlib import Path

from agent_eval.errors import EvalInputError
from agent_eval.judges import agreement, labels_io
from agent_eval.results.agreement_model import JudgeAgreement
from agent_eval.store.engine import check_store, get_engine
from agent_eval.store.labels import Label, save_labels

__all__ = ["export_labels", "import_labels", "judge_agreements", "label"]


def label(
    run_id: str | None,
    eval_id: str,
    metric: str,
    *,
    passed: bool | None = None,
    score: float | None = None,
    turn: int = 1,
    rubric_id: str | None = None,
    eval_set_id: str | None = None,
    run_index: int = 0,
    note: str | None = None,
    labeller: str | None = None,
    db_url: str | None = None,
) -> Label:
    """Label one judged item (found as `agent-eval labels import` finds a row: `run_id` may be a unique prefix,
    or None for the newest run that judged it; `turn` counts from 1) and store it; returns the stored label.

    Raises:
        EvalInputError: no stored run judged that item, or no verdict (`passed` or `score`) is given.
    """
    check_store(db_url)
    engine = get_engine(db_url)
    row = {
        "run_id": run_id,
        "eval_id": eval_id,
        "metric": metric,
        "label": passed,
        "score": score,
        "turn": turn,
        "rubric_id": rubric_id,
        "eval_set_id": eval_set_id,
        "run_index": run_index,
        "note": note,
    }
    found = labels_io.resolve_label(
        {key: value for key, value in row.items() if value is not None},
        labeller or labels_io.default_labeller(),
        engine,
        lambda field, message: EvalInputError(message, field=field),
    )
    save_labels([found], engine)
    return found


def import_labels(path: str | Path, *, labeller: str | None = None, db_url: str | None = None) -> int:
    """`agent-eval labels import FILE`: every label of a CSV or JSONL file, all or none; the number stored."""
    check_store(db_url)
    return labels_io.import_labels(path, labeller or labels_io.default_labeller(), get_engine(db_url))


def export_labels(path: str | Path, *, metric: str | None = None, db_url: str | None = None) -> int:
    """`agent-eval labels export FILE`: every stored label (of one metric); the number written."""
    check_store(db_url)
    return labels_io.export_labels(path, get_engine(db_url), metric=metric)


def judge_agreements(*, metric: str | None = None, db_url: str | None = None) -> list[JudgeAgreement]:
    """`agent-eval judges`: per judged metric and judge identity, the agreement with the labels."""
    check_store(db_url)
    return agreement.judge_agreements(get_engine(db_url), metric=metric)
