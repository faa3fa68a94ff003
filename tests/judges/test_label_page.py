"""The labelling page (`agent_eval.judges.page`, issue 30): its items on a stored run, its HTTP API through the
real server (SQLite and PostgreSQL), clean stops on Ctrl-C and SIGTERM, and the page itself in headless Chromium,
whose key presses and clicks are read back from the store.

The run (`judged_report`): eval set `home`, four case runs in this order: `lamp` (two turns, judged by
`final_response_match_v2`: valid then invalid), `broken` (the agent failed: nothing judged), `xss` (its answer holds
markup and a `<script>`; judged valid) and `tone` (judged invalid, and two rubrics: `concise` yes, `polite` no).
`response_match_score` is scored on every case but not judged. So six judged items, in this order:

    0 lamp  final turn 1 pass    1 lamp  final turn 2 fail    2 xss   final turn 1 pass
    3 tone  final turn 1 fail    4 tone  rubric concise pass  5 tone  rubric polite fail
"""

from __future__ import annotations

import html
import json
import re
import signal
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.engine import Engine
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route

from agent_eval.judges.page import labelling_app, labelling_items, labelling_server, serving
from agent_eval.results.aggregate import build_report, case_results
from agent_eval.results.judged_items import judged_items
from agent_eval.results.model import InvocationScore, MetricResult, RunReport
from agent_eval.schema import AgentRun, EvalCase, EvalConfig, EvalSet, EvalStatus, Invocation, RubricScore
from agent_eval.store import complete_run, get_engine, record_case_results, start_run
from agent_eval.store.labels import (
    Label,
    judged_items_of_run,
    labelled_pairs,
    labels,
    rubric_texts_by_eval_set,
    save_labels,
)
from tests.render.test_html import chromium_path, run_chromium
from tests.store.builders import run_start

RUN_ID = "0123456789abcdef0123456789abcdef"
FINAL = "final_response_match_v2"
RUBRIC = "rubric_based_final_response_quality_v1"
RESPONSE = "response_match_score"
RUBRICS = {"concise": "The answer is one sentence.", "polite": "The answer thanks the user."}
SCRIPT_ANSWER = "Done <b>now</b>. <script>document.title = 'pwned'</script><img src=x onerror=\"document.title='x'\">"
JUDGE = "gemini-2.5-flash"
CONFIG = EvalConfig.model_validate(
    {
        "criteria": {
            FINAL: {"threshold": 0.5, "judge_model_options": {"judge_model": JUDGE, "num_samples": 3}},
            RUBRIC: {
                "threshold": 0.5,
                "rubrics": [
                    {"rubric_id": rubric_id, "rubric_content": {"text_property": text}}
                    for rubric_id, text in RUBRICS.items()
                ],
            },
            RESPONSE: 0.8,
        }
    }
)
STARTED = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
PASSED, FAILED, NOT_EVALUATED = EvalStatus.PASSED, EvalStatus.FAILED, EvalStatus.NOT_EVALUATED
LABELLER = "ada"
PROBE_TIMEOUT_SECONDS = 30


# ------------------------------------------------------------------------------------------------- the run
Call = tuple[str, dict[str, Any]]


def turn(user: str, answer: str, calls: Sequence[Call] = (), turn_id: str = "t1") -> Invocation:
    """One turn: the user's text, the agent's answer and its tool calls."""
    return Invocation.model_validate(
        {
            "invocation_id": turn_id,
            "user_content": {"role": "user", "parts": [{"text": user}]},
            "final_response": {"role": "model", "parts": [{"text": answer}]},
            "intermediate_data": {"tool_uses": [{"name": name, "args": args} for name, args in calls]},
        }
    )


def sample(score: float | None, rationale: str) -> dict[str, Any]:
    """One judge sample as agent-eval's voting records it (an unusable one: an error)."""
    if score is None:
        return {"error": rationale}
    return {"score": score, "label": "valid" if score == 1.0 else "invalid", "rationale": rationale}


def final_result(eval_id: str, turns: list[tuple[float, list[dict[str, Any]], str]]) -> MetricResult:
    """`final_response_match_v2` judged turn by turn: (score, samples, explanation) per turn."""
    score = sum(s for s, _, _ in turns) / len(turns)
    return MetricResult(
        metric_name=FINAL,
        eval_set_id="home",
        eval_id=eval_id,
        score=score,
        status=PASSED if score >= 0.5 else FAILED,
        threshold=0.5,
        per_invocation=[
            InvocationScore(score=s, status=PASSED if s >= 0.5 else FAILED, explanation=why) for s, _, why in turns
        ],
        details={
            "judge_model": JUDGE,
            "judge_mode": "agent-eval",
            "num_samples": 3,
            "invocations": [{"samples": samples, "agreement": 1.0} for _, samples, _ in turns],
        },
    )


def rubric_result(eval_id: str, verdicts: dict[str, tuple[float, str, list[dict[str, Any]]]]) -> MetricResult:
    """The rubric metric on one turn: per rubric id, (score, rationale, samples)."""
    score = sum(s for s, _, _ in verdicts.values()) / len(verdicts)
    rubric_scores = [RubricScore(rubric_id=i, score=s, rationale=why) for i, (s, why, _) in verdicts.items()]
    return MetricResult(
        metric_name=RUBRIC,
        eval_set_id="home",
        eval_id=eval_id,
        score=score,
        status=PASSED if score >= 0.5 else FAILED,
        threshold=0.5,
        per_invocation=[InvocationScore(score=score, status=PASSED, rubric_scores=rubric_scores)],
        details={
            "judge_model": JUDGE,
            "invocations": [{"rubrics": {i: {"samples": samples} for i, (_, _, samples) in verdicts.items()}}],
        },
    )


def response_result(eval_id: str, score: float | None) -> MetricResult:
    """`response_match_score`: not judged (no `judge_model`)."""
    status = NOT_EVALUATED if score is None else (PASSED if score >= 0.8 else FAILED)
    per_invocation = [] if score is None else [InvocationScore(score=score, status=status)]
    return MetricResult(
        metric_name=RESPONSE,
        eval_set_id="home",
        eval_id=eval_id,
        score=score,
        status=status,
        threshold=0.8,
        per_invocation=per_invocation,
    )


LAMP_CALL = ("set_device_info", {"device_id": "lamp", "updates": {"status": "ON"}})
CASES: list[tuple[EvalCase, AgentRun, list[MetricResult]]] = [
    (
        EvalCase(
            eval_id="lamp",
            conversation=[
                turn("turn on the lamp", "The lamp is on.", [LAMP_CALL], "t1"),
                turn("how warm is it?", "It is 22 degrees.", [("get_temperature", {"location": "Office"})], "t2"),
            ],
        ),
        AgentRun(
            eval_set_id="home",
            eval_id="lamp",
            invocations=[
                turn("turn on the lamp", "Lamp on.", [LAMP_CALL], "t1"),
                turn("how warm is it?", "No idea.", [], "t2"),
            ],
        ),
        [
            final_result(
                "lamp",
                [
                    (1.0, [sample(1.0, "same meaning"), sample(1.0, "equivalent"), sample(0.0, "terse")], "valid"),
                    (0.0, [sample(0.0, "no temperature"), sample(0.0, "wrong"), sample(None, "no JSON")], "invalid"),
                ],
            ),
            response_result("lamp", 0.4),
        ],
    ),
    (
        EvalCase(eval_id="broken", conversation=[turn("boom", "Sure.")]),
        AgentRun(eval_set_id="home", eval_id="broken", invocations=[], error="ValueError: nope"),
        [response_result("broken", None)],
    ),
    (
        EvalCase(eval_id="xss", conversation=[turn("say <b>hi</b>", "Done now.")]),
        AgentRun(eval_set_id="home", eval_id="xss", invocations=[turn("say <b>hi</b>", SCRIPT_ANSWER)]),
        [final_result("xss", [(1.0, [sample(1.0, "<i>fine</i>")], "valid: <i>fine</i>")]), response_result("xss", 1.0)],
    ),
    (
        EvalCase(eval_id="tone", conversation=[turn("thanks", "You are welcome! Thank you for asking.")]),
        AgentRun(eval_set_id="home", eval_id="tone", invocations=[turn("thanks", "ok")]),
        [
            final_result("tone", [(0.0, [sample(0.0, "curt")], "invalid: curt")]),
            rubric_result(
                "tone",
                {
                    "concise": (1.0, "one word", [sample(1.0, "one word"), sample(1.0, "short")]),
                    "polite": (0.0, "no thanks", [sample(0.0, "no thanks"), sample(1.0, "fine")]),
                },
            ),
            response_result("tone", 0.1),
        ],
    ),
]
EXPECTED = [
    ("lamp", FINAL, 0, None, True),
    ("lamp", FINAL, 1, None, False),
    ("xss", FINAL, 0, None, True),
    ("tone", FINAL, 0, None, False),
    ("tone", RUBRIC, 0, "concise", True),
    ("tone", RUBRIC, 0, "polite", False),
]
"""(case, metric, turn, rubric id, judge passed) of each judged item, in page order."""


def judged_report(run_id: str = RUN_ID) -> RunReport:
    """The run of the module docstring."""
    return build_report(
        run_id=run_id,
        runs=[(case, run) for case, run, _ in CASES],
        metric_results=[result for _, _, results in CASES for result in results],
        config=CONFIG,
        eval_set_ids=["home"],
        agent_reference="pkg.bot:agent",
        agent_fingerprint="abc123",
        num_runs=1,
        started_at=STARTED,
        completed_at=STARTED + timedelta(seconds=3),
    )


def home_set() -> EvalSet:
    return EvalSet(eval_set_id="home", eval_cases=[case for case, _, _ in CASES])


def store_run(report: RunReport, engine: Engine, eval_set: EvalSet) -> str:
    """Store a finished run as the flow does: `start_run` with its eval set, then `complete_run`."""
    start_run(run_start(report).model_copy(update={"git_commit": None}), [eval_set], engine)
    return complete_run(report, engine)


def stored_engine(folder: Path) -> Engine:
    """A SQLite store in `folder` holding the judged run."""
    engine = get_engine(f"sqlite:///{folder / 'store.db'}")
    store_run(judged_report(), engine, home_set())
    return engine


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    """A SQLite store holding the judged run."""
    return stored_engine(tmp_path)


def keys_of(report: RunReport) -> list[str]:
    rubric_texts = rubric_texts_by_eval_set(report.config, report.eval_set_ids)
    return [item.key for case in report.cases for item in judged_items(case, rubric_texts.get(case.eval_set_id))]


def rows(engine: Engine) -> dict[str, Label]:
    """The stored labels by item key."""
    return {label.item_key: label for label in labels(engine)}


# ----------------------------------------------------------------------------------------- labelling_items
def test_labelling_items_are_every_judged_item_in_report_order(engine: Engine) -> None:
    items = labelling_items(RUN_ID, engine, LABELLER)

    found = [(i["eval_id"], i["metric"], i["turn"], i["rubric_id"], i["judge_passed"]) for i in items]
    assert found == EXPECTED
    stored = [item.item_key for item, _ in judged_items_of_run(RUN_ID, engine)]
    assert [i["item_key"] for i in items] == keys_of(judged_report()) == stored
    assert len(set(stored)) == 6
    assert [i["judge_score"] for i in items] == [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]
    assert {(i["eval_set_id"], i["run_index"], i["turns"]) for i in items} == {("home", 0, 2), ("home", 0, 1)}
    assert [i["rubric"] for i in items] == [None, None, None, None, RUBRICS["concise"], RUBRICS["polite"]]
    assert [i["threshold"] for i in items] == [0.5] * 6
    assert [i["label"] for i in items] == [None] * 6 and [i["other_labels"] for i in items] == [0] * 6


def test_each_item_has_the_conversation_the_reference_and_the_judges_rationale_and_samples(engine: Engine) -> None:
    lamp_1, lamp_2, xss, _, concise, polite = labelling_items(RUN_ID[:8], engine, LABELLER)  # a prefix names it

    assert (lamp_1["history"], lamp_1["user"], lamp_1["response"]) == ([], "turn on the lamp", "Lamp on.")
    assert lamp_2["history"] == [["turn on the lamp", "Lamp on."]]
    assert (lamp_2["user"], lamp_2["response"], lamp_2["tool_calls"]) == ("how warm is it?", "No idea.", [])
    assert lamp_1["tool_calls"] == [
        {"name": "set_device_info", "args": {"device_id": "lamp", "updates": {"status": "ON"}}}
    ]
    assert lamp_2["reference"] == "It is 22 degrees."
    assert lamp_2["expected_tool_calls"] == [{"name": "get_temperature", "args": {"location": "Office"}}]
    assert (lamp_2["rationale"], lamp_2["judge_model"], lamp_2["judge_mode"]) == ("invalid", JUDGE, "agent-eval")
    assert lamp_2["samples"] == [
        {"score": 0.0, "label": "invalid", "rationale": "no temperature", "error": None},
        {"score": 0.0, "label": "invalid", "rationale": "wrong", "error": None},
        {"score": None, "label": None, "rationale": None, "error": "no JSON"},
    ]
    assert xss["response"] == SCRIPT_ANSWER and xss["rationale"] == "valid: <i>fine</i>"
    assert (concise["rationale"], polite["rationale"]) == ("one word", "no thanks")
    assert [s["score"] for s in concise["samples"]] == [1.0, 1.0]
    assert [(s["score"], s["rationale"]) for s in polite["samples"]] == [(0.0, "no thanks"), (1.0, "fine")]
    assert polite["reference"] == "You are welcome! Thank you for asking."
    json.dumps(labelling_items(RUN_ID, engine, LABELLER), allow_nan=False)  # JSON-ready


def test_labelling_items_show_this_labellers_label_and_count_the_others(engine: Engine) -> None:
    keys = [i["item_key"] for i in labelling_items(RUN_ID, engine, LABELLER)]
    given = [
        Label(item_key=keys[1], metric_name=FINAL, passed=True, labeller=LABELLER, note="judge too strict"),
        Label(item_key=keys[1], metric_name=FINAL, passed=False, labeller="bob"),
        Label(item_key=keys[1], metric_name=FINAL, passed=False, labeller="cy"),
        Label(item_key=keys[4], metric_name=RUBRIC, rubric_id="concise", score=0.25, labeller="bob"),
    ]
    save_labels(given, engine)

    items = labelling_items(RUN_ID, engine, LABELLER)

    assert [i["other_labels"] for i in items] == [0, 2, 0, 0, 1, 0]
    assert [i["label"] is not None for i in items] == [False, True, False, False, False, False]
    mine = items[1]["label"]
    assert (mine["passed"], mine["score"], mine["note"]) == (True, None, "judge too strict")
    assert datetime.fromisoformat(mine["labelled_at"]).tzinfo is not None
    assert labelling_items(RUN_ID, engine, "bob")[4]["label"]["score"] == 0.25


def test_an_items_key_is_the_one_stored_with_the_run_so_its_label_joins_the_judges_verdict(tmp_path: Path) -> None:
    # A run stored a part at a time (`record_case_results`) keys its rubric items without the criterion's rubric
    # texts (today): the keys recomputed from the report then differ, and only the stored ones join the labels.
    url = f"sqlite:///{tmp_path / 'store.db'}"
    engine = get_engine(url)
    report = judged_report()
    start_run(run_start(report).model_copy(update={"git_commit": None}), [home_set()], engine)
    record_case_results(RUN_ID, report.cases, engine)
    complete_run(report, engine, cases_stored=True)
    stored = [item.item_key for item, _ in judged_items_of_run(RUN_ID, engine)]

    items = labelling_items(RUN_ID, engine, LABELLER)
    with labelling_server(RUN_ID, url, LABELLER) as page_url:
        polite = {"item_key": items[5]["item_key"], "passed": True}
        answer = httpx.post(page_url + "api/labels", json=polite, timeout=10)

    assert [i["item_key"] for i in items] == stored
    assert answer.status_code == 200
    pairs = labelled_pairs(engine)
    assert [(p.item.item_key, p.item.rubric_id, p.label.passed, p.label.labeller) for p in pairs] == [
        (stored[5], "polite", True, LABELLER)
    ]


def test_repeated_identical_case_runs_share_one_key(tmp_path: Path) -> None:
    engine = get_engine(f"sqlite:///{tmp_path / 'store.db'}")
    case, run, results = CASES[2]  # xss, run twice with the same answer
    runs = [(case, run.model_copy(update={"run_index": i})) for i in range(2)]
    metrics = [result.model_copy(update={"run_index": i}) for i in range(2) for result in results]
    report = judged_report().model_copy(update={"cases": case_results(runs, metrics), "num_runs": 2})
    store_run(report, engine, EvalSet(eval_set_id="home", eval_cases=[case]))

    items = labelling_items(RUN_ID, engine, LABELLER)

    assert [(i["eval_id"], i["run_index"]) for i in items] == [("xss", 0), ("xss", 1)]
    assert items[0]["item_key"] == items[1]["item_key"]


# ---------------------------------------------------------------------------------------------- the HTTP API
def check_the_api(url: str, engine: Engine) -> None:
    """POST pass, POST fail (one row), DELETE (no row), unknown key 404, bad bodies 422, with exact values."""
    with httpx.Client(base_url=url, timeout=10) as client:
        page = client.get("/")
        shown = client.get("/api/items").json()
        keys = [i["item_key"] for i in shown["items"]]
        polite = keys[5]

        passed = client.post("/api/labels", json={"item_key": polite, "passed": True, "note": "  "})
        stored = labels(engine)
        failed = client.post("/api/labels", json={"item_key": polite, "passed": False, "note": "rude"})
        after_fail = labels(engine)
        items_after = client.get("/api/items").json()["items"]
        deleted = client.delete(f"/api/labels/{polite}")
        deleted_again = client.delete(f"/api/labels/{polite}")
        after_delete = labels(engine)
        unknown = client.post("/api/labels", json={"item_key": "f" * 64, "passed": True})
        unknown_delete = client.delete(f"/api/labels/{'f' * 64}")
        bad = {
            "not json": client.post("/api/labels", content=b"{", headers={"Content-Type": "application/json"}),
            "no verdict": client.post("/api/labels", json={"item_key": polite, "note": "hm"}),
            "string verdict": client.post("/api/labels", json={"item_key": polite, "passed": "yes"}),
            "extra field": client.post("/api/labels", json={"item_key": polite, "passed": True, "labeller": "eve"}),
            "infinite score": client.post(
                "/api/labels",
                content=b'{"item_key": "%s", "score": 1e999}' % polite.encode(),
                headers={"Content-Type": "application/json"},
            ),
        }
        as_form = client.post("/api/labels", content=json.dumps({"item_key": polite, "passed": True}))
        rebound = client.get("/api/items", headers={"Host": "evil.example:80"})
        final_rows = labels(engine)

    assert page.status_code == 200 and page.headers["content-type"] == "text/html; charset=utf-8"
    assert "script-src 'self';" in page.headers["content-security-policy"]
    assert (shown["run_id"], shown["labeller"], len(keys)) == (RUN_ID, LABELLER, 6)

    assert passed.status_code == 200
    assert passed.json()["label"]["passed"] is True and passed.json()["label"]["note"] is None
    assert len(stored) == 1
    row = stored[0]
    assert (row.item_key, row.labeller, row.metric_name, row.rubric_id, row.passed, row.score) == (
        polite,
        LABELLER,
        RUBRIC,
        "polite",
        True,
        None,
    )
    assert (row.run_id, row.eval_set_id, row.eval_id, row.turn, row.note) == (RUN_ID, "home", "tone", 0, None)

    assert failed.status_code == 200
    assert [(r.item_key, r.labeller, r.passed, r.note) for r in after_fail] == [(polite, LABELLER, False, "rude")]
    assert items_after[5]["label"]["passed"] is False and items_after[5]["label"]["note"] == "rude"

    assert (deleted.status_code, deleted.json()) == (200, {"item_key": polite, "deleted": True})
    assert (deleted_again.status_code, deleted_again.json()["deleted"]) == (200, False)
    assert after_delete == []

    assert unknown.status_code == 404 and unknown_delete.status_code == 404
    assert unknown.json() == {"error": f"run {RUN_ID} has no judged item {'f' * 64!r}"}
    messages = {name: (response.status_code, response.json()["error"]) for name, response in bad.items()}
    assert messages["not json"][0] == 422 and messages["not json"][1].startswith("bad label: Invalid JSON")
    assert messages["no verdict"] == (422, "bad label: a label needs a verdict: passed (true or false) or a score")
    assert messages["string verdict"] == (422, "bad label: passed: Input should be a valid boolean")
    assert messages["extra field"] == (422, "bad label: labeller: Extra inputs are not permitted")
    assert messages["infinite score"][0] == 422 and messages["infinite score"][1].startswith("bad label: score:")
    assert as_form.status_code == 415  # a cross-site form or `text/plain` fetch cannot write a label
    assert rebound.status_code == 400  # a page of another site that rebinds its name to 127.0.0.1 is refused
    assert final_rows == []


def test_the_api_stores_replaces_and_deletes_labels_through_the_real_server(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    engine = get_engine(url)
    store_run(judged_report(), engine, home_set())

    with labelling_server(RUN_ID[:10], url, LABELLER) as page_url:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", page_url)
        check_the_api(page_url, engine)


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A new, empty PostgreSQL database on the local server, dropped after the test (tests/store/conftest.py's
    pattern)."""
    from tests.store.conftest import fresh_postgres_database

    with fresh_postgres_database() as url:
        yield url


@pytest.mark.postgres
def test_the_api_on_postgresql(postgres_url: str) -> None:
    engine = get_engine(postgres_url)
    store_run(judged_report(), engine, home_set())

    with labelling_server(RUN_ID, postgres_url, LABELLER) as page_url:
        check_the_api(page_url, engine)


def test_a_run_without_judged_items_or_a_bad_host_or_labeller_is_refused(engine: Engine, tmp_path: Path) -> None:
    from agent_eval.errors import EvalInputError
    from agent_eval.store import RunNotFoundError

    plain = judged_report("fedcba9876543210fedcba9876543210")
    plain = plain.model_copy(update={"cases": [c.model_copy(update={"metrics": c.metrics[-1:]}) for c in plain.cases]})
    store_run(plain, engine, home_set())
    url = str(engine.url)

    with pytest.raises(EvalInputError, match="has no judged item"), labelling_server(plain.run_id, url, LABELLER):
        pass
    with pytest.raises(RunNotFoundError), labelling_server("abcdef0000", url, LABELLER):
        pass
    with (
        pytest.raises(EvalInputError, match="not a loopback address"),
        labelling_server(RUN_ID, url, LABELLER, host="0.0.0.0"),
    ):
        pass
    with pytest.raises(EvalInputError, match="1 to 255 characters"), labelling_server(RUN_ID, url, ""):
        pass
    with labelling_server(RUN_ID, url, LABELLER) as taken:
        port = int(taken.rsplit(":", 1)[1].strip("/"))
        with (
            pytest.raises(EvalInputError, match=f"cannot listen on 127.0.0.1:{port}: "),
            labelling_server(RUN_ID, url, LABELLER, port=port),
        ):
            pass


def test_the_pages_files_ship_with_the_package() -> None:
    # `[tool.setuptools.package-data]` must name them: without it a wheel has page.py but not its page.
    root = Path(__file__).resolve().parents[2]
    settings = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = settings["tool"]["setuptools"].get("package-data", {}).get("agent_eval.judges", [])
    package = root / "agent_eval" / "judges"
    shipped = {path for pattern in patterns for path in package.glob(pattern) if path.is_file()}
    assets = {path for path in (package / "page_assets").iterdir() if path.is_file()}
    assert {path.name for path in assets} == {"index.html", "page.css", "page.js"}
    assert assets <= shipped, 'add `"agent_eval.judges" = ["page_assets/*"]` to [tool.setuptools.package-data]'


# ------------------------------------------------------------------------------------------ stopping cleanly
SERVE = """
import sys
from agent_eval.judges.page import serve_labelling_page
serve_labelling_page(sys.argv[1], sys.argv[2], "ada", ready=lambda url: print("READY", url, flush=True))
print("STOPPED", flush=True)
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_and_sigterm_stop_the_page_cleanly(engine: Engine, signum: int) -> None:
    command = [sys.executable, "-c", SERVE, RUN_ID, str(engine.url)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as process:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("READY http://127.0.0.1:"), process.stderr.read() if process.stderr else line
        url = line.split()[1]
        assert httpx.get(url + "api/items", timeout=10).status_code == 200
        process.send_signal(signum)
        out, err = process.communicate(timeout=20)

    assert process.returncode == 0
    assert out == "STOPPED\n"
    assert err == ""
    with pytest.raises(httpx.ConnectError):
        httpx.get(url, timeout=2)


# ------------------------------------------------------------------------------------------------ the browser
PROBE = """<script>
document.addEventListener("DOMContentLoaded", async function () {
  const page = window.labellingPage;
  const out = {};
  const items = () => Array.from(document.querySelectorAll("article.item"));
  const visible = () => items().filter((node) => !node.hidden).map((node) => Number(node.dataset.index));
  const key = (name) => {  // as a key press: to the focused element, bubbling up to the document
    const target = document.activeElement || document.body;
    target.dispatchEvent(new KeyboardEvent("keydown", {key: name, bubbles: true, cancelable: true}));
  };
  const pressed = () => items().map((node) => {
    const pass = node.querySelector("button.pass").getAttribute("aria-pressed") === "true";
    const fail = node.querySelector("button.fail").getAttribute("aria-pressed") === "true";
    return pass ? "pass" : fail ? "fail" : null;
  });
  const counter = () => document.getElementById("counter").textContent;
  try {
    out.timings = await page.loaded;
    out.initial = {counter: counter(), visible: visible(), current: document.querySelector(".current").dataset.index};
    const xss = items()[2];
    out.xss = {
      answer: xss.querySelector(".response .text").textContent,
      rationale: xss.querySelector(".rationale").textContent,
      markup: document.querySelectorAll("#items script, #items img, #items i").length,
      answer_elements: xss.querySelector(".response .text").children.length,
      title: document.title,
    };
    key("p"); key("f"); key("f"); key("p");   // 0 pass, 1 fail, 2 fail, 3 pass (moving on after each)
    key("u");                                 // undo 3's pass
    key("j"); key("k"); key("ArrowDown");     // 3 -> 4 -> 3 -> 4
    out.current_after_moves = document.querySelector(".current").dataset.index;
    items()[4].querySelector("input.note").value = "  one word, fine  ";
    items()[4].querySelector("button.pass").click();
    items()[5].querySelector("button.fail").click();
    await page.settled();
    const saves = items().map((node) => node.querySelector(".save").textContent);
    out.after_labels = {counter: counter(), pressed: pressed(), saves: saves};
    const realFetch = window.fetch;
    window.fetch = () => Promise.resolve(new Response(JSON.stringify({error: "disk full"}), {status: 500}));
    items()[3].querySelector("button.pass").click();
    await page.settled();
    window.fetch = realFetch;
    out.failed_save = {
      save: items()[3].querySelector(".save").textContent,
      pressed: pressed()[3],
      status: document.getElementById("status").textContent,
      counter: counter(),
    };
    const choose = (filter) => {
      document.querySelector('button[data-filter="' + filter + '"]').click();
      return visible();
    };
    out.disagreements = choose("disagreements");
    out.disagreement_pressed = document.querySelector('#filters [aria-pressed="true"]').dataset.filter;
    out.unlabelled = choose("unlabelled");
    out.all = choose("all");
    const counts = Array.from(document.querySelectorAll("[data-count]"));
    out.counts = counts.map((node) => node.dataset.count + "=" + node.textContent);
  } catch (error) {
    out.error = String(error && error.stack || error);
  }
  const pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
  await fetch("/probe-result", {method: "POST", body: JSON.stringify(out)});
});
</script>
<img src="/probe-wait" alt="" hidden>"""


def probe_page(engine: Engine, tmp_path: Path, probe: str, run_id: str = RUN_ID) -> tuple[dict[str, Any], str]:
    """Load the page with `probe` (a script, then an image that holds the page's load event until the probe has
    posted its findings) in headless Chromium; what the probe posted, and the DOM Chromium dumped after that."""
    chromium = chromium_path()
    index = (resources.files("agent_eval.judges") / "page_assets" / "index.html").read_text(encoding="utf-8")
    posted = threading.Event()
    found: dict[str, Any] = {}

    async def page(_request: Request) -> Response:
        return HTMLResponse(index.replace("</body>", probe + "</body>"))

    async def result(request: Request) -> Response:
        found.update(json.loads(await request.body()))
        posted.set()
        return Response(status_code=204)

    async def wait(_request: Request) -> Response:
        await run_in_threadpool(posted.wait, PROBE_TIMEOUT_SECONDS)
        return Response(status_code=204)

    routes = [
        Route("/probe", page),
        Route("/probe-result", result, methods=["POST"]),
        Route("/probe-wait", wait),
        Mount("/", app=labelling_app(run_id, engine, LABELLER)),
    ]
    with serving(Starlette(routes=routes)) as url:
        dom = run_chromium(chromium, tmp_path / "profile", "--dump-dom", url + "probe")
    assert posted.is_set(), f"the probe did not finish: {dom[-3000:]}"
    assert "error" not in found, found["error"]
    return found, dom


def wait_for_rows(engine: Engine, count: int) -> dict[str, Label]:
    """The stored labels once there are `count` of them (they are written before the page hears back, so at
    once; the wait is a bound, not a delay)."""
    deadline = time.monotonic() + 10
    while len(found := rows(engine)) != count and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


@pytest.fixture(scope="module")
def probed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Engine, list[str], dict[str, Any], str]:
    """The judged run's store and item keys, what `PROBE` found in Chromium, and the DOM after it."""
    folder = tmp_path_factory.mktemp("label-page")
    engine = stored_engine(folder)
    keys = [i["item_key"] for i in labelling_items(RUN_ID, engine, LABELLER)]
    found, dom = probe_page(engine, folder, PROBE)
    return engine, keys, found, dom


@pytest.mark.browser
def test_in_chromium_keys_and_clicks_become_labels(probed: tuple[Engine, list[str], dict[str, Any], str]) -> None:
    engine, keys, _, _ = probed

    stored = wait_for_rows(engine, 5)

    assert {key: (label.passed, label.note) for key, label in stored.items()} == {
        keys[0]: (True, None),
        keys[1]: (False, None),
        keys[2]: (False, None),
        keys[4]: (True, "one word, fine"),
        keys[5]: (False, None),
    }  # keys[3]: its pass was undone (u), then a save that failed wrote nothing
    assert {label.labeller for label in stored.values()} == {LABELLER}
    where = {(label.metric_name, label.rubric_id, label.run_id, label.eval_id, label.turn) for label in stored.values()}
    assert where == {
        (FINAL, None, RUN_ID, "lamp", 0),
        (FINAL, None, RUN_ID, "lamp", 1),
        (FINAL, None, RUN_ID, "xss", 0),
        (RUBRIC, "concise", RUN_ID, "tone", 0),
        (RUBRIC, "polite", RUN_ID, "tone", 0),
    }


@pytest.mark.browser
def test_in_chromium_the_page_shows_the_labels_the_counter_and_a_failed_save(
    probed: tuple[Engine, list[str], dict[str, Any], str],
) -> None:
    _, _, found, _ = probed

    assert found["initial"] == {"counter": "0 of 6 labelled", "visible": [0, 1, 2, 3, 4, 5], "current": "0"}
    assert found["current_after_moves"] == "4"
    after = found["after_labels"]
    assert after["counter"] == "5 of 6 labelled · 1 disagreement with the judge"
    assert after["pressed"] == ["pass", "fail", "fail", None, "pass", "fail"]
    assert [save.split(" ")[0] for save in after["saves"]] == ["Saved", "Saved", "Saved", "Label", "Saved", "Saved"]
    assert found["failed_save"] == {
        "save": "Not saved: disk full",
        "pressed": None,
        "status": "#4 pass: NOT saved (disk full)",
        "counter": "5 of 6 labelled · 1 disagreement with the judge",
    }


@pytest.mark.browser
def test_in_chromium_the_filters_show_the_disagreements_and_the_unlabelled_items(
    probed: tuple[Engine, list[str], dict[str, Any], str],
) -> None:
    _, _, found, _ = probed

    assert found["disagreements"] == [2]  # xss: the judge said pass, the label fail
    assert found["disagreement_pressed"] == "disagreements"
    assert found["unlabelled"] == [3]
    assert found["all"] == [0, 1, 2, 3, 4, 5]
    assert found["counts"] == ["all=6", "unlabelled=1", "disagreements=1"]


@pytest.mark.browser
def test_in_chromium_an_agent_answer_with_a_script_is_shown_as_text(
    probed: tuple[Engine, list[str], dict[str, Any], str],
) -> None:
    _, _, found, dom = probed

    assert found["xss"] == {
        "answer": SCRIPT_ANSWER,
        "rationale": "valid: <i>fine</i>",
        "markup": 0,
        "answer_elements": 0,
        "title": "agent-eval · label a run",
    }
    assert html.escape(SCRIPT_ANSWER, quote=False) in dom
    assert "<script>document.title" not in dom and '<img src="x"' not in dom


# ------------------------------------------------------------------------------------------------ a large run
LARGE_CASES = 500
LARGE_PROBE = """<script>
document.addEventListener("DOMContentLoaded", async function () {
  const timings = await window.labellingPage.loaded;
  await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
  timings.painted = performance.now();
  timings.articles = document.querySelectorAll("article.item").length;
  timings.counter = document.getElementById("counter").textContent;
  await fetch("/probe-result", {method: "POST", body: JSON.stringify(timings)});
});
</script>
<img src="/probe-wait" alt="" hidden>"""


def large_report(cases: int = LARGE_CASES) -> tuple[RunReport, EvalSet]:
    """`cases` single-turn case runs, each judged by `final_response_match_v2` and on two rubrics: 3 items each."""
    runs, results = [], []
    for n in range(cases):
        eval_id = f"case_{n:03d}"
        calls = [("get_temperature", {"location": "Office"})]
        case = EvalCase(eval_id=eval_id, conversation=[turn(f"#{n}: how warm is the office?", f"{n % 30} °C.", calls)])
        made = [turn(f"#{n}: how warm is the office?", f"The office is at {n % 30} °C.", calls)]
        runs.append((case, AgentRun(eval_set_id="home", eval_id=eval_id, invocations=made)))
        samples = [sample(1.0, "the same temperature " * 6), sample(0.0, "more words " * 6), sample(n % 2, "tie")]
        results.append(final_result(eval_id, [(float(n % 2), samples, "valid: the same temperature")]))
        verdicts = {"concise": (1.0, "one sentence", [sample(1.0, "one")]), "polite": (0.0, "no", [sample(0.0, "no")])}
        results.append(rubric_result(eval_id, verdicts))
    report = judged_report().model_copy(update={"cases": case_results(runs, results)})
    return report, EvalSet(eval_set_id="home", eval_cases=[case for case, _ in runs])


@pytest.mark.browser
def test_in_chromium_a_500_case_run_renders_every_item_quickly(tmp_path: Path) -> None:
    engine = get_engine(f"sqlite:///{tmp_path / 'store.db'}")
    report, eval_set = large_report()
    store_run(report, engine, eval_set)

    started = time.perf_counter()
    found, _ = probe_page(engine, tmp_path, LARGE_PROBE)
    elapsed = time.perf_counter() - started

    assert (found["articles"], found["counter"]) == (1500, "0 of 1500 labelled")
    print(
        f"{LARGE_CASES} case runs, 1500 items: JSON read {found['items']:.0f} ms, rendered {found['rendered']:.0f} ms, "
        f"painted {found['painted']:.0f} ms after the page was asked for; {elapsed:.1f} s with server and Chromium"
    )
    assert found["painted"] < 10_000  # about 0.5 s here: a bound against a page that lays out every item at once
