"""Human labels from and to files: `agent-eval labels import FILE` and `agent-eval labels export FILE`.

A file is CSV (a header row) or JSON Lines (one object per line), told by its extension (`.csv`, `.jsonl`,
`.ndjson`). Each row labels one judged item, named either by its content key (`item_key`, as exported) or by
where a run judged it:

- `run_id` (a unique prefix is enough) or, without it, the newest run that judged the item; `eval_set_id`
  (needed only when two eval sets have the case), `eval_id`, `run_index` (default 0);
- `metric`, `turn` (1 for a conversation's first turn; default 1), `rubric_id` (rubric metrics only);
- `label`: `pass` or `fail` (also `true`/`false`, `yes`/`no`, `1`/`0`), or a score, e.g. `0.8`, for a scored
  metric (`score` may be a column of its own); `note` (optional), `labeller` (default: the command's).

The whole file is read and checked before anything is written; the first bad row is one line naming the file,
the row (line number) and the field, and nothing is stored. Exported files hold one row per label, with the
columns `EXPORT_COLUMNS`, and import again unchanged.
"""

from __future__ import annotations

import csv
import getpass
import json
import math
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, TypeAlias

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from agent_eval.errors import EvalInputError
from agent_eval.settings import settings
from agent_eval.store.engine import get_engine
from agent_eval.store.labels import Label, labels, save_labels
from agent_eval.store.models import CaseRecord, JudgedItemRecord, Run
from agent_eval.store.queries import resolve_run_id

__all__ = [
    "EXPORT_COLUMNS",
    "BadRow",
    "default_labeller",
    "export_labels",
    "import_labels",
    "read_label_rows",
    "resolve_label",
]

EXPORT_COLUMNS = (
    "item_key",
    "metric",
    "rubric_id",
    "run_id",
    "eval_set_id",
    "eval_id",
    "turn",
    "label",
    "score",
    "labeller",
    "labelled_at",
    "note",
)
_PASS = {"pass", "passed", "true", "yes", "1", "y"}
_FAIL = {"fail", "failed", "false", "no", "0", "n"}
_JSONL = (".jsonl", ".ndjson")
MAX_LABELLER = 255
BadRow: TypeAlias = Callable[[str, str], EvalInputError]
"""Makes the one-line error of the row being read: `bad(field, message)`."""


def default_labeller() -> str:
    """Who labels when no one is named: `$AGENT_EVAL_LABELLER`, else the login name."""
    try:
        return settings().labeller or getpass.getuser()
    except (KeyError, OSError):  # no login name (a container's uid without a passwd entry)
        return "unknown"


def import_labels(path: str | Path, labeller: str, engine: Engine | None = None) -> int:
    """Store every label of a file (rules in the module docstring); the number stored.

    Raises:
        EvalInputError: the file cannot be read, or a row is bad (nothing is stored then).
    """
    engine = engine or get_engine()
    rows = read_label_rows(path)
    found = [_label(row, line, path, labeller, engine) for line, row in rows]
    return save_labels(found, engine)


def export_labels(path: str | Path, engine: Engine | None = None, *, metric: str | None = None) -> int:
    """Write every stored label (of one metric) to a CSV or JSON Lines file; the number written."""
    rows = [_exported(label) for label in labels(engine, metric=metric)]
    target = Path(path)
    if target.suffix.lower() in _JSONL:
        target.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    else:
        with target.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=EXPORT_COLUMNS)
            writer.writeheader()
            writer.writerows({k: "" if v is None else v for k, v in row.items()} for row in rows)
    return len(rows)


def read_label_rows(path: str | Path) -> list[tuple[int, dict[str, Any]]]:
    """The rows of a label file with their line numbers, blank values as missing.

    Raises:
        EvalInputError: no such file, an unknown extension, or a line that is not a JSON object.
    """
    source = Path(path)
    if not source.is_file():
        raise EvalInputError("no such file", file=source)
    suffix = source.suffix.lower()
    if suffix not in (".csv", *_JSONL):
        raise EvalInputError(f"unknown label file type {suffix or '(none)'!r}: use .csv or .jsonl", file=source)
    text = source.read_text(encoding="utf-8-sig")
    rows = _jsonl_rows(text, source) if suffix in _JSONL else _csv_rows(text)
    return [(line, {k.strip(): v for k, v in row.items() if k and v not in (None, "")}) for line, row in rows]


def _csv_rows(text: str) -> Iterator[tuple[int, dict[str, Any]]]:
    reader = csv.DictReader(text.splitlines())
    for row in reader:
        yield reader.line_num, dict(row)


def _jsonl_rows(text: str, source: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for line, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw)
        except json.JSONDecodeError as error:
            raise EvalInputError(f"line {line}: not JSON ({error.msg})", file=source) from None
        if not isinstance(row, dict):
            raise EvalInputError(f"line {line}: a label must be a JSON object", file=source)
        yield line, row


def _label(row: Mapping[str, Any], line: int, path: str | Path, labeller: str, engine: Engine) -> Label:
    def bad(field: str, message: str) -> EvalInputError:
        return EvalInputError(f"line {line}: {message}", file=path, field=field)

    return resolve_label(row, labeller, engine, bad)


def resolve_label(row: Mapping[str, Any], labeller: str, engine: Engine, bad: BadRow) -> Label:
    """The label a row (a file's row, or the Python API's arguments) gives, with its judged item found in the
    store (rules in the module docstring).

    Raises:
        EvalInputError: made by `bad(field, message)` for a bad value or an item no stored run judged.
    """
    passed, score = _verdict(row, bad)
    item = _item(row, bad, engine)
    name = str(row.get("labeller") or labeller)
    if not 1 <= len(name) <= MAX_LABELLER:
        raise bad("labeller", f"a labeller's name is 1 to {MAX_LABELLER} characters, got {len(name)}")
    return Label(
        item_key=item.item_key,
        metric_name=item.metric_name,
        rubric_id=item.rubric_id,
        passed=passed,
        score=score,
        labeller=name,
        note=str(row["note"]) if "note" in row else None,
        labelled_at=_when(row.get("labelled_at"), bad),
        run_id=item.run_id,
        eval_set_id=item.eval_set_id,
        eval_id=item.eval_id,
        turn=item.turn,
    )


class _Found:
    """The judged item a row names."""

    def __init__(self, record: JudgedItemRecord, case: CaseRecord | None) -> None:
        self.item_key = record.item_key
        self.metric_name = record.metric_name
        self.rubric_id = record.rubric_id
        self.run_id = record.run_id
        self.turn = record.turn
        self.eval_set_id = case.eval_set_id if case else None
        self.eval_id = case.eval_id if case else None


def _item(row: Mapping[str, Any], bad: BadRow, engine: Engine) -> _Found:
    statement = select(JudgedItemRecord, CaseRecord).join(
        CaseRecord, col(CaseRecord.id) == col(JudgedItemRecord.case_result_id)
    )
    if "item_key" in row:
        statement = statement.where(col(JudgedItemRecord.item_key) == str(row["item_key"]).strip())
        return _first(engine, statement, bad, "item_key", f"no judged item has the key {row['item_key']!r}")
    metric = _required(row, "metric", bad)
    statement = statement.where(col(JudgedItemRecord.metric_name) == metric)
    statement = statement.where(col(CaseRecord.eval_id) == _required(row, "eval_id", bad))
    statement = statement.where(col(JudgedItemRecord.turn) == _number(row, "turn", 1, bad) - 1)
    statement = statement.where(col(CaseRecord.run_index) == _number(row, "run_index", 0, bad))
    rubric_id = row.get("rubric_id")
    rubric = col(JudgedItemRecord.rubric_id)
    statement = statement.where(rubric == str(rubric_id) if rubric_id else rubric.is_(None))
    if "eval_set_id" in row:
        statement = statement.where(col(CaseRecord.eval_set_id) == str(row["eval_set_id"]))
    if "run_id" in row:
        statement = statement.where(col(JudgedItemRecord.run_id) == _run_id(str(row["run_id"]), bad, engine))
    where = f"metric {metric!r}, case {row['eval_id']!r}, turn {row.get('turn', 1)}" + (
        f", rubric {rubric_id!r}" if rubric_id else ""
    )
    return _first(engine, statement, bad, "eval_id", f"no stored run judged {where}")


def _first(engine: Engine, statement: Any, bad: BadRow, field: str, missing: str) -> _Found:
    newest_first = statement.join(Run, col(Run.id) == col(JudgedItemRecord.run_id)).order_by(
        col(Run.started_at).desc(), col(JudgedItemRecord.id)
    )
    with Session(engine) as session:
        found = session.exec(newest_first).first()
    if found is None:
        raise bad(field, missing)
    record, case = found
    return _Found(record, case)


def _run_id(prefix: str, bad: BadRow, engine: Engine) -> str:
    try:
        return resolve_run_id(prefix, engine)
    except EvalInputError as error:  # unknown, ambiguous or too short
        raise bad("run_id", error.message) from None


def _verdict(row: Mapping[str, Any], bad: BadRow) -> tuple[bool | None, float | None]:
    raw = row.get("label")
    score = _score(row.get("score"), bad, "score")
    if raw is None and score is None:
        raise bad("label", "a label is required: pass, fail or a score")
    if raw is None or isinstance(raw, bool):
        return raw, score
    text = str(raw).strip().lower()
    if text in _PASS:
        return True, score
    if text in _FAIL:
        return False, score
    value = _score(raw, bad, "label")
    return None, value


def _score(raw: Any, bad: BadRow, field: str) -> float | None:
    if raw is None:
        return None
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise bad(field, f"{raw!r} is not pass, fail or a number") from None
    if not math.isfinite(value):
        raise bad(field, f"{raw!r} is not a finite number")
    return value


def _required(row: Mapping[str, Any], field: str, bad: BadRow) -> str:
    if field not in row:
        raise bad(field, f"'{field}' is required (or give 'item_key')")
    return str(row[field]).strip()


def _number(row: Mapping[str, Any], field: str, default: int, bad: BadRow) -> int:
    raw = row.get(field, default)
    if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
        raise bad(field, f"{raw!r} is not a whole number")
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise bad(field, f"{raw!r} is not a whole number") from None
    if value < (1 if field == "turn" else 0):
        raise bad(field, f"{value} is out of range ({'turns count from 1' if field == 'turn' else 'at least 0'})")
    return value


def _when(raw: Any, bad: BadRow) -> datetime | None:
    if raw is None:
        return None
    try:
        return datetime.fromisoformat(str(raw))
    except ValueError:
        raise bad("labelled_at", f"{raw!r} is not an ISO 8601 time") from None


def _exported(label: Label) -> dict[str, Any]:
    verdict = None if label.passed is None else ("pass" if label.passed else "fail")
    return {
        "item_key": label.item_key,
        "metric": label.metric_name,
        "rubric_id": label.rubric_id,
        "run_id": label.run_id,
        "eval_set_id": label.eval_set_id,
        "eval_id": label.eval_id,
        "turn": None if label.turn is None else label.turn + 1,
        "label": verdict,
        "score": label.score,
        "labeller": label.labeller,
        "labelled_at": label.labelled_at.isoformat() if label.labelled_at else None,
        "note": label.note,
    }
