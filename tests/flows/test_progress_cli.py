"""Live progress of `agent-eval run` on stderr (not a terminal: status lines), and `-q`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent_eval.cli import main
from tests.flows.helpers import write_echo_set

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_server")]

AGENT = "tests.flows.agents_for_tests:echo_agent"
STATUS = re.compile(r"agent-eval: (\d+)/3 case runs \((\d+) invoked, (\d+) cached, (\d+) failed\) · criteria (\d)/2 · ")


def test_run_shows_its_id_then_status_lines_and_q_silences_them(
    tmp_path: Path, sqlite_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_EVAL_PROGRESS_INTERVAL", "0.02")
    eval_file, _ = write_echo_set(tmp_path, ["alpha", "beta", "gamma"])

    assert main(["run", str(eval_file), "--agent", AGENT, "--db-url", sqlite_url]) == 0
    err = capsys.readouterr().err.splitlines()
    start = [line for line in err if line.startswith("agent-eval: run ")]
    assert len(start) == 1
    assert re.fullmatch(r"agent-eval: run [0-9a-f]{32} · 3 case runs × 2 criteria( · http\S+)?", start[0])
    statuses = [STATUS.match(line) for line in err if STATUS.match(line)]
    assert statuses, err
    for status in statuses:  # every line adds up: done = invoked + cached + failed, nothing failed
        done, invoked, cached, failed, _ = (int(value) for value in status.groups())
        assert (done, failed) == (invoked + cached, 0)
    assert max(int(status.group(1)) for status in statuses) <= 3

    assert main(["run", str(eval_file), "--agent", AGENT, "--db-url", sqlite_url, "-q"]) == 0
    quiet = capsys.readouterr().err
    assert "agent-eval: run " not in quiet and not STATUS.search(quiet)
