"""One store, whatever the entry point (issue 33, item 1): with `AGENT_EVAL_HOME` set and no store named, `run`
stores in `$AGENT_EVAL_HOME/agent_eval.db` and says so, `history` reads that store (and says so on a
terminal), and `--help` states the rule and what it names here."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agent_eval.cli import main
from tests.flows.helpers import write_echo_set

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_server")]


def test_run_history_and_help_name_the_one_store_of_the_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("AGENT_EVAL_HOME", str(home))
    monkeypatch.delenv("AGENT_EVAL_DB_URL", raising=False)
    store = f"sqlite:///{home / 'agent_eval.db'}"
    eval_file, _ = write_echo_set(tmp_path, ["alpha"])

    code = main(["run", str(eval_file), "--agent", "tests.flows.agents_for_tests:echo_agent", "-q"])
    out = capsys.readouterr().out
    assert code == 0
    assert f"Stored in {store}" in out.splitlines()
    run_id = out.split()[2]  # "agent-eval run <id>  eval sets: ..."

    assert main(["history", "--json"]) == 0
    assert [row["run_id"] for row in json.loads(capsys.readouterr().out)] == [run_id]

    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert main(["history"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"(runs stored in {store})"

    monkeypatch.setenv("COLUMNS", "2000")
    with pytest.raises(SystemExit):
        main(["history", "--help"])
    assert (
        "default: $AGENT_EVAL_DB_URL, else the SQLite file agent_eval.db in $AGENT_EVAL_HOME (default "
        f"~/.agent_eval); here: {store})"
    ) in capsys.readouterr().out
