"""agent_eval.judges.labels_io on a real store (SQLite and PostgreSQL): labels imported from CSV and JSONL files
by item key or by where a run judged the item, the exact `judge_labels` rows they give, replacing a labeller's
own label, export and import again, and every bad row refused with one line naming the file, the line and the
field, nothing stored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from agent_eval.errors import EvalInputError
from agent_eval.judges.labels_io import EXPORT_COLUMNS, export_labels, import_labels
from agent_eval.results.judged_items import judged_items
from agent_eval.store import complete_run, get_engine
from agent_eval.store.labels import delete_label, judged_items_of_run, labels
from agent_eval.store.models import JudgedItemRecord
from tests.judges.stored_runs import (
    RESPONSE,
    RUBRIC,
    RUBRIC_TEXTS,
    SET,
    JudgedCase,
    judged,
    judged_report,
    label_rows,
    rubric_judged,
    store_cases,
    stored_key,
    turn,
)
from tests.store.conftest import postgres_url  # noqa: F401  (fixture)

RUN_OLD = "0a1b2c3d" + "0" * 24
RUN_NEW = "9f8e7d6c" + "1" * 24
TWIN = "0a1b2c3e" + "2" * 24  # shares the prefix 0a1b2c with RUN_OLD
LAMP = ("set_device_info", {"device_id": "lamp", "updates": {"status": "ON"}})
OFFICE = ("get_temperature", {"location": "Office"})
EXPECTED = [
    turn("turn on the lamp", "The lamp is on.", [LAMP], turn_id="t1"),
    turn("how warm is the office?", "It is 22 degrees in the Office.", [OFFICE], turn_id="t2"),
]
ACTUAL = [EXPECTED[0], turn("how warm is the office?", "22.", [OFFICE], turn_id="t2")]
KITCHEN = [turn("is the kitchen light on?", "Yes, the kitchen light is on.", [("get_device", {"id": "k"})])]


def cases(scores: tuple[float, float] = (1.0, 0.0)) -> list[JudgedCase]:
    """`two_turns` (final_response_match_v2 on 2 turns) and `kitchen` (that metric and a 2-rubric metric)."""
    return [
        JudgedCase("two_turns", EXPECTED, [judged("two_turns", list(scores), samples=[[1.0, None], [0.0]])], ACTUAL),
        JudgedCase(
            "kitchen",
            KITCHEN,
            [judged("kitchen", [0.0]), rubric_judged("kitchen", [{"names_room": 1.0, "polite": 0.0}])],
        ),
    ]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Engine:
    """A fresh store on SQLite, and (marker `postgres`) on the local PostgreSQL server, with two runs of the
    same content: RUN_OLD (12:00) and RUN_NEW (13:00)."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'store.db'}"
    else:
        url = str(request.getfixturevalue("postgres_url"))
    engine = get_engine(url)
    store_cases(engine, RUN_OLD, cases())
    store_cases(engine, RUN_NEW, cases((0.0, 1.0)), minutes=60)
    return engine


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def row(key: str, **values: Any) -> dict[str, Any]:
    """An expected `judge_labels` row (but its id and time)."""
    base = {
        "item_key": key,
        "metric_name": RESPONSE,
        "rubric_id": None,
        "passed": None,
        "score": None,
        "labeller": "ana",
        "note": None,
        "run_id": RUN_NEW,
        "eval_set_id": SET,
        "eval_id": "two_turns",
        "turn": 0,
    }
    return {**base, **values}


def ordered(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: (r["item_key"], r["labeller"]))


# ------------------------------------------------------------------------------------ judged items stored


def test_a_runs_judged_items_are_stored_with_its_metric_results(engine: Engine) -> None:
    stored = [
        (c.eval_id, i.metric_name, i.turn, i.rubric_id, i.item_key, i.judge_score, i.judge_passed, i.samples)
        for i, c in judged_items_of_run(RUN_OLD, engine)
    ]
    report_cases = judged_report(RUN_OLD, cases()).cases
    expected = [
        (i.eval_id, i.metric_name, i.turn, i.rubric_id, i.key, i.judge_score, i.judge_passed, i.samples)
        for case in report_cases
        for i in judged_items(case, RUBRIC_TEXTS)
    ]

    assert stored == expected
    assert [(s[0], s[1], s[2], s[3], s[5], s[6], s[7]) for s in stored] == [
        ("two_turns", RESPONSE, 0, None, 1.0, True, [1.0, None]),
        ("two_turns", RESPONSE, 1, None, 0.0, False, [0.0]),
        ("kitchen", RESPONSE, 0, None, 0.0, False, []),
        ("kitchen", RUBRIC, 0, "names_room", 1.0, True, []),
        ("kitchen", RUBRIC, 0, "polite", 0.0, False, []),
    ]
    # the same content judged in the newer run has the same keys
    assert [s[4] for s in stored] == [i.item_key for i, _ in judged_items_of_run(RUN_NEW, engine)]


def test_completing_a_run_again_replaces_its_judged_items(engine: Engine) -> None:
    report = judged_report(RUN_OLD, cases())
    complete_run(report, engine)

    with Session(engine) as session:
        count = len(session.exec(select(JudgedItemRecord).where(JudgedItemRecord.run_id == RUN_OLD)).all())
    assert count == 5


# ------------------------------------------------------------------------------------------------ import


def test_csv_rows_named_by_run_id_prefix_case_metric_turn_and_rubric(engine: Engine, tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "labels.csv",
        "run_id,eval_id,metric,turn,rubric_id,label,note\n"
        f"0a1b2c,two_turns,{RESPONSE},2,,fail,\"too short, says only '22.'\"\n"
        f"0A1B2C3D,kitchen,{RUBRIC},1,polite,pass,\n"
        f"{RUN_OLD},kitchen,{RESPONSE},,,yes,ok ✓\n",
    )

    assert import_labels(path, "ana", engine) == 3

    assert label_rows(engine) == ordered(
        [
            row(
                stored_key(engine, RUN_OLD, "two_turns", RESPONSE, turn=1),
                passed=False,
                note="too short, says only '22.'",
                run_id=RUN_OLD,
                turn=1,
            ),
            row(
                stored_key(engine, RUN_OLD, "kitchen", RUBRIC, rubric_id="polite"),
                metric_name=RUBRIC,
                rubric_id="polite",
                passed=True,
                run_id=RUN_OLD,
                eval_id="kitchen",
            ),
            row(
                stored_key(engine, RUN_OLD, "kitchen", RESPONSE),
                passed=True,
                note="ok ✓",
                run_id=RUN_OLD,
                eval_id="kitchen",
            ),
        ]
    )


def test_a_row_named_by_item_key_labels_the_newest_run_that_judged_it(engine: Engine, tmp_path: Path) -> None:
    key = stored_key(engine, RUN_OLD, "two_turns", RESPONSE, turn=1)
    path = write(tmp_path, "labels.csv", f"item_key,label\n{key},PASS\n")

    assert import_labels(path, "ana", engine) == 1

    assert label_rows(engine) == [row(key, passed=True, turn=1)]


def test_without_a_run_id_the_newest_run_that_judged_the_item_is_named(engine: Engine, tmp_path: Path) -> None:
    path = write(tmp_path, "labels.csv", f"eval_id,metric,label\ntwo_turns,{RESPONSE},no\n")

    import_labels(path, "ana", engine)

    assert label_rows(engine) == [row(stored_key(engine, RUN_NEW, "two_turns", RESPONSE), passed=False)]


def test_a_score_label_and_a_score_column(engine: Engine, tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "labels.csv",
        f"eval_id,metric,turn,label,score\ntwo_turns,{RESPONSE},1,0.8,\ntwo_turns,{RESPONSE},2,pass,0.25\n",
    )

    import_labels(path, "ana", engine)

    assert label_rows(engine) == ordered(
        [
            row(stored_key(engine, RUN_NEW, "two_turns", RESPONSE), score=0.8),
            row(stored_key(engine, RUN_NEW, "two_turns", RESPONSE, turn=1), passed=True, score=0.25, turn=1),
        ]
    )


PASS_SPELLINGS = ["pass", "Passed", "true", "YES", "y", "1"]
FAIL_SPELLINGS = ["fail", "failed", "False", "no", "N", "0"]
SPELLINGS = [*((s, True) for s in PASS_SPELLINGS), *((s, False) for s in FAIL_SPELLINGS)]


def test_every_spelling_of_pass_and_fail(engine: Engine, tmp_path: Path) -> None:
    seen: list[tuple[bool | None, float | None]] = []
    for label, _ in SPELLINGS:
        path = write(tmp_path, "labels.csv", f"eval_id,metric,label\nkitchen,{RESPONSE}, {label} \n")
        import_labels(path, "ana", engine)
        seen.extend((r["passed"], r["score"]) for r in label_rows(engine))

    assert seen == [(passed, None) for _, passed in SPELLINGS]


def test_the_same_labeller_replaces_their_label_another_adds_one(engine: Engine, tmp_path: Path) -> None:
    key = stored_key(engine, RUN_NEW, "kitchen", RESPONSE)
    first = write(tmp_path, "first.csv", f"eval_id,metric,label,note\nkitchen,{RESPONSE},pass,first look\n")
    second = write(tmp_path, "second.csv", f"eval_id,metric,label\nkitchen,{RESPONSE},fail\n")

    import_labels(first, "ana", engine)
    import_labels(second, "ana", engine)
    assert label_rows(engine) == [row(key, passed=False, eval_id="kitchen")]  # replaced, note gone too

    import_labels(first, "bo", engine)
    assert label_rows(engine) == [
        row(key, passed=False, eval_id="kitchen"),
        row(key, passed=True, eval_id="kitchen", labeller="bo", note="first look"),
    ]


def test_a_labeller_column_wins_over_the_commands_labeller(engine: Engine, tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "labels.csv",
        f"eval_id,metric,label,labeller\nkitchen,{RESPONSE},pass,cy\nkitchen,{RESPONSE},fail,\n",
    )

    assert import_labels(path, "ana", engine) == 2

    key = stored_key(engine, RUN_NEW, "kitchen", RESPONSE)
    assert label_rows(engine) == [
        row(key, passed=False, eval_id="kitchen"),
        row(key, passed=True, eval_id="kitchen", labeller="cy"),
    ]


def test_one_item_twice_in_a_file_keeps_the_last_row(engine: Engine, tmp_path: Path) -> None:
    path = write(tmp_path, "labels.csv", f"eval_id,metric,label\nkitchen,{RESPONSE},pass\nkitchen,{RESPONSE},fail\n")

    assert import_labels(path, "ana", engine) == 2

    assert label_rows(engine) == [
        row(stored_key(engine, RUN_NEW, "kitchen", RESPONSE), passed=False, eval_id="kitchen")
    ]


def test_a_csv_with_a_byte_order_mark_and_blank_lines(engine: Engine, tmp_path: Path) -> None:
    path = tmp_path / "excel.csv"
    path.write_bytes(f"\ufeffeval_id,metric,label\r\n\r\nkitchen,{RESPONSE},pass\r\n".encode())

    assert import_labels(path, "ana", engine) == 1
    assert [r["passed"] for r in label_rows(engine)] == [True]


def test_jsonl_rows(engine: Engine, tmp_path: Path) -> None:
    lines = [
        {"run_id": "9f8e7d", "eval_id": "two_turns", "metric": RESPONSE, "turn": 2, "label": True, "note": "fine"},
        {"eval_id": "kitchen", "metric": RUBRIC, "rubric_id": "names_room", "label": 0.75, "run_index": 0},
        {"eval_set_id": SET, "eval_id": "kitchen", "metric": RESPONSE, "label": "fail", "labeller": "bo"},
    ]
    path = write(tmp_path, "labels.jsonl", "\n".join(json.dumps(line) for line in lines[:2]) + "\n\n")
    path.write_text(path.read_text() + json.dumps(lines[2]) + "\n")

    assert import_labels(path, "ana", engine) == 3

    assert label_rows(engine) == ordered(
        [
            row(stored_key(engine, RUN_NEW, "two_turns", RESPONSE, turn=1), passed=True, note="fine", turn=1),
            row(
                stored_key(engine, RUN_NEW, "kitchen", RUBRIC, rubric_id="names_room"),
                metric_name=RUBRIC,
                rubric_id="names_room",
                score=0.75,
                eval_id="kitchen",
            ),
            row(stored_key(engine, RUN_NEW, "kitchen", RESPONSE), passed=False, eval_id="kitchen", labeller="bo"),
        ]
    )


def test_an_ndjson_file_is_json_lines(engine: Engine, tmp_path: Path) -> None:
    path = write(tmp_path, "labels.NDJSON", json.dumps({"eval_id": "kitchen", "metric": RESPONSE, "label": "no"}))

    assert import_labels(path, "ana", engine) == 1
    assert [r["passed"] for r in label_rows(engine)] == [False]


# ------------------------------------------------------------------------------------------------ export


def _some_labels(engine: Engine, tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "some.csv",
        "eval_id,metric,turn,rubric_id,label,score,labeller,note\n"
        f'two_turns,{RESPONSE},2,,fail,,ana,"says ""22."", nothing else"\n'
        f"two_turns,{RESPONSE},2,,pass,,bo,\n"
        f"two_turns,{RESPONSE},1,,0.9,,ana,ünïcödé ✓\n"
        f"kitchen,{RUBRIC},1,polite,pass,0.5,ana,\n",
    )
    assert import_labels(path, "ana", engine) == 4


@pytest.mark.parametrize("name", ["exported.csv", "exported.jsonl"])
def test_exported_labels_import_again_unchanged(engine: Engine, tmp_path: Path, name: str) -> None:
    _some_labels(engine, tmp_path)
    before = label_rows(engine)
    times = sorted(str(label.labelled_at) for label in labels(engine))
    exported = tmp_path / name

    assert export_labels(exported, engine) == 4
    for label in labels(engine):
        assert delete_label(label.item_key, label.labeller, engine)
    assert label_rows(engine) == []
    assert import_labels(exported, "someone-else", engine) == 4

    assert label_rows(engine) == before
    assert sorted(str(label.labelled_at) for label in labels(engine)) == times


def test_the_exported_csv_has_one_row_per_label_with_turns_from_one(engine: Engine, tmp_path: Path) -> None:
    _some_labels(engine, tmp_path)
    exported = tmp_path / "out.csv"

    export_labels(exported, engine)

    lines = exported.read_text(encoding="utf-8").splitlines()
    assert lines[0] == ",".join(EXPORT_COLUMNS)
    rows = [dict(zip(EXPORT_COLUMNS, line.split(","), strict=False)) for line in lines[1:]]
    by_who = {(r["labeller"], r["turn"], r["rubric_id"]): (r["label"], r["score"], r["run_id"]) for r in rows}
    assert by_who == {
        ("ana", "2", ""): ("fail", "", RUN_NEW),
        ("bo", "2", ""): ("pass", "", RUN_NEW),
        ("ana", "1", ""): ("", "0.9", RUN_NEW),
        ("ana", "1", "polite"): ("pass", "0.5", RUN_NEW),
    }
    assert '"says ""22."", nothing else"' in lines[1] + lines[2] + lines[3] + lines[4]


def test_export_of_one_metric(engine: Engine, tmp_path: Path) -> None:
    _some_labels(engine, tmp_path)
    exported = tmp_path / "rubric.jsonl"

    assert export_labels(exported, engine, metric=RUBRIC) == 1

    [line] = exported.read_text(encoding="utf-8").splitlines()
    data = json.loads(line)
    assert {k: data[k] for k in ("metric", "rubric_id", "eval_id", "turn", "label", "score", "note")} == {
        "metric": RUBRIC,
        "rubric_id": "polite",
        "eval_id": "kitchen",
        "turn": 1,
        "label": "pass",
        "score": 0.5,
        "note": None,
    }
    assert export_labels(tmp_path / "none.csv", engine, metric="nope") == 0


# -------------------------------------------------------------------------------------------- bad rows

GOOD_CSV = f"run_id,eval_id,metric,turn,rubric_id,label\n,kitchen,{RESPONSE},1,,fail\n"
"""A good first row (line 2): relabels `kitchen` fail, which must not happen when a later row is bad."""


def _csv_after_good(bad: str) -> str:
    return GOOD_CSV + "\n" + bad + "\n"  # the bad row is on line 4 (line 3 is blank)


@pytest.mark.parametrize(
    ("bad", "field", "message"),
    [
        (
            ",kitchen,nope_metric,1,,pass",
            "eval_id",
            "no stored run judged metric 'nope_metric', case 'kitchen', turn 1",
        ),
        (f",nope_case,{RESPONSE},1,,pass", "eval_id", f"no stored run judged metric '{RESPONSE}', case 'nope_case'"),
        (
            f",two_turns,{RESPONSE},3,,pass",
            "eval_id",
            f"no stored run judged metric '{RESPONSE}', case 'two_turns', turn 3",
        ),
        (f",kitchen,{RUBRIC},1,rude,pass", "eval_id", "rubric 'rude'"),
        (f",kitchen,{RUBRIC},1,,pass", "eval_id", f"no stored run judged metric '{RUBRIC}', case 'kitchen', turn 1"),
        (f",kitchen,{RESPONSE},1,,maybe", "label", "'maybe' is not pass, fail or a number"),
        (f",kitchen,{RESPONSE},1,,", "label", "a label is required: pass, fail or a score"),
        (f",kitchen,{RESPONSE},0,,pass", "turn", "0 is out of range (turns count from 1)"),
        (f",kitchen,{RESPONSE},-1,,pass", "turn", "-1 is out of range (turns count from 1)"),
        (f",kitchen,{RESPONSE},two,,pass", "turn", "'two' is not a whole number"),
        (f",,{RESPONSE},1,,pass", "eval_id", "'eval_id' is required (or give 'item_key')"),
        (",kitchen,,1,,pass", "metric", "'metric' is required (or give 'item_key')"),
        (f"abcdef99,kitchen,{RESPONSE},1,,pass", "run_id", "no run 'abcdef99' in "),
        (f"not-a-run,kitchen,{RESPONSE},1,,pass", "run_id", "no run 'not-a-run' in "),
    ],
)
def test_a_bad_csv_row_is_one_line_naming_file_line_and_field_and_nothing_is_stored(
    engine: Engine, tmp_path: Path, bad: str, field: str, message: str
) -> None:
    _a_pass_label_by_ana(engine, tmp_path)
    before = label_rows(engine)
    path = write(tmp_path, "labels.csv", _csv_after_good(bad))

    with pytest.raises(EvalInputError) as raised:
        import_labels(path, "ana", engine)

    line = raised.value.one_line()
    assert line.startswith(f"{path}: field '{field}': line 4: ")
    assert message in line
    assert "\n" not in line
    assert label_rows(engine) == before


def _a_pass_label_by_ana(engine: Engine, tmp_path: Path) -> None:
    path = write(tmp_path, "earlier.csv", f"eval_id,metric,label\nkitchen,{RESPONSE},pass\n")
    import_labels(path, "ana", engine)
    assert [r["passed"] for r in label_rows(engine)] == [True]


@pytest.mark.parametrize(
    ("bad", "field", "message"),
    [
        ({"item_key": "0" * 64, "label": "pass"}, "item_key", f"no judged item has the key '{'0' * 64}'"),
        ({"eval_id": "kitchen", "metric": RESPONSE, "label": [1]}, "label", "[1] is not pass, fail or a number"),
        ({"eval_id": "kitchen", "metric": RESPONSE, "label": "pass", "score": "high"}, "score", "'high' is not pass"),
        ({"eval_id": "kitchen", "metric": RESPONSE, "turn": "1.5", "label": "pass"}, "turn", "'1.5' is not"),
        ({"eval_id": "kitchen", "metric": RESPONSE, "run_index": -1, "label": "pass"}, "run_index", "at least 0"),
        (
            {"eval_id": "kitchen", "metric": RESPONSE, "label": "pass", "labelled_at": "yesterday"},
            "labelled_at",
            "'yesterday' is not an ISO 8601 time",
        ),
    ],
)
def test_a_bad_jsonl_row_is_one_line_naming_file_line_and_field_and_nothing_is_stored(
    engine: Engine, tmp_path: Path, bad: dict[str, Any], field: str, message: str
) -> None:
    _a_pass_label_by_ana(engine, tmp_path)
    before = label_rows(engine)
    good = {"eval_id": "kitchen", "metric": RESPONSE, "label": "fail"}
    path = write(tmp_path, "labels.jsonl", f"{json.dumps(good)}\n\n{json.dumps(bad)}\n")

    with pytest.raises(EvalInputError) as raised:
        import_labels(path, "ana", engine)

    line = raised.value.one_line()
    assert line.startswith(f"{path}: field '{field}': line 3: ")
    assert message in line
    assert label_rows(engine) == before


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"eval_id": "kitchen", "metric": "m", "label": "pass"\n', "line 2: not JSON (Expecting ',' delimiter)"),
        ("[1, 2]\n", "line 2: a label must be a JSON object"),
        ("pass\n", "line 2: not JSON (Expecting value)"),
    ],
)
def test_a_line_that_is_no_json_object_names_the_file_and_line(
    engine: Engine, tmp_path: Path, text: str, message: str
) -> None:
    good = json.dumps({"eval_id": "kitchen", "metric": RESPONSE, "label": "fail"})
    path = write(tmp_path, "labels.jsonl", f"{good}\n{text}")

    with pytest.raises(EvalInputError) as raised:
        import_labels(path, "ana", engine)

    assert raised.value.one_line() == f"{path}: {message}"
    assert label_rows(engine) == []


def test_an_unknown_extension_and_a_missing_file(engine: Engine, tmp_path: Path) -> None:
    text = write(tmp_path, "labels.txt", GOOD_CSV)
    bare = write(tmp_path, "labels", GOOD_CSV)
    missing = tmp_path / "missing.csv"

    for path, message in [
        (text, "unknown label file type '.txt': use .csv or .jsonl"),
        (bare, "unknown label file type '(none)': use .csv or .jsonl"),
        (missing, "no such file"),
        (tmp_path, "no such file"),  # a folder
    ]:
        with pytest.raises(EvalInputError) as raised:
            import_labels(path, "ana", engine)
        assert raised.value.one_line() == f"{path}: {message}"
    assert label_rows(engine) == []


@pytest.mark.parametrize(
    ("prefix", "message"),
    [("0a1b2c", "run id prefix '0a1b2c' is ambiguous"), ("0a1b", "run id prefix '0a1b' is too short")],
)
def test_an_ambiguous_or_too_short_run_id_prefix_names_file_line_and_field(
    engine: Engine, tmp_path: Path, prefix: str, message: str
) -> None:
    store_cases(engine, TWIN, cases(), minutes=-60)
    path = write(tmp_path, "labels.csv", _csv_after_good(f"{prefix},kitchen,{RESPONSE},1,,pass"))

    with pytest.raises(EvalInputError) as raised:
        import_labels(path, "ana", engine)

    assert label_rows(engine) == []
    line = raised.value.one_line()
    assert line.startswith(f"{path}: field 'run_id': line 4: ")
    assert message in line


@pytest.mark.parametrize("label", ["nan", "inf", "-Infinity"])
def test_a_score_that_is_not_finite_is_a_bad_row(engine: Engine, tmp_path: Path, label: str) -> None:
    path = write(tmp_path, "labels.csv", _csv_after_good(f",kitchen,{RESPONSE},1,,{label}"))

    with pytest.raises(EvalInputError) as raised:
        import_labels(path, "ana", engine)

    assert raised.value.one_line().startswith(f"{path}: field 'label': line 4: ")
    assert label_rows(engine) == []


def test_a_labeller_too_long_is_a_bad_row(engine: Engine, tmp_path: Path) -> None:
    path = write(tmp_path, "labels.csv", f"eval_id,metric,label,labeller\nkitchen,{RESPONSE},pass,{'x' * 300}\n")

    with pytest.raises(EvalInputError) as raised:
        import_labels(path, "ana", engine)

    assert raised.value.one_line().startswith(f"{path}: field 'labeller': line 2: ")


@pytest.mark.parametrize("value", [1.5, True])
def test_a_json_turn_that_is_not_a_whole_number_is_a_bad_row(engine: Engine, tmp_path: Path, value: object) -> None:
    bad = {"eval_id": "kitchen", "metric": RESPONSE, "turn": value, "label": "pass"}
    path = write(tmp_path, "labels.jsonl", json.dumps(bad) + "\n")

    with pytest.raises(EvalInputError) as raised:
        import_labels(path, "ana", engine)

    assert raised.value.one_line().startswith(f"{path}: field 'turn': line 1: ")
    assert label_rows(engine) == []
