"""The package's layer contracts (`[tool.importlinter]` in pyproject.toml): kept by the code, and able to fail."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint_imports(cwd: Path, package_root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(package_root)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_package_keeps_every_contract() -> None:
    done = _lint_imports(REPO, REPO)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "Contracts: 4 kept, 0 broken." in done.stdout


def test_an_upward_import_and_a_cycle_break_the_contracts(tmp_path: Path) -> None:
    """A copy of the package where the results model imports a renderer, `plan` imports a flow and the console
    renderer imports the HTML sections (which import it): the layers contract names both upward imports, the
    acyclic contract the loop."""
    shutil.copytree(REPO / "agent_eval", tmp_path / "agent_eval", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    results = tmp_path / "agent_eval" / "results" / "model.py"
    results.write_text(results.read_text() + "\nfrom agent_eval.render import console  # noqa\n")
    plan = tmp_path / "agent_eval" / "plan" / "eval_plan.py"
    plan.write_text(plan.read_text() + "\nfrom agent_eval.flows import evaluate  # noqa\n")
    console = tmp_path / "agent_eval" / "render" / "console.py"
    console.write_text(console.read_text() + "\nfrom agent_eval.render import html_sections  # noqa\n")

    done = _lint_imports(tmp_path, tmp_path)

    assert done.returncode == 1
    assert "The DAG's stages import downward only BROKEN" in done.stdout
    assert "agent_eval.results is not allowed to import agent_eval.render" in done.stdout
    assert "agent_eval.plan is not allowed to import agent_eval.flows" in done.stdout
    assert "No cycles are allowed in agent_eval.render." in done.stdout
    assert "Contracts: 2 kept, 2 broken." in done.stdout
