"""`tests/require_adk.py`: with AGENT_EVAL_REQUIRE_ADK=1 a skip for a missing google-adk fails, other skips stay.

Each test runs a real pytest subprocess on a small test file in which google-adk is made unimportable (a `None`
entry in `sys.modules`, as Python's import system honours it), with only this plugin loaded.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.require_adk import REQUIRE_ADK

HIDE_ADK = 'import sys\nimport pytest\nsys.modules["google.adk"] = None  # google-adk is not installed\n'
TESTS = HIDE_ADK + textwrap.dedent(
    """
    @pytest.fixture
    def adk_runner():
        pytest.importorskip("google.adk")

    def test_adk_in_the_test():
        pytest.importorskip("google.adk.evaluation.trajectory_evaluator")

    def test_adk_in_a_fixture(adk_runner):
        pass

    def test_other_module_missing():
        pytest.importorskip("no_such_module_for_agent_eval")

    def test_plain_skip():
        pytest.skip("chromium is not installed")

    def test_passes():
        assert True
    """
)
MODULE_LEVEL = HIDE_ADK + 'pytest.importorskip("google.adk")\n\ndef test_never_collected():\n    pass\n'
FAILURE_START = f"{REQUIRE_ADK}=1 but this test was skipped because google-adk is missing (could not import 'google.adk"


def run_pytest(folder: Path, source: str, switch: str | None) -> tuple[int, dict[str, tuple[str, str]]]:
    """Exit code and {test name: (outcome, message)} of a pytest subprocess on `source` with only our plugin."""
    (folder / "test_sample.py").write_text(source, encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if key != REQUIRE_ADK}
    env["PYTHONPATH"] = str(REPO_ROOT)
    if switch is not None:
        env[REQUIRE_ADK] = switch
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "tests.require_adk",
               "-q", "--junitxml=report.xml", "test_sample.py"]  # fmt: skip
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=120, check=False)
    return done.returncode, outcomes(folder / "report.xml")


def outcomes(junit_xml: Path) -> dict[str, tuple[str, str]]:
    found: dict[str, tuple[str, str]] = {}
    for case in ET.parse(junit_xml).getroot().iter("testcase"):
        child = next(iter(case), None)
        if child is None or child.tag in ("system-out", "system-err"):
            found[case.get("name", "")] = ("passed", "")
        else:
            found[case.get("name", "")] = (child.tag, child.get("message", ""))
    return found


def test_with_the_switch_only_the_adk_skips_fail(tmp_path: Path) -> None:
    code, results = run_pytest(tmp_path, TESTS, "1")

    assert code == 1
    assert {name: outcome for name, (outcome, _) in results.items()} == {
        "test_adk_in_the_test": "failure",
        "test_adk_in_a_fixture": "error",  # a fixture's failure is reported as an error, as pytest does
        "test_other_module_missing": "skipped",
        "test_plain_skip": "skipped",
        "test_passes": "passed",
    }
    assert results["test_plain_skip"][1] == "chromium is not installed"
    assert results["test_adk_in_the_test"][1].startswith(FAILURE_START + ".evaluation.trajectory_evaluator'")
    assert results["test_adk_in_a_fixture"][1].startswith("failed on setup with")
    assert 'install it with `pip install -e ".[adk]"`' in results["test_adk_in_the_test"][1]


@pytest.mark.parametrize("switch", [None, "", "0"])
def test_without_the_switch_every_skip_stays_a_skip(tmp_path: Path, switch: str | None) -> None:
    code, results = run_pytest(tmp_path, TESTS, switch)

    assert code == 0
    assert [outcome for outcome, _ in results.values()] == ["skipped", "skipped", "skipped", "skipped", "passed"]


def test_a_module_level_adk_skip_fails_its_collection(tmp_path: Path) -> None:
    code, results = run_pytest(tmp_path, MODULE_LEVEL, "1")

    assert code == 2  # pytest's "interrupted: errors during collection"
    assert [outcome for outcome, _ in results.values()] == ["error"]
    assert [message for _, message in results.values()] == ["collection failure"]


def test_a_module_level_adk_skip_is_a_skip_without_the_switch(tmp_path: Path) -> None:
    code, results = run_pytest(tmp_path, MODULE_LEVEL, None)

    assert code == 5  # pytest's "no tests ran": the only module was skipped
    assert [outcome for outcome, _ in results.values()] == ["skipped"]


def test_ci_sets_the_switch() -> None:
    lines = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert f"export {REQUIRE_ADK}=1" in lines
    assert lines.index(f"export {REQUIRE_ADK}=1") < lines.index(".venv/bin/python -m pytest -q")
