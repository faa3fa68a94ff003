"""The `agent-eval-judge-check/judge-check` deployment end to end, as a user runs it: a real `prefect server
start`, the work pool, `prefect deploy` from deployments/prefect.yaml, a process worker whose judge is the real
client over HTTP to the fake Gemini server, and `prefect deployment run agent-eval-judge-check/judge-check
--param request=... --watch` on a SQLite store that holds a judged run and people's labels.

The store (built without a flow, `tests.judges.stored_runs`): 20 one-turn cases c00..c19 judged by
final_response_match_v2 (agent-eval's prompts, 3 samples); the labels say pass on c00..c09 and fail on c10..c19,
and the stored verdicts agree with every label (their kappa would be 1). Asked again, the judge says invalid on
c08, c09, c18 and c19 and valid on the rest: 8 pass-pass, 2 pass-fail, 8 fail-pass, 2 fail-fail, so
kappa = (20 * 10 - (16 * 10 + 4 * 10)) / (20 * 20 - 200) = 0, below the floor 0.5: drift.

Run it alone with `pytest -m e2e tests/deployments/test_judge_check_e2e.py -n 0` (about a minute).
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, col, select

from agent_eval.store import get_engine
from agent_eval.store.labels import Label, save_labels
from agent_eval.store.models import JudgeCheckRecord
from tests.compare.test_alerts import WebhookReceiver
from tests.deployments.prefect_stack import POOL, PREFECT, PrefectStack
from tests.fakes.gemini_server import CREDENTIAL_VARIABLES, FAKE_API_KEY, FakeGeminiServer
from tests.flows.judge_scripts import JudgeRouter, validity
from tests.judges.stored_runs import (
    AGENT_EVAL_JUDGE,
    JUDGE_MODEL,
    RESPONSE,
    JudgedCase,
    identities,
    judged,
    store_cases,
    stored_key,
    turn,
)
from tests.prefect_http import prefect_api

pytestmark = pytest.mark.e2e

DEPLOYMENT = "agent-eval-judge-check/judge-check"
DRIFT_EVENT = "agent-eval.judge-drift"
RUN_ID = "judged-run"
SAMPLES = 3
IDS = [f"c{i:02d}" for i in range(20)]
HUMAN = {eval_id: index < 10 for index, eval_id in enumerate(IDS)}
"""The labels: pass on c00..c09, fail on c10..c19 (the stored verdicts say the same)."""
INVALID = ("c08", "c09", "c18", "c19")
"""The cases the judge, asked again, answers invalid (valid on every other)."""
CONFIG: dict[str, Any] = {
    "criteria": {
        RESPONSE: {
            "threshold": 0.5,
            "judge_mode": "agent-eval",  # the prompts JudgeRouter answers
            "judge_model_options": {"judge_model": JUDGE_MODEL, "num_samples": SAMPLES},
        }
    }
}
FIRST_DRIFT = f"judge drift: {RESPONSE} kappa – → 0.00 on 20 labels (below the floor 0.50)"
SECOND_DRIFT = f"judge drift: {RESPONSE} kappa 0.00 → 0.00 on 20 labels (below the floor 0.50)"


def message(eval_id: str) -> str:
    """The user's turn of a case; `[c08]` fences the id so a rule on one case matches no other."""
    return f"[{eval_id}] Turn off the lamp in room {eval_id[1:]}."


def labelled_store(db_url: str) -> dict[str, bool]:
    """The judged run and its 20 labels; the judge's expected new verdict per item key."""
    engine = get_engine(db_url)
    cases = [
        JudgedCase(
            eval_id, [turn(message(eval_id), "OK, the lamp is off.")], [judged(eval_id, [1.0 if human else 0.0])]
        )
        for eval_id, human in HUMAN.items()
    ]
    store_cases(engine, RUN_ID, cases, judges=identities(AGENT_EVAL_JUDGE), config=CONFIG)
    keys = {eval_id: stored_key(engine, RUN_ID, eval_id, RESPONSE) for eval_id in IDS}
    labels = [
        Label(item_key=keys[eval_id], metric_name=RESPONSE, passed=passed, labeller="ana")
        for eval_id, passed in HUMAN.items()
    ]
    saved = save_labels(labels, engine)
    assert saved == len(IDS)
    return {keys[eval_id]: eval_id not in INVALID for eval_id in IDS}


def test_the_judge_check_deployment_asks_the_judge_again_stores_the_check_and_alerts_on_drift(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db_url = f"sqlite:///{tmp_path / 'store.db'}"
    expected_verdicts = labelled_store(db_url)
    router = JudgeRouter()
    for eval_id in INVALID:
        router.on(RESPONSE, f"[{eval_id}]", validity("invalid"))
    for name in CREDENTIAL_VARIABLES:  # the stack's environment is this process's: no real Google credential
        monkeypatch.delenv(name, raising=False)

    with FakeGeminiServer() as gemini, WebhookReceiver() as receiver:
        gemini.respond_with(router)
        stack = _deployed_stack(tmp_path, gemini.base_url)
        try:
            request = {"db_url": db_url, "min_kappa": 0.5, "alert_webhook": receiver.url, "fail_on_drift": False}
            done = _run(stack, request)
            assert done.returncode == 0, _logs(stack, done)
            assert "Flow run finished successfully in 'Completed'" in done.stdout
            [body] = _wait_for_posts(receiver, 1)
            checks = _checks(db_url)
            asked = router.count(RESPONSE), {eval_id: router.count(RESPONSE, f"[{eval_id}]") for eval_id in IDS}

            # the same drift with fail_on_drift: the flow run ends Failed, a second POST
            failed = _run(stack, {**request, "fail_on_drift": True})
            assert failed.returncode == 1, _logs(stack, failed)
            assert "Flow run finished in state 'Failed'" in failed.stdout
            second = _wait_for_posts(receiver, 2)
            events = _drift_events(stack, 2)
        finally:
            stack.stop()

    # the first run: one check stored, kappa 0 on 20 labels, every item asked again (3 fresh samples each)
    [check] = checks
    assert (check.metric_name, check.labels, check.kappa) == (RESPONSE, 20, 0.0)
    assert check.agreement["confusion"] == {"pass_pass": 8, "pass_fail": 2, "fail_pass": 8, "fail_fail": 2}
    assert check.verdicts == expected_verdicts
    assert check.judge["model"] == JUDGE_MODEL and check.judge["mode"] == "agent-eval"
    assert check.judge["samples"] == SAMPLES
    assert asked == (len(IDS) * SAMPLES, dict.fromkeys(IDS, SAMPLES))  # each item's samples, none from a cache
    alert = json.loads(body)
    assert alert["summary"] == FIRST_DRIFT
    assert alert["text"] == f":warning: agent-eval {FIRST_DRIFT}"
    assert (alert["metric"], alert["labels"], alert["kappa"], alert["change"]) == (RESPONSE, 20, 0.0, None)
    assert alert["check_id"] == check.id

    # the second run: its own check (fresh calls again), compared with the first
    assert [json.loads(raw)["summary"] for raw in second] == [FIRST_DRIFT, SECOND_DRIFT]
    assert [c.kappa for c in _checks(db_url)] == [0.0, 0.0]
    assert router.count(RESPONSE) == 2 * len(IDS) * SAMPLES
    assert router.problems == [] and gemini.unscripted == []
    assert sorted(events) == sorted([FIRST_DRIFT, SECOND_DRIFT])


def _deployed_stack(tmp_path: Path, gemini_url: str) -> PrefectStack:
    """Server, pool, every deployment, one worker; the judge is the fake Gemini server, AGENT_EVAL_HOME fresh
    (no judge cache). The worker polls every 2 s."""
    env = {
        "GOOGLE_API_KEY": FAKE_API_KEY,
        "AGENT_EVAL_GEMINI_BASE_URL": gemini_url,
        "AGENT_EVAL_HOME": str(tmp_path / "ae"),
        "PREFECT_WORKER_QUERY_SECONDS": "2",
    }
    stack = PrefectStack.start(tmp_path, env)
    try:
        for command in (("work-pool", "create", POOL, "--type", "process"),
                        ("deploy", "--all", "--prefect-file", "deployments/prefect.yaml", "--no-prompt")):  # fmt: skip
            done = stack.run(*command)
            assert done.returncode == 0, done.stdout + done.stderr
        stack.spawn([PREFECT, "worker", "start", "--pool", POOL], "worker.log")
    except BaseException:
        stack.stop()
        raise
    return stack


def _run(stack: PrefectStack, request: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """`prefect deployment run agent-eval-judge-check/judge-check --param request=... --watch`."""
    return stack.run("deployment", "run", DEPLOYMENT, "--param", f"request={json.dumps(request)}", "--watch")


def _logs(stack: PrefectStack, done: subprocess.CompletedProcess[str]) -> str:
    """The tail of a failed command's output and of the worker's log."""
    return done.stdout[-3000:] + done.stderr[-2000:] + (stack.home / "worker.log").read_text()[-3000:]


def _checks(db_url: str) -> list[JudgeCheckRecord]:
    """Every stored check, oldest first."""
    with Session(get_engine(db_url)) as session:
        return list(session.exec(select(JudgeCheckRecord).order_by(col(JudgeCheckRecord.id))).all())


def _wait_for_posts(receiver: WebhookReceiver, count: int, timeout: float = 10) -> list[bytes]:
    """The webhook's bodies once there are `count` (the flow POSTs before it ends: they are there already)."""
    deadline = time.monotonic() + timeout
    while len(receiver.bodies()) < count and time.monotonic() < deadline:
        time.sleep(0.2)
    return receiver.bodies()


def _drift_events(stack: PrefectStack, count: int, timeout: float = 20) -> list[str]:
    """The summaries of the `agent-eval.judge-drift` events the server stored (polled: stored in batches)."""
    url = stack.env["PREFECT_API_URL"] + "/events/filter"
    body = {"filter": {"event": {"name": [DRIFT_EVENT]}}, "limit": 50}
    deadline = time.monotonic() + timeout
    while True:
        events = prefect_api(url, body)["events"]
        summaries = [str(event["payload"].get("summary")) for event in events]
        if len(summaries) >= count or time.monotonic() > deadline:
            return summaries
        time.sleep(0.5)
