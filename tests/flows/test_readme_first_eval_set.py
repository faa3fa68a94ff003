"""The README's first eval set, run as its first screen says: the JSON block saved as written, the command as
written (its `--agent` resolved from the repository root), both cases passing with exit 0."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from agent_eval.cli import main
from tests.conftest import REPO_ROOT

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_server")]

SECTION = (REPO_ROOT / "README.md").read_text(encoding="utf-8").split("### Your first eval set\n", 1)[1]


def test_the_first_eval_set_passes_with_the_command_the_readme_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    eval_set = json.loads(re.search(r"```json\n(.*?)```", SECTION, re.S).group(1))  # type: ignore[union-attr]
    command = re.search(r"```bash\n(.*?)```", SECTION, re.S).group(1).strip()  # type: ignore[union-attr]
    assert SECTION.index("```json") < SECTION.index("```bash") < SECTION.index("### The tests")
    (tmp_path / "first.evalset.json").write_text(json.dumps(eval_set), encoding="utf-8")
    program, *arguments = shlex.split(command)
    assert program == ".venv/bin/agent-eval"
    arguments = [
        str(tmp_path / a) if a == "first.evalset.json" else str(REPO_ROOT / a) if a.startswith("examples/") else a
        for a in arguments
    ]
    monkeypatch.chdir(REPO_ROOT)

    code = main([*arguments, "--db-url", f"sqlite:///{tmp_path / 'store.db'}", "-q"])

    out = capsys.readouterr().out
    assert code == 0, out
    assert [case["eval_id"] for case in eval_set["eval_cases"]] == ["turn_off_bedroom_device", "device_status_query"]
    assert "Total: 2  Passed: 2  Failed: 0  Pass rate: 100.0%" in out.splitlines()
