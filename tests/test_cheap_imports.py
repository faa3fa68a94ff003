"""`import agent_eval`, `agent-eval --help` and input errors answer without importing Prefect, nltk or scipy
(issue: the everyday loop; `import prefect` alone costs ~1 s, nltk with scipy ~1.5 s)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("prefect", "nltk", "scipy", "alembic")
PROBE = """
import sys
{body}
heavy = sorted({{m.split(".")[0] for m in sys.modules}} & set({heavy!r}))
print("HEAVY=" + ",".join(heavy))
"""


def _heavy_modules_after(body: str, cwd: Path) -> tuple[list[str], str]:
    code = PROBE.format(body=body, heavy=HEAVY)
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, check=True)
    line = next(line for line in done.stdout.splitlines() if line.startswith("HEAVY="))
    return [name for name in line.removeprefix("HEAVY=").split(",") if name], done.stderr


def test_importing_the_package_and_the_cli_is_cheap(tmp_path: Path) -> None:
    heavy, _ = _heavy_modules_after("import agent_eval, agent_eval.cli, agent_eval.agents, agent_eval.io", tmp_path)
    assert heavy == []


def test_public_names_are_imported_on_first_use(tmp_path: Path) -> None:
    heavy, _ = _heavy_modules_after("import agent_eval; agent_eval.EvalSet; agent_eval.load_eval_set", tmp_path)
    assert heavy == []
    with pytest.raises(AttributeError, match="module 'agent_eval' has no attribute 'nope'"):
        import agent_eval

        agent_eval.nope  # noqa: B018


def test_help_imports_nothing_heavy(tmp_path: Path) -> None:
    body = "from agent_eval.cli import main\ntry:\n    main(['run', '--help'])\nexcept SystemExit:\n    pass"
    heavy, _ = _heavy_modules_after(body, tmp_path)
    assert heavy == []


@pytest.mark.parametrize(
    ("file_text", "message"),
    [
        (None, "agent-eval: error: missing.evalset.json: no such file or directory"),
        ("{", "agent-eval: error: bad.evalset.json: invalid JSON at line 1 column 2"),
    ],
)
def test_input_errors_answer_without_prefect(tmp_path: Path, file_text: str | None, message: str) -> None:
    name = "missing.evalset.json" if file_text is None else "bad.evalset.json"
    if file_text is not None:
        (tmp_path / name).write_text(file_text, encoding="utf-8")
    store = json.dumps(f"sqlite:///{tmp_path / 'store.db'}")
    body = f"from agent_eval.cli import main\nprint('EXIT', main(['run', {name!r}, '--db-url', {store}]))"
    heavy, stderr = _heavy_modules_after(body, tmp_path)
    assert stderr.startswith(message)
    assert [name for name in heavy if name != "alembic"] == []  # a new store is migrated before the file is read
