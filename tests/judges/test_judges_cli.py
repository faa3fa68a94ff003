"""`agent-eval labels import|export` and `agent-eval judges` through `agent_eval.cli.main`: the printed lines,
exit 2 with one line on stderr for a bad label file, and each judge identity's agreement with 30 hand-labelled
items against figures computed by hand (12 pass-pass, 3 pass-fail, 2 fail-pass, 13 fail-fail: kappa 2/3,
agreement 25/30)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from agent_eval.cli import main
from agent_eval.judges.agreement import UNKNOWN_JUDGE
from agent_eval.results.run_configs import identity_key
from agent_eval.store import get_engine
from tests.judges.stored_runs import (
    ADK_EXACT_JUDGE,
    AGENT_EVAL_JUDGE,
    RESPONSE,
    RUBRIC,
    JudgedCase,
    identities,
    judged,
    label_rows,
    rubric_judged,
    store_cases,
    turn,
)

HINT = "No labelled judged items yet: `agent-eval label RUN_ID` or `agent-eval labels import FILE` adds labels."
AGENT_EVAL_HEADER = f"{RESPONSE}  judge: gemini-2.5-flash, agent-eval (prompts 0123456789ab), 3 samples  (30 labelled)"
ADK_HEADER = f"{RESPONSE}  judge: gemini-2.5-flash, adk-exact (google-adk 1.18.0), 3 samples  (30 labelled)"
CONFUSION = "  human pass: judge pass 12, judge fail 3; human fail: judge pass 2, judge fail 13"

# (human, judge) per case c00..c29: 12 pass-pass, 3 pass-fail, 2 fail-pass, 13 fail-fail
HUMAN = [True] * 15 + [False] * 15
JUDGE = [True] * 12 + [False] * 3 + [True] * 2 + [False] * 13
IDS = [f"c{i:02d}" for i in range(30)]


@pytest.fixture
def db_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quiet_cli_env: None) -> str:
    """A fresh SQLite store; the CLI's home in tmp_path and no warm process."""
    monkeypatch.setenv("AGENT_EVAL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("AGENT_EVAL_WARM", "0")
    monkeypatch.delenv("AGENT_EVAL_LABELLER", raising=False)
    return f"sqlite:///{tmp_path / 'store.db'}"


def thirty_cases(judge: Sequence[bool] = JUDGE) -> list[JudgedCase]:
    """30 one-turn cases judged by final_response_match_v2 with these verdicts; c00..c05 have a split vote
    (samples 1, 1, 0: 2 of 3 agree), every other case 3 equal samples."""
    cases = []
    for index, (eval_id, passed) in enumerate(zip(IDS, judge, strict=True)):
        score = 1.0 if passed else 0.0
        samples = [1.0, 1.0, 0.0] if index < 6 else [score] * 3
        invocation = turn(f"question {index}?", f"answer {index}.")
        cases.append(JudgedCase(eval_id, [invocation], [judged(eval_id, [score], samples=[samples])]))
    return cases


def store(
    url: str, run_id: str, judge: Sequence[bool] = JUDGE, identity: dict[str, Any] | None = AGENT_EVAL_JUDGE, **kw: Any
) -> Engine:
    engine = get_engine(url)
    store_cases(
        engine,
        run_id,
        thirty_cases(judge),
        judges=None if identity is None else identities(identity, RESPONSE, RUBRIC),
        **kw,
    )
    return engine


def label_file(tmp_path: Path, ids: Sequence[str] = IDS, name: str = "labels.csv") -> Path:
    path = tmp_path / name
    lines = ["eval_id,metric,label"] + [
        f"{eval_id},{RESPONSE},{'pass' if HUMAN[IDS.index(eval_id)] else 'fail'}" for eval_id in ids
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def imported(capsys: pytest.CaptureFixture[str], url: str, path: Path, labeller: str = "ana") -> None:
    assert run(capsys, "labels", "import", str(path), "--labeller", labeller, "--db-url", url) == (
        0,
        f"Imported {len(path.read_text().splitlines()) - 1} labels from {path}\n",
        "",
    )


# ------------------------------------------------------------------------------------------ labels import


def test_labels_import_prints_how_many_were_imported(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    engine = store(db_url, "a" * 32)
    path = label_file(tmp_path)

    code, out, err = run(capsys, "labels", "import", str(path), "--labeller", "ana", "--db-url", db_url)

    assert (code, out, err) == (0, f"Imported 30 labels from {path}\n", "")
    rows = label_rows(engine)
    assert len(rows) == 30
    assert {r["labeller"] for r in rows} == {"ana"}
    assert sorted((r["eval_id"], r["passed"]) for r in rows) == list(zip(IDS, HUMAN, strict=True))


def test_one_label_is_said_in_the_singular_and_the_labeller_defaults_to_the_variable(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = store(db_url, "a" * 32)
    monkeypatch.setenv("AGENT_EVAL_LABELLER", "bo")
    path = label_file(tmp_path, IDS[:1])

    assert run(capsys, "labels", "import", str(path), "--db-url", db_url) == (
        0,
        f"Imported 1 label from {path}\n",
        "",
    )
    assert [(r["eval_id"], r["labeller"]) for r in label_rows(engine)] == [("c00", "bo")]


def test_a_bad_label_file_exits_2_with_one_line_naming_line_and_field_and_stores_nothing(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    engine = store(db_url, "a" * 32)
    path = tmp_path / "bad.csv"
    path.write_text(f"eval_id,metric,label\nc00,{RESPONSE},pass\nc01,{RESPONSE},maybe\n", encoding="utf-8")

    code, out, err = run(capsys, "labels", "import", str(path), "--labeller", "ana", "--db-url", db_url)

    assert (code, out) == (2, "")
    assert err == f"agent-eval: error: {path}: field 'label': line 3: 'maybe' is not pass, fail or a number\n"
    assert label_rows(engine) == []


@pytest.mark.parametrize(
    "bad_file",
    [
        ("missing.csv", None, "no such file"),
        ("labels.xlsx", "x", "unknown label file type '.xlsx': use .csv or .jsonl"),
        ("labels.jsonl", '{"eval_id": "c00", "metric": "m", "label": "pass"}\n{oops\n', "line 2: not JSON"),
        ("labels.csv", f"eval_id,metric,turn,label\nc00,{RESPONSE},0,pass\n", "field 'turn': line 2: 0 is out"),
        ("labels.csv", "eval_id,metric,label\nc00,nope,pass\n", "field 'eval_id': line 2: no stored run judged"),
    ],
)
def test_every_bad_file_exits_2_with_one_line(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], bad_file: tuple[str, str | None, str]
) -> None:
    name, text, message = bad_file
    engine = store(db_url, "a" * 32)
    path = tmp_path / name
    if text is not None:
        path.write_text(text, encoding="utf-8")

    code, out, err = run(capsys, "labels", "import", str(path), "--labeller", "ana", "--db-url", db_url)

    assert (code, out) == (2, "")
    assert err.startswith(f"agent-eval: error: {path}: {message}")
    assert err.count("\n") == 1
    assert label_rows(engine) == []


def test_labels_export_prints_how_many_were_written(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store(db_url, "a" * 32)
    imported(capsys, db_url, label_file(tmp_path))
    out_file = tmp_path / "out.jsonl"

    assert run(capsys, "labels", "export", str(out_file), "--db-url", db_url) == (
        0,
        f"Exported 30 labels to {out_file}\n",
        "",
    )
    assert len(out_file.read_text(encoding="utf-8").splitlines()) == 30
    assert run(capsys, "labels", "export", str(out_file), "--metric", RUBRIC, "--db-url", db_url)[1] == (
        f"Exported 0 labels to {out_file}\n"
    )
    assert out_file.read_text(encoding="utf-8") == ""


# ------------------------------------------------------------------------------------------------- judges


def test_judges_prints_kappa_agreement_and_the_confusion_of_30_labels(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store(db_url, "a" * 32)
    imported(capsys, db_url, label_file(tmp_path))

    code, out, err = run(capsys, "judges", "--db-url", db_url)
    _, as_json, _ = run(capsys, "judges", "--json", "--db-url", db_url)

    low, high = json.loads(as_json)[0]["binary"]["kappa_interval"]
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        AGENT_EVAL_HEADER,
        f"  kappa 0.67 [{low:.2f}, {high:.2f}]  agreement 83%  balanced accuracy 83%  true pass 80%  true fail 87%",
        CONFUSION,
        "  self-consistency over samples 93%",  # (6 * 2/3 + 24 * 1) / 30
    ]


def test_judges_json_gives_the_exact_figures(db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store(db_url, "a" * 32)
    imported(capsys, db_url, label_file(tmp_path))

    code, out, err = run(capsys, "judges", "--json", "--db-url", db_url)

    assert (code, err) == (0, "")
    [group] = json.loads(out)
    binary = group.pop("binary")
    low, high = binary.pop("kappa_interval")
    assert group == {
        "metric": RESPONSE,
        "rubric_id": None,
        "judge": AGENT_EVAL_JUDGE,
        "judge_key": identity_key(AGENT_EVAL_JUDGE),
        "judge_description": "gemini-2.5-flash, agent-eval (prompts 0123456789ab), 3 samples",
        "labels": 30,
        "scored": None,
        "self_consistency": pytest.approx(28 / 30),
    }
    assert binary == {
        "n": 30,
        "agreement": pytest.approx(25 / 30),
        "balanced_accuracy": pytest.approx((12 / 15 + 13 / 15) / 2),
        "kappa": pytest.approx(2 / 3),
        "true_pass_rate": pytest.approx(12 / 15),
        "true_fail_rate": pytest.approx(13 / 15),
        "confusion": {"pass_pass": 12, "pass_fail": 3, "fail_pass": 2, "fail_fail": 13},
        "insufficient": None,
    }
    assert -1.0 <= low < 2 / 3 < high <= 1.0


def test_fewer_than_20_labels_are_not_measured(db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store(db_url, "a" * 32)
    twelve = IDS[:8] + IDS[15:19]  # 8 human pass (judge pass), 2 human fail judge pass, 2 human fail judge fail
    imported(capsys, db_url, label_file(tmp_path, twelve))

    code, out, _ = run(capsys, "judges", "--db-url", db_url)
    _, as_json, _ = run(capsys, "judges", "--json", "--db-url", db_url)

    assert code == 0
    assert out.splitlines()[:3] == [
        AGENT_EVAL_HEADER.replace("(30 labelled)", "(12 labelled)"),
        "  agreement: not measured: 12 labels (at least 20 needed)",
        "  human pass: judge pass 8, judge fail 0; human fail: judge pass 2, judge fail 2",
    ]
    assert "kappa" not in out
    [group] = json.loads(as_json)
    assert group["binary"]["insufficient"] == "12 labels (at least 20 needed)"
    assert (group["binary"]["kappa"], group["binary"]["kappa_interval"], group["binary"]["agreement"]) == (
        None,
        None,
        None,
    )


def test_each_judge_identity_is_its_own_group(db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store(db_url, "a" * 32, minutes=0)
    # the same content judged by ADK's evaluators, which passed everything, and by a release without identities
    store(db_url, "b" * 32, [True] * 30, ADK_EXACT_JUDGE, minutes=10)
    store(db_url, "c" * 32, JUDGE, None, minutes=20)
    imported(capsys, db_url, label_file(tmp_path))

    code, out, _ = run(capsys, "judges", "--json", "--db-url", db_url)

    assert code == 0
    groups = json.loads(out)
    expected_keys = [*sorted([identity_key(AGENT_EVAL_JUDGE), identity_key(ADK_EXACT_JUDGE)]), "unknown"]
    assert [g["judge_key"] for g in groups] == expected_keys
    by_key = {g["judge_key"]: g for g in groups}
    agent_eval, adk, unknown = (
        by_key[identity_key(AGENT_EVAL_JUDGE)],
        by_key[identity_key(ADK_EXACT_JUDGE)],
        by_key["unknown"],
    )
    assert [g["labels"] for g in groups] == [30, 30, 30]
    assert agent_eval["binary"]["confusion"] == {"pass_pass": 12, "pass_fail": 3, "fail_pass": 2, "fail_fail": 13}
    assert agent_eval["binary"]["kappa"] == pytest.approx(2 / 3)
    assert adk["binary"]["confusion"] == {"pass_pass": 15, "pass_fail": 0, "fail_pass": 15, "fail_fail": 0}
    assert adk["binary"]["kappa"] == 0.0
    assert adk["judge"] == ADK_EXACT_JUDGE
    assert (unknown["judge"], unknown["judge_description"]) == (None, UNKNOWN_JUDGE)
    assert unknown["binary"]["confusion"] == agent_eval["binary"]["confusion"]

    text = run(capsys, "judges", "--db-url", db_url)[1]
    assert AGENT_EVAL_HEADER in text.splitlines()
    assert ADK_HEADER in text.splitlines()
    assert f"{RESPONSE}  judge: {UNKNOWN_JUDGE}  (30 labelled)" in text.splitlines()
    assert "  kappa 0.00 [0.00, 0.00]  agreement 50%  balanced accuracy 50%  true pass 100%  true fail 0%" in text


def test_a_run_judged_twice_by_one_identity_counts_each_runs_verdict(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store(db_url, "a" * 32, minutes=0)
    store(db_url, "b" * 32, minutes=10)
    imported(capsys, db_url, label_file(tmp_path))

    [group] = json.loads(run(capsys, "judges", "--json", "--db-url", db_url)[1])

    assert group["labels"] == 60
    assert group["binary"]["confusion"] == {"pass_pass": 24, "pass_fail": 6, "fail_pass": 4, "fail_fail": 26}


def test_the_latest_label_of_an_item_counts(db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store(db_url, "a" * 32)
    imported(capsys, db_url, label_file(tmp_path))
    later = tmp_path / "later.csv"
    later.write_text(f"eval_id,metric,label\nc15,{RESPONSE},pass\nc16,{RESPONSE},pass\n", encoding="utf-8")
    imported(capsys, db_url, later, labeller="bo")  # another person: the judge was right on c15 and c16

    [group] = json.loads(run(capsys, "judges", "--json", "--db-url", db_url)[1])

    assert group["labels"] == 30
    assert group["binary"]["confusion"] == {"pass_pass": 14, "pass_fail": 3, "fail_pass": 0, "fail_fail": 13}


def _with_rubric_labels(db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    engine = store(db_url, "a" * 32)
    rubric_cases = [
        JudgedCase(
            f"r{i}",
            [turn(f"rubric question {i}?", f"rubric answer {i}.")],
            [rubric_judged(f"r{i}", [{"names_room": float(i % 2)}])],
        )
        for i in range(5)
    ]
    store_cases(engine, "d" * 32, rubric_cases, judges=identities(AGENT_EVAL_JUDGE, RESPONSE, RUBRIC), minutes=5)
    imported(capsys, db_url, label_file(tmp_path))
    rubric_file = tmp_path / "rubrics.csv"
    rubric_file.write_text(
        "eval_id,metric,rubric_id,label\n" + "".join(f"r{i},{RUBRIC},names_room,pass\n" for i in range(5)),
        encoding="utf-8",
    )
    imported(capsys, db_url, rubric_file)


def test_metric_keeps_to_one_metric(db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _with_rubric_labels(db_url, tmp_path, capsys)

    every = run(capsys, "judges", "--db-url", db_url)[1].splitlines()
    rubric = run(capsys, "judges", "--metric", RUBRIC, "--db-url", db_url)[1].splitlines()
    response = json.loads(run(capsys, "judges", "--json", "--metric", RESPONSE, "--db-url", db_url)[1])

    assert [line for line in every if not line.startswith(" ")] == [
        AGENT_EVAL_HEADER,
        f"{RUBRIC}  judge: gemini-2.5-flash, agent-eval (prompts 0123456789ab), 3 samples  (5 labelled)",
    ]
    assert rubric == [
        f"{RUBRIC}  judge: gemini-2.5-flash, agent-eval (prompts 0123456789ab), 3 samples  (5 labelled)",
        "  agreement: not measured: 5 labels (at least 20 needed)",
        "  human pass: judge pass 2, judge fail 3; human fail: judge pass 0, judge fail 0",
    ]
    assert [(g["metric"], g["labels"]) for g in response] == [(RESPONSE, 30)]
    assert run(capsys, "judges", "--metric", "nope", "--db-url", db_url)[1] == HINT + "\n"


def test_no_labels_prints_the_hint(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    store(db_url, "a" * 32)

    assert run(capsys, "judges", "--db-url", db_url) == (0, HINT + "\n", "")
    assert run(capsys, "judges", "--json", "--db-url", db_url) == (0, "[]\n", "")


def test_a_rubric_metric_labelled_on_two_rubrics_also_gets_a_group_per_rubric(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    engine = get_engine(db_url)
    verdicts = [{"names_room": 1.0, "polite": 0.0}, {"names_room": 0.0, "polite": 0.0}]
    rubric_cases = [
        JudgedCase(f"r{i}", [turn(f"q{i}?", f"a{i}.")], [rubric_judged(f"r{i}", [verdicts[i]])]) for i in range(2)
    ]
    store_cases(engine, "d" * 32, rubric_cases, judges=identities(AGENT_EVAL_JUDGE, RUBRIC))
    path = tmp_path / "rubrics.csv"
    path.write_text(
        "eval_id,metric,rubric_id,label\n"
        f"r0,{RUBRIC},names_room,pass\nr0,{RUBRIC},polite,pass\nr1,{RUBRIC},names_room,fail\n",
        encoding="utf-8",
    )
    imported(capsys, db_url, path)

    groups = json.loads(run(capsys, "judges", "--json", "--db-url", db_url)[1])
    headers = [line for line in run(capsys, "judges", "--db-url", db_url)[1].splitlines() if not line[0].isspace()]

    assert [(g["rubric_id"], g["labels"], g["binary"]["confusion"]) for g in groups] == [
        (None, 3, {"pass_pass": 1, "pass_fail": 1, "fail_pass": 0, "fail_fail": 1}),
        ("names_room", 2, {"pass_pass": 1, "pass_fail": 0, "fail_pass": 0, "fail_fail": 1}),
        ("polite", 1, {"pass_pass": 0, "pass_fail": 1, "fail_pass": 0, "fail_fail": 0}),
    ]
    judge = "judge: gemini-2.5-flash, agent-eval (prompts 0123456789ab), 3 samples"
    assert headers == [
        f"{RUBRIC}  {judge}  (3 labelled)",
        f"{RUBRIC} / rubric names_room  {judge}  (2 labelled)",
        f"{RUBRIC} / rubric polite  {judge}  (1 labelled)",
    ]
