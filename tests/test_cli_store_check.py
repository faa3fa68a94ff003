"""The store is checked before anything else: a bad store URL is one line, exit 2 (a URL that cannot be used)
or 4 (a server that cannot be reached), within seconds, its password never printed, nothing run or written."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from agent_eval.cli import main
from agent_eval.store import engine as engine_module
from agent_eval.store.engine import check_store, get_engine


@pytest.mark.parametrize(
    "bad",
    [
        ("notadb://x", 2, "the store URL 'notadb://x' cannot be used: Can't load plugin: sqlalchemy.dialects:notadb"),
        (
            "postgresql://postgres:hunter2@127.0.0.1:1/x",
            4,
            "cannot reach the store at 'postgresql://postgres:***@127.0.0.1:1/x': connection failed:",
        ),
        pytest.param(
            (
                "postgresql://postgres@127.0.0.1:5432/agent_eval_no_such_database",
                2,
                "cannot open the store at 'postgresql://postgres@127.0.0.1:5432/agent_eval_no_such_database'"
                ': connection failed: connection to server at "127.0.0.1", port 5432 failed: FATAL:  database '
                '"agent_eval_no_such_database" does not exist',
            ),
            marks=pytest.mark.postgres,
        ),
    ],
    ids=["unknown-scheme", "refused-port", "missing-database"],
)
@pytest.mark.parametrize("command", [["run", "EVAL"], ["history"], ["show", "abc"]], ids=["run", "history", "show"])
def test_a_bad_store_url_is_one_line_before_anything_runs(
    bad: tuple[str, int, str], command: list[str], demo_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, code, expected = bad
    arguments = [str(demo_dir) if part == "EVAL" else part for part in command]
    started = time.monotonic()

    exit_code = main([*arguments, "--db-url", url])

    captured = capsys.readouterr()
    assert exit_code == code
    assert captured.out == ""
    assert captured.err.splitlines() == [captured.err.strip()]
    assert captured.err.startswith(f"agent-eval: error: {expected}")
    assert "hunter2" not in captured.err
    assert time.monotonic() - started < 10


def test_a_store_in_a_folder_that_cannot_be_created_is_bad_input(
    tmp_path: Path, demo_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder", encoding="utf-8")

    exit_code = main(["run", str(demo_dir), "--db-url", f"sqlite:///{blocker / 'store.db'}"])

    assert exit_code == 2
    assert capsys.readouterr().err.strip() == (
        f"agent-eval: error: cannot create the store {str(blocker / 'store.db')!r}: {blocker} is not a writable folder"
    )


def test_a_command_opens_its_store_once_though_the_cli_and_the_api_both_check_it(
    tmp_path: Path, demo_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    get_engine(url)  # an existing store: checking it opens and migrates it
    opened: list[str] = []
    real = engine_module._opened_store

    def counting(raw: str) -> Engine | None:
        opened.append(raw)
        return real(raw)

    monkeypatch.setattr(engine_module, "_opened_store", counting)

    code = main(["run", str(demo_dir), "--agent", "no_such_module_xyz:agent", "--db-url", url])

    assert code == 2 and "cannot import 'no_such_module_xyz'" in capsys.readouterr().err  # after the API's check
    assert opened == [url]  # it was [url, url]: the CLI's check, then the API's
    check_store(url)
    check_store(url)
    assert opened == [url, url, url]  # outside a command every call checks: the store may have gone away
