"""The command line over stored runs, in process: `run --junit --html`, a regressing run (exit 3), `rerun
--only-failed`, `rescore --config`, `report -o`, and an unknown run id (exit 2, one line on stderr)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_eval.cli import main
from agent_eval.store import get_engine, list_runs
from tests.flows import regression_agents
from tests.flows.helpers import write_echo_set

AGENT = "tests.flows.regression_agents:switchable_agent"
NAMES = ["alpha", "bravo", "charlie", "delta"]
BROKEN = ["bravo", "delta"]
TRAJECTORY, RESPONSE = "tool_trajectory_avg_score", "response_match_score"


@pytest.fixture(autouse=True)
def _quiet_env(quiet_cli_env: None) -> Iterator[None]:
    """`quiet_cli_env` for every test here; the regression agents' modes reset after each."""
    yield
    regression_agents.MODES.clear()


def _latest_run_id(url: str) -> str:
    return list_runs(get_engine(url), 1)[0].id


def _config(tmp_path: Path, name: str, criteria: dict[str, float]) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"criteria": criteria}), encoding="utf-8")
    return str(path)


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_server")
def test_run_rerun_rescore_and_report_on_stored_runs(
    tmp_path: Path, sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    eval_file, messages = write_echo_set(tmp_path, NAMES)  # with test_config.json: trajectory 1.0, response 0.8
    run = ["run", str(eval_file), "--agent", AGENT, "--db-url", sqlite_url]
    junit, html = tmp_path / "out" / "junit.xml", tmp_path / "out" / "report.html"

    # a first run, all passing, with its JUnit XML and HTML report
    assert main([*run, "--junit", str(junit), "--html", str(html)]) == 0
    first = _latest_run_id(sqlite_url)
    suites = ET.parse(junit).getroot()
    cases = suites.findall(".//testcase")
    assert len(cases) == len(NAMES)
    assert not suites.findall(".//failure") and not suites.findall(".//error")
    assert first in html.read_text(encoding="utf-8")
    assert "REGRESSED" not in capsys.readouterr().out

    # two cases call the wrong tool: exit 3, the comparison printed
    regression_agents.MODES.update({messages[name]: "wrong_tool" for name in BROKEN})
    assert main([*run, "--refresh-cache"]) == 3
    out = capsys.readouterr().out
    regressed = _latest_run_id(sqlite_url)
    assert regressed != first
    assert "REGRESSED" in out
    assert f"vs baseline {first}" in out

    # its failed cases again: still failing (from the cache), no baseline for that subset → exit 1
    assert main(["rerun", regressed, "--only-failed", "--db-url", sqlite_url]) == 1
    out = capsys.readouterr().out
    assert "Total: 2  Passed: 0  Failed: 2" in out
    assert [regression_agents.CALLS[m] for m in messages.values()] == [2, 2, 2, 2]

    # re-scored on the trajectory alone: the two cases still fail (exit 1); on the response alone: all pass (exit 0)
    trajectory_only = _config(tmp_path, "trajectory", {TRAJECTORY: 1.0})
    assert main(["rescore", regressed, "--config", trajectory_only, "--db-url", sqlite_url]) == 1
    assert "Total: 4  Passed: 2  Failed: 2" in capsys.readouterr().out
    response_only = _config(tmp_path, "response", {RESPONSE: 0.8})
    assert main(["rescore", regressed, "--config", response_only, "--db-url", sqlite_url]) == 0
    assert "Total: 4  Passed: 4  Failed: 0" in capsys.readouterr().out
    assert [regression_agents.CALLS[m] for m in messages.values()] == [2, 2, 2, 2]

    # the first run's HTML report, with the trend of its eval set over the runs since
    page = tmp_path / "first.html"
    assert main(["report", first, "-o", str(page), "--db-url", sqlite_url]) == 0
    assert capsys.readouterr().out.strip() == f"Wrote {page}"
    text = page.read_text(encoding="utf-8")
    eval_set_id = eval_file.name.removesuffix(".evalset.json")
    assert eval_set_id in text and first in text
    assert '<svg xmlns="http://www.w3.org/2000/svg"' in text
    assert 'aria-label="metric means across runs"' in text  # the trend chart, not only the bars


@pytest.mark.parametrize(
    "command",
    [
        ["rerun", "no-such-run", "--only-failed"],
        ["rescore", "no-such-run"],
        ["report", "no-such-run", "-o", "never.html"],
    ],
)
def test_an_unknown_run_id_exits_2_with_one_line(
    command: list[str],
    sqlite_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)

    code = main([*command, "--db-url", sqlite_url])

    captured = capsys.readouterr()
    assert code == 2
    assert captured.err.splitlines() == [captured.err.strip()]
    assert captured.err.startswith("agent-eval: error: no run 'no-such-run'")
    assert captured.out == ""
    assert not (tmp_path / "never.html").exists()
