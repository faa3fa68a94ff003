"""The labelling page (`agent-eval label RUN`): a local web page on which a person labels a stored run's judged
items, each label stored in the store as soon as it is given.

Internal: the interface is the `agent-eval label` command; this module's names may change between releases.

The rules:
- **Which items.** Every judged item of the run (`agent_eval.results.judged_items`): each turn of a case run that
  an LLM judge scored for a metric, and each rubric of that turn for a rubric metric. Items come in report order
  (the case runs as `load_report` gives them, failed ones NOT first), then metric, turn and rubric order. An
  item's key is the one stored with the run (`judged_items` rows) when there is one, so that its labels join the
  judge's verdicts in `agent-eval judges`; else the key computed from the report. Two case runs that judged the
  same content share a key, and so a label.
- **What each item shows.** What the judge saw (earlier turns, the user's turn, the answer, the tool calls, the
  reference and expected tool calls), the rubric's text, the judge's score and verdict, its rationale (the turn's
  explanation, or the rubric's rationale) and its samples (score, label, rationale each), and the labeller's
  own label with how many other people labelled the item.
- **A disagreement** is an item whose label's verdict differs from the judge's: the label's pass/fail, else its
  score against the item's threshold (the criterion's, 0.5 without one and for every rubric); an item without a
  judge verdict or without a label is no disagreement.
- **How a label is stored.** `POST api/labels` with `{"item_key", "passed" and/or "score", "note"}` (a blank
  note is none) stores it at once (`agent_eval.store.labels.save_labels`) under this page's labeller, with the
  item's metric, rubric, run, eval set, case and turn taken from the run, replacing that labeller's earlier label
  of the key; `DELETE api/labels/KEY` removes it (undo). An unknown key answers 404, a bad body 422, a body that
  is not sent as JSON 415.
- **Safety.** The server listens on a loopback address only and answers only requests naming it as their host
  (no DNS rebinding); a label is written only from a JSON request (a cross-site form cannot send one). The page
  is plain HTML, CSS and JavaScript shipped in `page_assets/` (no CDN, no build step), served with a content
  security policy that runs no inline script; run text is inserted as text, never as HTML.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import math
import signal
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from typing import Annotated, Any

import uvicorn
from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError, model_validator
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp

from agent_eval.errors import EvalInputError
from agent_eval.results.judged_items import JudgedItem, case_rubric_texts, is_judged, judged_items, turn_content
from agent_eval.results.model import CaseResult, MetricResult
from agent_eval.schema import RubricScore
from agent_eval.store.engine import get_engine
from agent_eval.store.labels import Label, delete_label, judged_items_of_run, rubric_texts_by_eval_set, save_labels
from agent_eval.store.models import LabelRecord
from agent_eval.store.queries import resolve_run_id
from agent_eval.store.reports import load_report

__all__ = [
    "LOOPBACK",
    "labelling_app",
    "labelling_items",
    "labelling_server",
    "serve_labelling_page",
    "serving",
]

LOOPBACK = "127.0.0.1"
_DEFAULT_THRESHOLD = 0.5
"""An item's threshold when its criterion has none, and every rubric's (a rubric verdict is yes/no)."""
_KEY_CHUNK = 500
"""Item keys per query for their labels (SQLite allowed 999 parameters in a statement before 3.32)."""
_ASSETS = {"page.js": "text/javascript", "page.css": "text/css"}
_SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
_START_TIMEOUT_SECONDS = 10.0
_STOP_TIMEOUT_SECONDS = 10.0

_Position = tuple[str, str, int, str, int, str | None]
"""Where an item is in a run: eval set, case, run index, metric, turn, rubric id."""


# ------------------------------------------------------------------------------------------------ the items
@dataclass(frozen=True)
class _RunItems:
    """A run's judged items as the page shows them, without labels (they change; the run does not)."""

    run_id: str
    items: list[dict[str, Any]]
    by_key: dict[str, dict[str, Any]]


def labelling_items(run_id: str, engine: Engine, labeller: str) -> list[dict[str, Any]]:
    """Every judged item of a stored run, in report order, as JSON-ready dicts with `labeller`'s current label
    and how many other people labelled it (rules in the module docstring).

    Raises:
        RunNotFoundError: no such run.
    """
    return _with_labels(_run_items(resolve_run_id(run_id, engine), engine), engine, labeller)


def _run_items(run_id: str, engine: Engine) -> _RunItems:
    report = load_report(run_id, engine)
    texts = rubric_texts_by_eval_set(report.config, report.eval_set_ids)
    stored = _stored_keys(run_id, engine)
    items = []
    for case in report.cases:
        items.extend(_case_items(case, texts.get(case.eval_set_id) or {}, stored))
    by_key: dict[str, dict[str, Any]] = {}
    for item in items:
        by_key.setdefault(item["item_key"], item)
    return _RunItems(run_id, items, by_key)


def _stored_keys(run_id: str, engine: Engine) -> dict[_Position, str]:
    """The keys stored with the run's judged items, by position."""
    return {
        (case.eval_set_id, case.eval_id, case.run_index, item.metric_name, item.turn, item.rubric_id): item.item_key
        for item, case in judged_items_of_run(run_id, engine)
    }


def _case_items(case: CaseResult, texts: Mapping[str, str], stored: Mapping[_Position, str]) -> list[dict[str, Any]]:
    rubric_texts = {**case_rubric_texts(case), **texts}
    items = []
    turns = len(case.agent_run.invocations)
    for judged, (result, rubric) in zip(judged_items(case, texts), _judged_positions(case), strict=True):
        if (judged.metric_name, judged.rubric_id) != (result.metric_name, rubric.rubric_id if rubric else None):
            raise RuntimeError(f"judged items out of order at {judged.metric_name}, turn {judged.turn + 1}")
        position = (case.eval_set_id, case.eval_id, case.run_index, judged.metric_name, judged.turn, judged.rubric_id)
        item = _item(case, judged, result, rubric, rubric_texts)
        item["item_key"] = stored.get(position, judged.key)
        item["turns"] = turns
        items.append(item)
    return items


def _judged_positions(case: CaseResult) -> Iterator[tuple[MetricResult, RubricScore | None]]:
    """Each judged item's metric result and rubric score, in `judged_items`' order (metric, turn, rubric)."""
    for result in case.metrics:
        if not is_judged(result):
            continue
        for score in result.per_invocation:
            if score.rubric_scores is None:
                yield result, None
            else:
                yield from ((result, rubric) for rubric in score.rubric_scores)


def _item(
    case: CaseResult,
    judged: JudgedItem,
    result: MetricResult,
    rubric: RubricScore | None,
    rubric_texts: Mapping[str, str],
) -> dict[str, Any]:
    turn = judged.turn
    turn_details = _turn_details(result, turn)
    explanation = result.per_invocation[turn].explanation
    threshold = _DEFAULT_THRESHOLD if rubric is not None or result.threshold is None else result.threshold
    return {
        "item_key": judged.key,
        "metric": judged.metric_name,
        "rubric_id": judged.rubric_id,
        "rubric": rubric_texts.get(judged.rubric_id) if judged.rubric_id is not None else None,
        "eval_set_id": case.eval_set_id,
        "eval_id": case.eval_id,
        "run_index": case.run_index,
        "turn": turn,
        **turn_content(case, turn),
        "judge_model": _text(result.details.get("judge_model")),
        "judge_mode": _text(result.details.get("judge_mode")),
        "judge_score": _number(judged.judge_score),
        "judge_passed": judged.judge_passed,
        "threshold": threshold,
        "rationale": (rubric.rationale if rubric is not None else explanation) or None,
        "samples": _samples(turn_details, rubric.rubric_id if rubric is not None else None),
    }


def _turn_details(result: MetricResult, turn: int) -> Mapping[str, Any]:
    turns = result.details.get("invocations")
    found = turns[turn] if isinstance(turns, Sequence) and turn < len(turns) else None
    return found if isinstance(found, Mapping) else {}


def _samples(details: Mapping[str, Any], rubric_id: str | None) -> list[dict[str, Any]]:
    """The judge's samples of a turn (of one rubric: its own votes, else each call's verdict on the rubric)."""
    if rubric_id is None:
        return [_sample(sample) for sample in _list(details.get("samples"))]
    rubrics = details.get("rubrics")
    own = rubrics.get(rubric_id) if isinstance(rubrics, Mapping) else None
    if isinstance(own, Mapping):
        return [_sample(sample) for sample in _list(own.get("samples"))]
    return [_sample(sample, rubric_id) for sample in _list(details.get("samples"))]


def _sample(sample: Any, rubric_id: str | None = None) -> dict[str, Any]:
    """One sample as the page shows it: score, label, rationale (the judge's raw answer when it gave no
    rationale), error."""
    if not isinstance(sample, Mapping):
        return {"score": None, "label": None, "rationale": None, "error": None}
    score = sample.get("score")
    if rubric_id is not None:
        scores = sample.get("rubric_scores")
        score = scores.get(rubric_id) if isinstance(scores, Mapping) else None
    return {
        "score": _number(score),
        "label": _text(sample.get("label")),
        "rationale": _text(sample.get("rationale")) or _text(sample.get("answer")),
        "error": _text(sample.get("error")),
    }


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, Sequence) and not isinstance(value, str | bytes) else []


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _text(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


# ----------------------------------------------------------------------------------------------- the labels
def _with_labels(run: _RunItems, engine: Engine, labeller: str) -> list[dict[str, Any]]:
    """The run's items with `labeller`'s label of each (None: not labelled) and the other labellers' count."""
    mine, others = _labels_of(list(run.by_key), engine, labeller)
    return [
        {**item, "label": mine.get(item["item_key"]), "other_labels": others[item["item_key"]]} for item in run.items
    ]


def _labels_of(keys: list[str], engine: Engine, labeller: str) -> tuple[dict[str, dict[str, Any]], Counter[str]]:
    mine: dict[str, dict[str, Any]] = {}
    others: Counter[str] = Counter()
    with Session(engine) as session:
        for start in range(0, len(keys), _KEY_CHUNK):
            chunk = keys[start : start + _KEY_CHUNK]
            for record in session.exec(select(LabelRecord).where(col(LabelRecord.item_key).in_(chunk))):
                if record.labeller == labeller:
                    mine[record.item_key] = _shown_label(record.passed, record.score, record.note, record.labelled_at)
                else:
                    others[record.item_key] += 1
    return mine, others


def _shown_label(passed: bool | None, score: float | None, note: str | None, at: datetime | None) -> dict[str, Any]:
    if at is not None and at.tzinfo is None:
        at = at.replace(tzinfo=UTC)  # SQLite gives the stored UTC time back without its zone
    return {"passed": passed, "score": score, "note": note, "labelled_at": at.isoformat() if at else None}


class _LabelBody(BaseModel):
    """What the page posts: the item's key, a verdict (pass/fail, a score or both) and an optional note."""

    model_config = ConfigDict(extra="forbid")

    item_key: str
    passed: StrictBool | None = None
    score: Annotated[float, Field(strict=True, allow_inf_nan=False)] | None = None
    note: str | None = Field(default=None, max_length=10_000)

    @model_validator(mode="after")
    def _has_a_verdict(self) -> _LabelBody:
        if self.passed is None and self.score is None:
            raise ValueError("a label needs a verdict: passed (true or false) or a score")
        return self


# --------------------------------------------------------------------------------------------------- the app
def labelling_app(run_id: str, engine: Engine, labeller: str, *, host: str = LOOPBACK) -> Starlette:
    """The page's web app for a stored run (its id in full): the page, its items and label routes; it answers
    only requests addressed to `host` (the address it is served on), `127.0.0.1` or `localhost`.

    Raises:
        RunNotFoundError: no such run.
        EvalInputError: the run has no judged item, or the labeller's name is empty or longer than 255 characters.
    """
    if not 1 <= len(labeller) <= 255:
        raise EvalInputError(f"a labeller's name has 1 to 255 characters, not {len(labeller)}")
    run = _run_items(run_id, engine)
    if not run.items:
        raise EvalInputError(f"run {run_id} has no judged item (no LLM judge scored it): there is nothing to label")
    assets = resources.files(__package__ or "agent_eval.judges") / "page_assets"
    page = (assets / "index.html").read_bytes()
    files = {name: (assets / name).read_bytes() for name in _ASSETS}

    async def index(_request: Request) -> Response:
        return Response(page, media_type="text/html; charset=utf-8", headers=_SECURITY_HEADERS)

    async def asset(request: Request) -> Response:
        name = request.url.path.rsplit("/", 1)[-1]
        return Response(files[name], media_type=f"{_ASSETS[name]}; charset=utf-8", headers=_SECURITY_HEADERS)

    async def items(_request: Request) -> Response:
        shown = await run_in_threadpool(_with_labels, run, engine, labeller)
        return _json({"run_id": run.run_id, "labeller": labeller, "items": shown})

    async def post_label(request: Request) -> Response:
        return await _post_label(request, run, engine, labeller)

    async def remove_label(request: Request) -> Response:
        key = str(request.path_params["item_key"])
        if key not in run.by_key:
            return _error(404, f"run {run.run_id} has no judged item {key!r}")
        deleted = await run_in_threadpool(delete_label, key, labeller, engine)
        return _json({"item_key": key, "deleted": deleted})

    routes = [
        Route("/", index),
        *(Route(f"/{name}", asset) for name in _ASSETS),
        Route("/api/items", items),
        Route("/api/labels", post_label, methods=["POST"]),
        Route("/api/labels/{item_key:str}", remove_label, methods=["DELETE"]),
    ]
    hosts = sorted({host, LOOPBACK, "localhost"})
    return Starlette(routes=routes, middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=hosts)])


async def _post_label(request: Request, run: _RunItems, engine: Engine, labeller: str) -> Response:
    if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
        return _error(415, "send the label as JSON (Content-Type: application/json)")
    try:
        body = _LabelBody.model_validate_json(await request.body())
    except ValidationError as error:
        return _error(422, f"bad label: {_problems(error)}")
    item = run.by_key.get(body.item_key)
    if item is None:
        return _error(404, f"run {run.run_id} has no judged item {body.item_key!r}")
    label = Label(
        item_key=body.item_key,
        metric_name=item["metric"],
        rubric_id=item["rubric_id"],
        passed=body.passed,
        score=body.score,
        labeller=labeller,
        note=(body.note or "").strip() or None,
        labelled_at=datetime.now(UTC),
        run_id=run.run_id,
        eval_set_id=item["eval_set_id"],
        eval_id=item["eval_id"],
        turn=item["turn"],
    )
    await run_in_threadpool(save_labels, [label], engine)
    shown = _shown_label(label.passed, label.score, label.note, label.labelled_at)
    return _json({"item_key": label.item_key, "label": shown})


def _problems(error: ValidationError) -> str:
    """A validation error in one line: `field: message` per problem (the body's own for a JSON error)."""
    problems = []
    for problem in error.errors(include_url=False, include_input=False):
        where = ".".join(str(part) for part in problem["loc"])
        message = str(problem["msg"]).removeprefix("Value error, ")
        problems.append(f"{where}: {message}" if where else message)
    return "; ".join(problems)


def _json(content: Any, status: int = 200) -> Response:
    body = json.dumps(content, ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=str)
    return Response(body, status, media_type="application/json", headers={"Cache-Control": "no-store"})


def _error(status: int, message: str) -> Response:
    return _json({"error": message}, status)


# ------------------------------------------------------------------------------------------------ the server
@contextlib.contextmanager
def serving(app: ASGIApp, *, host: str = LOOPBACK, port: int = 0) -> Iterator[str]:
    """Serve `app` on `host`:`port` (a loopback address; port 0: a free one) in a background thread, yielding
    its URL once it listens; on leaving, stop it (requests in progress finish first) and wait for the thread.

    Raises:
        EvalInputError: `host` is not a loopback address, or the port is taken.
        RuntimeError: the server did not start.
    """
    listener = _listen(host, port)
    config = uvicorn.Config(
        app, lifespan="off", log_config=None, log_level="warning", access_log=False, timeout_graceful_shutdown=2
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, name="labelling-page", daemon=True)
    thread.start()
    try:
        _wait_until_started(server, thread)
        yield f"http://{host}:{listener.getsockname()[1]}/"
    finally:
        server.should_exit = True
        thread.join(_STOP_TIMEOUT_SECONDS)
        listener.close()


def _listen(host: str, port: int) -> socket.socket:
    """A socket listening on `host`:`port`, bound before the server starts (so port 0's choice is known)."""
    if not _is_loopback(host):
        raise EvalInputError(f"the labelling page listens on this machine only: {host!r} is not a loopback address")
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        listener.bind((host, port))
        listener.listen(128)
    except OSError as error:
        listener.close()
        raise EvalInputError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    return listener


def _is_loopback(host: str) -> bool:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.version == 4 and address.is_loopback


def _wait_until_started(server: uvicorn.Server, thread: threading.Thread) -> None:
    deadline = time.monotonic() + _START_TIMEOUT_SECONDS
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the labelling page's server did not start")
        time.sleep(0.01)


@contextlib.contextmanager
def labelling_server(
    run_id: str, db_url: str | None, labeller: str, *, host: str = LOOPBACK, port: int = 0
) -> Iterator[str]:
    """The labelling page of a stored run (an id or a unique prefix of one) served in a background thread, as
    `labeller`, writing to the store at `db_url` (default: `agent_eval.store.engine.default_db_url()`); yields
    the page's URL and stops the server on leaving.

    Raises:
        RunNotFoundError: no such run.
        EvalInputError: the run has no judged item, the labeller's name is empty or too long, `host` is not a
            loopback address or the port is taken.
    """
    engine = get_engine(db_url)
    app = labelling_app(resolve_run_id(run_id, engine), engine, labeller, host=host)
    with serving(app, host=host, port=port) as url:
        yield url


def serve_labelling_page(
    run_id: str,
    db_url: str | None,
    labeller: str,
    *,
    host: str = LOOPBACK,
    port: int = 0,
    ready: Callable[[str], None] | None = None,
) -> None:
    """Serve the labelling page (`labelling_server`) until Ctrl-C or SIGTERM, which end it cleanly (no
    traceback); `ready(url)` is called once it listens.

    Raises:
        RunNotFoundError: no such run.
        EvalInputError: as `labelling_server`.
    """
    stop = threading.Event()
    with (
        contextlib.suppress(KeyboardInterrupt),
        _stop_on_sigterm(stop),
        labelling_server(run_id, db_url, labeller, host=host, port=port) as url,
    ):
        if ready is not None:
            ready(url)
        while not stop.wait(0.5):
            pass


@contextlib.contextmanager
def _stop_on_sigterm(stop: threading.Event) -> Iterator[None]:
    """SIGTERM sets `stop` within the block (in the main thread only: elsewhere signals cannot be handled)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, lambda _signum, _frame: stop.set())
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
