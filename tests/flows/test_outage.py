"""An evaluation that could not reach its agent is an outage, not a result: with the agent's server down from
the start nothing runs (exit 4, one line, nothing stored); with the server killed mid-run the run is stored
`errored`, is not compared with its baseline (no false regression), and the CLI exits 4 with the count and the
first cause."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from agent_eval.cli import main
from agent_eval.store import get_engine, get_run, list_runs
from tests.agents.http_servers import _handler_class, _Routes, serve
from tests.fakes.listening import FakeHTTPServer
from tests.flows.helpers import write_echo_set

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_server")]

CASES = 20


def _echo(body: dict[str, Any]) -> dict[str, Any]:
    """What `write_echo_set`'s cases expect."""
    prompt = body["prompt"]
    return {"response": f"answer: {prompt}", "trajectory": [{"tool_name": "lookup", "tool_input": {"query": prompt}}]}


class DyingServer:
    """A JSON agent endpoint that answers `answers` POSTs, then stops listening (connections refused)."""

    def __init__(self, answers: int) -> None:
        self.answers, self.served = answers, 0
        self._lock = threading.Lock()
        self.server = FakeHTTPServer(("127.0.0.1", 0), _handler_class(_Routes(self.handle)))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/agent"

    def handle(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        del path
        if method != "POST":
            return 200, {}
        with self._lock:
            self.served += 1
            dying = self.served > self.answers
        if dying:
            threading.Thread(target=self.stop, daemon=True).start()
            return 503, {"error": "going away"}
        return 200, _echo(body)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def dying_server(answers: int) -> Iterator[DyingServer]:
    server = DyingServer(answers)
    thread = threading.Thread(target=server.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stop()
        thread.join()


def test_an_agent_server_that_is_down_is_one_line_and_nothing_is_stored(
    tmp_path: Path, sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    eval_file, _ = write_echo_set(tmp_path, ["one", "two"])
    with dying_server(answers=0) as server:
        url = server.url
    capsys.readouterr()

    code = main(["run", str(eval_file), "--agent", url, "--db-url", sqlite_url])

    err = capsys.readouterr().err.strip()
    assert code == 4
    assert len(err.splitlines()) == 1
    assert err.startswith("agent-eval: error: ") and "127.0.0.1" in err
    assert not Path(sqlite_url.removeprefix("sqlite:///")).exists() or list_runs(get_engine(sqlite_url)) == []


def test_a_server_killed_mid_run_makes_an_errored_run_that_is_never_compared(
    tmp_path: Path, sqlite_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    eval_file, _ = write_echo_set(tmp_path, [f"case{i:02d}" for i in range(CASES)])
    with dying_server(answers=CASES) as healthy:
        assert main(["run", str(eval_file), "--agent", healthy.url, "--db-url", sqlite_url]) == 0
    (baseline,) = list_runs(get_engine(sqlite_url))
    capsys.readouterr()

    with dying_server(answers=3) as server, serve(lambda method, path, body: (200, {})) as (hook, alerts):
        monkeypatch.setenv("AGENT_EVAL_ALERT_WEBHOOK", f"{hook}/hooks/outage")
        code = main(["run", str(eval_file), "--agent", server.url, "--db-url", sqlite_url, "-q"])

    captured = capsys.readouterr()
    engine = get_engine(sqlite_url)
    errored = next(run for run in list_runs(engine) if run.id != baseline.id)
    assert code == 4
    assert errored.status == "errored"
    assert (errored.error or "").startswith(
        f"could not evaluate: {CASES - 3} of {CASES} case runs could not reach the agent (first: "
    )
    assert (errored.baseline_run_id, errored.regressed, errored.regression) == (None, None, None)
    assert "REGRESSED" not in captured.out
    assert captured.err.strip().splitlines()[-1] == f"agent-eval: error: {errored.error}"
    # one line per case run (Prefect's console, at WARNING in the tests, repeats them with its own prefix)
    failure_lines = [line for line in captured.err.splitlines() if line.startswith("agent-eval: case ")]
    assert all("could not reach the agent after 4 attempt(s): " in line for line in failure_lines)
    assert len(failure_lines) == CASES - 3
    ours = [line for line in captured.err.splitlines() if line.startswith("agent-eval: ")]
    assert ours == [*failure_lines, f"agent-eval: error: {errored.error}"]  # and no traceback of ours
    assert get_run(baseline.id, engine).status == "completed"
    (alert,) = alerts  # "could not evaluate", never a regression
    assert (alert.path, alert.body["summary"], alert.body["status"]) == ("/hooks/outage", errored.error, "errored")
