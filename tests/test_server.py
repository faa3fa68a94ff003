"""The local Prefect server that runs reuse: which server a run picks, and a real one started, reused by a run,
reported and stopped by `agent-eval server`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_eval.errors import EvalInputError
from agent_eval.runtime import server
from agent_eval.runtime.processes import process_alive
from tests.flows.helpers import write_echo_set
from tests.prefect_http import prefect_api

AGENT = "tests.flows.agents_for_tests:echo_agent"
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def no_server_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Nothing configured: no API URL (the test process has Prefect imported, so its settings are read)."""
    for name in ("PREFECT_API_URL", "CI", server.SERVER_MODE_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(server, "configured_api_url", lambda: None)


@pytest.mark.usefixtures("no_server_settings")
def test_a_workstation_uses_the_local_server_and_ci_the_temporary_one(monkeypatch: pytest.MonkeyPatch) -> None:
    assert server.server_mode() == "local"
    monkeypatch.setenv("CI", "true")
    assert server.server_mode() == "ephemeral"
    monkeypatch.setenv("CI", "false")
    assert server.server_mode() == "local"
    monkeypatch.setenv(server.SERVER_MODE_ENV, "ephemeral")
    assert server.server_mode() == "ephemeral"
    monkeypatch.setenv(server.SERVER_MODE_ENV, "remote")
    with pytest.raises(EvalInputError) as raised:
        server.server_mode()
    assert str(raised.value) == "AGENT_EVAL_PREFECT_SERVER='remote' is not valid: one of 'local', 'ephemeral'"


def test_a_configured_api_url_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server, "configured_api_url", lambda: "http://prefect.example:4200/api")
    monkeypatch.setenv("CI", "true")
    assert server.server_mode() == "configured"


def test_the_active_profiles_api_url_is_read_without_prefect(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "profiles.toml").write_text(
        'active = "team"\n[profiles.team]\nPREFECT_API_URL = "http://10.0.0.5:4200/api"\n[profiles.other]\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path))
    monkeypatch.delenv("PREFECT_PROFILE", raising=False)
    assert server._profile_api_url() == "http://10.0.0.5:4200/api"
    monkeypatch.setenv("PREFECT_PROFILE", "other")
    assert server._profile_api_url() is None


def _cli(args: list[str], env: dict[str, str], cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "agent_eval.cli", *args]
    return subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=240, check=False)


def _flow_run_names(api_url: str) -> list[str]:
    return [run["name"] for run in prefect_api(f"{api_url}/flow_runs/filter", {})]


def test_runs_reuse_one_local_server_that_outlives_them(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if key not in ("PREFECT_API_URL", "CI", "AGENT_EVAL_DB_URL")}
    env.update(
        AGENT_EVAL_HOME=str(tmp_path / "home"),
        PREFECT_HOME=str(tmp_path / "prefect"),
        AGENT_EVAL_PREFECT_SERVER="local",
        PYTHONPATH=str(REPO),
    )
    eval_file, _ = write_echo_set(tmp_path, ["alpha", "beta"])
    store = f"sqlite:///{tmp_path / 'store.db'}"
    try:
        first = _cli(["run", str(eval_file), "--agent", AGENT, "--db-url", store], env)
        assert first.returncode == 0, first.stderr
        state = json.loads((tmp_path / "home" / "prefect-server.json").read_text())
        assert f"started a local Prefect server for this and later runs: UI http://127.0.0.1:{state['port']}" in (
            first.stderr
        )
        second = _cli(["run", str(eval_file), "--agent", AGENT, "--db-url", store], env)
        assert second.returncode == 0, second.stderr
        assert "started a local Prefect server" not in second.stderr
        assert json.loads((tmp_path / "home" / "prefect-server.json").read_text()) == state  # the same server
        assert process_alive(state["pid"])  # it outlives the runs that used it
        api_url = f"http://127.0.0.1:{state['port']}/api"
        assert len(_flow_run_names(api_url)) >= 2  # both flow runs are in its history
        server_env = _environment_of(state["pid"])
        assert server_env["PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_BATCH_SIZE"] == "500"
        assert server_env["PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_FLUSH_INTERVAL"] == "1"
        # written in batches, every case run's task run still reaches the history within the flush interval
        assert _completed_invocations(api_url, wait_for=4) == sorted(["invoke alpha #0", "invoke beta #0"] * 2)
        status = _cli(["server", "status"], env).stdout.splitlines()
        assert status[0] == f"Running: local Prefect server, UI http://127.0.0.1:{state['port']}"
        assert status[1] in ("No warm process runs", f"Running: the warm process, pid {_warm_pid(tmp_path)}")
        assert status[2:] == [  # the store and the Prefect API a run from this shell uses (issue 33)
            f"Store: sqlite:///{tmp_path / 'home' / 'agent_eval.db'}",
            f"Prefect API for runs: {api_url} (the local server)",
        ]
    finally:
        stopped = _cli(["server", "stop"], env)
    assert stopped.stdout.strip().startswith("Stopped the local Prefect server")
    assert not process_alive(state["pid"])
    log = (tmp_path / "home" / "prefect-server.log").read_text(encoding="utf-8").splitlines()
    assert log[-1] == "stopped"  # it stopped cleanly on SIGTERM (its own last line), not killed after the grace time
    assert not (tmp_path / "home" / "prefect-server.json").exists()
    assert _cli(["server", "status"], env).stdout.splitlines() == [
        "No local Prefect server runs",
        "No warm process runs",
        f"Store: sqlite:///{tmp_path / 'home' / 'agent_eval.db'}",
        "Prefect API for runs: the local server, started by the next run",
    ]


def _environment_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().partition("=")[::2] for item in raw if item)


def _completed_invocations(api_url: str, wait_for: int, timeout: float = 10.0) -> list[str]:
    """The names of the completed `invoke-case` task runs, once there are `wait_for` (or the timeout passed)."""
    body = {"task_runs": {"name": {"like_": "invoke "}, "state": {"type": {"any_": ["COMPLETED"]}}}}
    deadline = time.monotonic() + timeout
    while True:
        names = sorted(run["name"] for run in prefect_api(f"{api_url}/task_runs/filter", body))
        if len(names) >= wait_for or time.monotonic() > deadline:
            return names
        time.sleep(0.25)


def _warm_pid(tmp_path: Path) -> int | None:
    """The warm process the first run started when it ended (still importing, or listening)."""
    state = tmp_path / "home" / "warm.json"
    return int(json.loads(state.read_text())["pid"]) if state.exists() else None


def test_a_state_file_naming_another_process_is_stale(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AGENT_EVAL_HOME", str(tmp_path))
    (tmp_path / "prefect-server.json").write_text(
        json.dumps({"pid": os.getpid(), "pgid": os.getpgid(0), "port": 4200, "started_at": 0.0}), encoding="utf-8"
    )
    assert server.local_server_status() is None  # this pytest process is alive, but it is no Prefect server
    assert not (tmp_path / "prefect-server.json").exists()


@pytest.mark.usefixtures("no_server_settings")
def test_the_temporary_servers_libraries_stay_off_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    """A child started inside an ephemeral run (as Prefect starts its temporary server) prints no SQLAlchemy
    ERROR, even where Prefect's console handler was set to WARNING (as this suite does, which is how the
    shutdown traceback once reached the demo's stderr); the settings are restored after the run."""
    monkeypatch.setenv(server.SERVER_MODE_ENV, "ephemeral")
    monkeypatch.setenv("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "WARNING")
    monkeypatch.delenv("PREFECT_LOGGING_ROOT_LEVEL", raising=False)
    log_as_the_server_does_at_exit = (
        "import logging, sqlalchemy; from prefect.logging.configuration import setup_logging; setup_logging(); "
        "logging.getLogger('sqlalchemy.pool.impl.AsyncAdaptedQueuePool').error('Exception during reset'); "
        "logging.getLogger('prefect.server').critical('still shown')"
    )
    probe = [sys.executable, "-c", log_as_the_server_does_at_exit]

    with server.flow_server():
        child = subprocess.run(probe, capture_output=True, text=True, check=True, timeout=60)
    assert "Exception during reset" not in child.stderr
    assert "still shown" in child.stderr
    assert os.environ["PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"] == "WARNING"
    assert "PREFECT_LOGGING_ROOT_LEVEL" not in os.environ

    outside = subprocess.run(probe, capture_output=True, text=True, check=True, timeout=60)
    assert "Exception during reset" in outside.stderr  # the probe can fail: outside a run the ERROR shows


@pytest.mark.usefixtures("no_server_settings")
def test_the_temporary_server_writes_task_runs_in_batches_unless_the_user_chose(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Prefect's temporary server (a child started inside the run) inherits the recorder's batch settings; a
    value the user set wins; the run's environment is restored after."""
    monkeypatch.setenv(server.SERVER_MODE_ENV, "ephemeral")
    batch, flush = server.RECORDER_BATCH_DEFAULTS  # the setting names
    monkeypatch.setenv(flush, "3")
    monkeypatch.delenv(batch, raising=False)
    probe = [sys.executable, "-c", f"import os; print(os.environ.get({batch!r}), os.environ.get({flush!r}))"]

    with server.flow_server():
        child = subprocess.run(probe, capture_output=True, text=True, check=True, timeout=60)
    assert child.stdout.split() == ["500", "3"]
    assert batch not in os.environ
    assert os.environ[flush] == "3"


HEALTHY_SERVER = """
import http.server, sys
class Healthy(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"true")
    def log_message(self, *args):
        pass
httpd = http.server.HTTPServer(("127.0.0.1", 0), Healthy)
print(httpd.server_address[1], flush=True)
httpd.serve_forever()
"""


def test_a_health_answer_counts_only_from_the_servers_own_process() -> None:
    """Two homes starting a server at once can pick the same free port; the one that loses the port must not
    take the other's health answer for its own (it would report runs to another home's server)."""
    other = subprocess.Popen(
        [sys.executable, "-c", HEALTHY_SERVER], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    ours = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        assert other.stdout is not None
        port = int(other.stdout.readline())
        theirs = server.LocalServer(pid=other.pid, pgid=other.pid, port=port, started_at=0.0)
        impostor = server.LocalServer(pid=ours.pid, pgid=ours.pid, port=port, started_at=0.0)
        assert server._answers(theirs, timeout=5.0)
        assert not server._answers(impostor, timeout=1.0)  # healthy answers on its port, but not from it
        ours.kill()
        ours.wait()
        started = time.monotonic()
        assert not server._answers(impostor, timeout=30.0)  # and a dead server is not waited for
        assert time.monotonic() - started < 1.0
    finally:
        other.kill()
        ours.kill()
