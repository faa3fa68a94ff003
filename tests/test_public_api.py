"""The public API: one import path (`from agent_eval import ...`) for what the README teaches, and the README,
docs, examples and deployment scripts import nothing but public names."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import agent_eval

REPO = Path(__file__).resolve().parents[1]
PUBLIC_MODULES = {
    f"agent_eval{suffix}" for suffix in ("", ".io", ".agents", ".metrics", ".render", ".compare", ".store")
}
"""The package and the faces of its stage subpackages (for extension work); every other module is internal."""
TAUGHT = {
    "evaluate", "aevaluate", "rerun", "arerun", "rescore", "arescore",
    "load_eval_set", "load_eval_sets", "load_eval_config",
    "RunReport", "CaseResult", "MetricResult", "EvalConfig", "EvalSet", "EvaluationResult", "PerInvocationResult",
    "metrics_table", "summary_metrics", "report_json", "format_summary", "write_outputs", "write_html", "write_junit",
    "metric", "invocation_metric", "CustomMetric", "register_custom_metric", "REGISTRY",
    "history", "show", "assert_eval_passes", "Agent", "AgentSession", "AgentTurn", "ToolCallRecord",
}  # fmt: skip
IMPORT = re.compile(r"^\s*(?:from\s+(agent_eval[\w.]*)\s+import|import\s+(agent_eval[\w.]*))", re.M)


def test_everything_the_readme_teaches_comes_from_the_package() -> None:
    assert sorted(TAUGHT - set(agent_eval.__all__)) == []
    assert sorted(set(agent_eval.__all__) - set(dir(agent_eval))) == []
    for name in agent_eval.__all__:
        value = getattr(agent_eval, name)
        assert getattr(value, "__module__", "agent_eval").startswith("agent_eval"), name


def test_every_public_name_resolves_in_a_fresh_process() -> None:
    code = "import agent_eval\nfor name in agent_eval.__all__:\n    getattr(agent_eval, name)\n"
    code += "print(len(agent_eval.__all__))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout) == len(agent_eval.__all__)


def _imports_in(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".md":
        text = "\n".join(re.findall(r"```python\n(.*?)```", text, re.S))
    return [m.group(1) or m.group(2) for m in IMPORT.finditer(text)]


def test_readme_docs_examples_and_deployments_import_only_public_modules() -> None:
    files = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "deployments").glob("*.md"))]
    files += sorted((REPO / "examples").rglob("*.py")) + sorted((REPO / "deployments").rglob("*.py"))
    imported = {(path.relative_to(REPO).as_posix(), module) for path in files for module in _imports_in(path)}
    assert ("examples/home_automation/agent.py", "agent_eval") in imported  # the scan sees real imports
    assert sorted((path, module) for path, module in imported if module not in PUBLIC_MODULES) == []
