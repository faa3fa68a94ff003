"""End to end, as a user runs it: a real `prefect server start`, the work pool, `prefect deploy` from
deployments/prefect.yaml, a process worker, and `prefect deployment run agent-eval/nightly --watch`.

Run it alone with `pytest -m e2e`. It takes about a minute.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlmodel import Session, col, select

from agent_eval.store import CaseRecord, Run, get_engine
from tests.compare.test_alerts import WebhookReceiver
from tests.conftest import REPO_ROOT
from tests.deployments.prefect_stack import POOL, PREFECT, PrefectStack
from tests.recorded.otlp_lines import SECOND, append_traces

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrefectStack]:
    """Server up, pool created, deployments deployed, one worker polling; all stopped afterwards. One for the
    tests that need no worker environment of their own (a stack costs ~40 s); its folder is `stack.home`."""
    tmp_path = tmp_path_factory.mktemp("stack")
    stack = PrefectStack.start(tmp_path, {"AGENT_EVAL_HOME": str(tmp_path / "ae")})  # the guide's default store
    try:
        created = stack.run("work-pool", "create", POOL, "--type", "process")
        assert created.returncode == 0, created.stdout + created.stderr
        deployed = stack.run("deploy", "--all", "--prefect-file", "deployments/prefect.yaml", "--no-prompt")
        assert deployed.returncode == 0, deployed.stdout + deployed.stderr
        stack.spawn([PREFECT, "worker", "start", "--pool", POOL], "worker.log")
        yield stack
    finally:
        stack.stop()


def test_nightly_deployment_runs_and_stores_its_results(stack: PrefectStack) -> None:
    tmp_path = stack.home
    listed = stack.run("deployment", "ls")
    assert "agent-eval/nightly" in listed.stdout and "agent-eval/on-demand" in listed.stdout

    done = stack.run("deployment", "run", "agent-eval/nightly", "--watch", timeout=300)

    assert done.returncode == 0, done.stdout[-3000:] + (tmp_path / "worker.log").read_text()[-3000:]
    assert "Completed" in done.stdout
    with Session(get_engine(f"sqlite:///{tmp_path / 'ae' / 'agent_eval.db'}")) as session:
        run = session.exec(select(Run)).one()
        assert (run.status, run.total, run.passed, run.failed) == ("completed", 33, 27, 6)
        assert run.flow_run_id is not None
        assert len(session.exec(select(CaseRecord).where(CaseRecord.run_id == run.id)).all()) == 33
    # One store: the CLI in the same shell (AGENT_EVAL_HOME set, no AGENT_EVAL_DB_URL) reads the nightly's run.
    history = subprocess.run(
        [str(Path(sys.executable).with_name("agent-eval")), "history", "--json"],
        cwd=REPO_ROOT, env={**stack.env, "CI": "1"}, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert history.returncode == 0, history.stderr
    assert [row["run_id"] for row in json.loads(history.stdout)] == [run.id]

    # The same stack (a second one would cost ~40 s): the traces deployment over a growing spans folder.
    _traces_runs_score_each_trace_once(stack, tmp_path)


def _traces_runs_score_each_trace_once(stack: PrefectStack, tmp_path: Path) -> None:
    """Two runs of agent-eval-traces/traces, a trace recorded in between: each trace is scored once."""
    spans = tmp_path / "spans"
    spans.mkdir()
    append_traces(spans, "a.jsonl", [("s1", 1, time.time_ns() - 3600 * SECOND)])
    request = json.dumps({"recorded": {"paths": [str(spans)]}, "settle_seconds": 0, "watermark": "e2e"})
    for new_trace in (("s2", 2), None):
        done = stack.run("deployment", "run", "agent-eval-traces/traces", "--param", f"request={request}", "--watch")
        assert done.returncode == 0, done.stdout[-3000:] + (tmp_path / "worker.log").read_text()[-3000:]
        if new_trace:
            append_traces(spans, "b.jsonl", [(*new_trace, time.time_ns())])
    with Session(get_engine(f"sqlite:///{tmp_path / 'ae' / 'agent_eval.db'}")) as session:
        runs = session.exec(select(Run).order_by(col(Run.started_at))).all()
        cases = session.exec(select(CaseRecord)).all()
        scored = [
            sorted(c.eval_id for c in cases if c.run_id == run.id) for run in runs if run.eval_set_ids == ["spans"]
        ]
    assert scored == [["s1"], ["s2"]]


def test_parameters_are_enforced_against_the_schema(stack: PrefectStack) -> None:
    rejected = stack.run("deployment", "run", "agent-eval/on-demand", "--param", 'request={"paths": [], "num_runs": 0}')

    assert rejected.returncode != 0
    assert "validation" in (rejected.stdout + rejected.stderr).lower()


def test_a_worse_agent_between_two_deployment_runs_raises_the_alert(tmp_path: Path) -> None:
    """Two runs of agent-eval/on-demand on a copy of the demo; the agent's code gets worse in between. The
    second run finds the regression against the first and POSTs the alert to a local webhook receiver."""
    project = tmp_path / "project"
    shutil.copytree(REPO_ROOT / "examples", project / "examples")
    agent_file = project / "examples" / "home_automation" / "agent.py"
    request = json.dumps({"paths": [str(agent_file.parent)], "agent": f"{agent_file}:root_agent"})
    with WebhookReceiver() as receiver:
        stack = _deployed_stack(tmp_path, {"AGENT_EVAL_ALERT_WEBHOOK": receiver.url})
        try:
            first = stack.run("deployment", "run", "agent-eval/on-demand", "--param", f"request={request}", "--watch")
            assert first.returncode == 0, first.stdout[-2000:]
            assert receiver.bodies() == []
            _make_worse(agent_file)
            second = stack.run("deployment", "run", "agent-eval/on-demand", "--param", f"request={request}", "--watch")
            assert second.returncode == 0, second.stdout[-2000:]
        finally:
            stack.stop()
        [body] = _wait_for_post(receiver, timeout=30)
    alert = json.loads(body)
    assert alert["regressed"] is True
    assert "home_automation_demo/turn_off_bedroom_device" in alert["flipped_to_failing"]
    assert "response_match_score" in alert["regressed_metrics"]
    assert alert["text"].startswith(":rotating_light: agent-eval regression in home_automation_demo")
    with Session(get_engine(f"sqlite:///{tmp_path / 'store.db'}")) as session:
        runs = session.exec(select(Run).order_by(col(Run.started_at))).all()
        assert [(r.status, r.regressed) for r in runs] == [("completed", None), ("completed", True)]
        assert runs[1].baseline_run_id == runs[0].id


def _wait_for_post(receiver: WebhookReceiver, timeout: float) -> list[bytes]:
    deadline = time.monotonic() + timeout
    while not receiver.bodies() and time.monotonic() < deadline:
        time.sleep(0.2)
    return receiver.bodies()


def _deployed_stack(tmp_path: Path, extra_env: dict[str, str]) -> PrefectStack:
    db_url = f"sqlite:///{tmp_path / 'store.db'}"
    env = {"AGENT_EVAL_DB_URL": db_url, "AGENT_EVAL_HOME": str(tmp_path / "ae"), **extra_env}
    stack = PrefectStack.start(tmp_path, env)
    for command in (("work-pool", "create", POOL, "--type", "process"),
                    ("deploy", "--all", "--prefect-file", "deployments/prefect.yaml", "--no-prompt")):  # fmt: skip
        done = stack.run(*command)
        assert done.returncode == 0, done.stdout + done.stderr
    stack.spawn([PREFECT, "worker", "start", "--pool", POOL], "worker.log")
    return stack


def _make_worse(agent_file: Path) -> None:
    """The switch confirmation becomes a curt 'Done.': response_match_score drops on every switch case."""
    source = agent_file.read_text(encoding="utf-8")
    worse = source.replace(
        '''return f"OK. I've turned {status.lower()} {device_id} in the {location}."''', 'return "Done."'
    )
    assert worse != source
    agent_file.write_text(worse, encoding="utf-8")


def test_retrying_a_failed_flow_run_reuses_the_cached_invocations(stack: PrefectStack, tmp_path: Path) -> None:
    """Prefect's Retry (here `prefect flow-run retry`) on a flow run that failed (a regression with
    `fail_on_regression`) runs the flow again without invoking the agent: every invocation is in the cache.
    On the module's stack: this test's runs are those of its own copy of the agent."""
    project = tmp_path / "project"
    shutil.copytree(REPO_ROOT / "examples", project / "examples")
    agent_file = project / "examples" / "home_automation" / "agent.py"
    calls = tmp_path / "calls.log"
    _count_calls(agent_file, calls)
    config = {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8},
              "regression": {"fail_on_regression": True}}  # fmt: skip
    agent = f"{agent_file}:root_agent"
    request = json.dumps({"paths": [str(agent_file.parent)], "agent": agent, "config": config})
    first = stack.run("deployment", "run", "agent-eval/on-demand", "--param", f"request={request}", "--watch")
    assert first.returncode == 0, first.stdout[-2000:]
    _make_worse(agent_file)
    stack.run("deployment", "run", "agent-eval/on-demand", "--param", f"request={request}", "--watch")
    failed_flow_run = _runs(stack.home, agent)[1].flow_run_id
    invoked = len(calls.read_text(encoding="utf-8").splitlines())
    assert invoked > 2 * 33  # both runs invoked the agent on every turn (the code changed in between)

    retried = stack.run("flow-run", "retry", str(failed_flow_run))
    assert retried.returncode == 0, retried.stdout + retried.stderr
    runs = _wait_for_runs(stack.home, 3, timeout=120, agent=agent)

    assert [run.regressed for run in runs] == [None, True, False]
    assert runs[2].flow_run_id == failed_flow_run
    assert runs[2].status == "completed" and runs[2].total == 33
    assert len(calls.read_text(encoding="utf-8").splitlines()) == invoked  # the retry invoked nothing


def _count_calls(agent_file: Path, log: Path) -> None:
    """Wrap the copied demo agent so that every turn appends a line to `log`."""
    wrapper = f"""

_counted_agent = root_agent


def root_agent(message, session):  # type: ignore[no-redef]
    with open({str(log)!r}, "a", encoding="utf-8") as calls:
        calls.write(message.replace("\\n", " ") + "\\n")
    return _counted_agent(message, session)
"""
    agent_file.write_text(agent_file.read_text(encoding="utf-8") + wrapper, encoding="utf-8")


def _runs(home: Path, agent: str | None = None) -> list[Run]:
    """The runs in the store of the module's stack (the default one of its `AGENT_EVAL_HOME`, `home / "ae"`),
    oldest first (of `agent` only, when given)."""
    with Session(get_engine(f"sqlite:///{home / 'ae' / 'agent_eval.db'}")) as session:
        runs = session.exec(select(Run).order_by(col(Run.started_at))).all()
        return [run for run in runs if agent is None or run.agent_reference == agent]


def _wait_for_runs(home: Path, count: int, timeout: float, agent: str | None = None) -> list[Run]:
    """The runs once the last one is compared with its baseline (stored after the run is `completed`)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = _runs(home, agent)
        if len(runs) >= count and runs[-1].status != "running" and runs[-1].regressed is not None:
            return runs
        time.sleep(1)
    raise TimeoutError(f"fewer than {count} finished, compared runs after {timeout} s: {_runs(home, agent)}")
