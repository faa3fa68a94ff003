"""One store, whatever the entry point (issue 33, item 1): with `AGENT_EVAL_HOME` set and no store named, `run`
stores in `$AGENT_EVAL_HOME/agent_eval.db` and says so, `history` reads that store (and says so on a
terminal), and `--help` states the rule and what it names here."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from agent_eval.cli import main
from tests.flows.helpers import write_echo_set
from tests.store.conftest import fresh_postgres_database

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_server")]


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A new PostgreSQL database on the local server (trust auth: a password in the URL is accepted, unused)."""
    with fresh_postgres_database() as url:
        yield url


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


def test_a_run_records_the_store_it_wrote_to_with_its_password_hidden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], postgres_url: str
) -> None:
    """The run row, `show --json` and the `report.json` of `--output-dir` name the store (issue 33, item 1), with a
    password in the URL replaced by `***` (the store holds no secret)."""
    monkeypatch.setenv("AGENT_EVAL_HOME", str(tmp_path / "home"))
    with_password = postgres_url.replace("postgres@", "postgres:hunter2@", 1)
    shown = postgres_url.replace("postgres@", "postgres:***@", 1)
    eval_file, _ = write_echo_set(tmp_path, ["alpha"])
    out_dir = tmp_path / "out"
    argv = ["run", str(eval_file), "--agent", "tests.flows.agents_for_tests:echo_agent", "-q"]

    assert main([*argv, "--db-url", with_password, "--output-dir", str(out_dir)]) == 0
    run_id = capsys.readouterr().out.split()[2]

    assert json.loads((out_dir / "report.json").read_text())["store"] == shown
    assert main(["show", run_id, "--json", "--db-url", with_password]) == 0
    assert json.loads(capsys.readouterr().out)["store"] == shown
    with create_engine(postgres_url).connect() as connection:
        stored = connection.execute(text("SELECT store_url FROM runs WHERE id = :id"), {"id": run_id}).scalar_one()
    assert stored == shown
    assert "hunter2" not in (out_dir / "report.json").read_text()
