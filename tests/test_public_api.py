"""The public API: one import path (`from agent_eval import ...`) for what the README teaches, the README,
docs, examples and deployment scripts import nothing but public names, and every internal module says so."""

from __future__ import annotations

import ast
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
PUBLIC_FACES = {"__init__.py", "api.py", "testing.py"}
"""The top-level modules of `agent_eval` not marked internal: the package and the homes of its API."""
TAUGHT = {
    "evaluate", "aevaluate", "rerun", "arerun", "rescore", "arescore",
    "load_eval_set", "load_eval_sets", "load_eval_config",
    "RunReport", "CaseResult", "MetricResult", "EvalConfig", "EvalSet", "EvaluationResult", "PerInvocationResult",
    "metrics_table", "summary_metrics", "report_json", "format_summary", "write_outputs", "write_html", "write_junit",
    "metric", "invocation_metric", "CustomMetric", "register_custom_metric", "REGISTRY",
    "history", "show", "assert_eval_passes", "Agent", "AgentSession", "AgentTurn", "ToolCallRecord", "GenaiAgent",
}  # fmt: skip
IMPORT = re.compile(
    r"^\s*(?:from\s+(agent_eval[\w.]*)\s+import\s+(\([^)]*\)|[^\n]*)|import\s+(agent_eval[\w.]*))", re.M
)


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


def _imports_in(path: Path) -> list[tuple[str, str]]:
    """(module, name) of each `agent_eval` import of a Python file, or of a page's Python blocks and inline code;
    the name is "" for `import agent_eval...`."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".md":
        text = "\n".join(re.findall(r"```python\n(.*?)```", text, re.S) + re.findall(r"`([^`\n]+)`", text))
    imports: list[tuple[str, str]] = []
    for match in IMPORT.finditer(text):
        if match.group(3):
            imports.append((match.group(3), ""))
        else:
            names = re.findall(r"(\w+)(?:\s+as\s+\w+)?", re.sub(r"#.*", "", match.group(2)))
            imports += [(match.group(1), name) for name in names]
    return imports


def _imports(files: list[Path]) -> set[tuple[str, str, str]]:
    return {(path.relative_to(REPO).as_posix(), *found) for path in files for found in _imports_in(path)}


def test_readme_docs_and_examples_import_only_names_the_package_exports() -> None:
    files = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "examples").rglob("*.py"))]
    imported = _imports(files)
    assert ("examples/home_automation/agent.py", "agent_eval", "AgentTurn") in imported  # the scan sees real imports
    assert ("README.md", "agent_eval", "GenaiAgent") in imported  # and inline code
    public = {("agent_eval", ""), *(("agent_eval", name) for name in agent_eval.__all__)}
    assert sorted(found for found in imported if found[1:] not in public) == []


def test_deployments_import_only_public_modules() -> None:
    """Deployment scripts are extension work: they may also import a stage subpackage's `__all__`."""
    files = sorted((REPO / "deployments").glob("*.md")) + sorted((REPO / "deployments").rglob("*.py"))
    imported = _imports(files)
    assert ("deployments/setup_alerts.py", "agent_eval.compare", "setup_alerts") in imported
    assert sorted(found for found in imported if found[1] not in PUBLIC_MODULES) == []


def test_every_subpackage_and_internal_module_says_it_is_internal() -> None:
    """The docstring of every subpackage (covering the modules inside it) and of every top-level module but the
    public faces says `Internal`."""
    package = REPO / "agent_eval"
    marked = [path for path in package.glob("*.py") if path.name not in PUBLIC_FACES]
    marked += [path for path in package.rglob("__init__.py") if path.parent != package]
    assert len(marked) > 20  # the scan sees the package: its root modules and every subpackage
    assert {package / room / "__init__.py" for room in ("cli", "runtime", "plan", "results")} <= set(marked)
    unmarked = {
        path.relative_to(package).as_posix()
        for path in marked
        if "Internal" not in (ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or "")
    }
    assert sorted(unmarked) == []


def test_a_moved_module_still_imports_by_its_old_path_with_a_deprecation_warning() -> None:
    """The root was regrouped by role; an old path gives the very module at the new path (so a monkeypatch through
    either reaches the code), a moved package's submodules included, and warns once per old path."""
    code = (
        "import warnings, sys\n"
        "warnings.simplefilter('always')\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    import agent_eval.aggregate as old\n"
        "    from agent_eval.warm.client import run_in_warm_process\n"
        "    from agent_eval.request import EvalRequest\n"
        "import agent_eval.results.aggregate as new\n"
        "import agent_eval.runtime.warm.client as client\n"
        "import agent_eval.plan.request as request\n"
        "print(old is new, run_in_warm_process is client.run_in_warm_process, EvalRequest is request.EvalRequest)\n"
        "print(sys.modules['agent_eval.warm.client'] is client)\n"
        "for w in caught: print(w.category.__name__, w.message)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    lines = done.stdout.splitlines()
    assert lines[:2] == ["True True True", "True"]
    assert lines[2:] == [
        "DeprecationWarning agent_eval.aggregate has moved to agent_eval.results.aggregate; the old path will be "
        "removed in a later release",
        "DeprecationWarning agent_eval.warm has moved to agent_eval.runtime.warm; the old path will be removed in a "
        "later release",
        "DeprecationWarning agent_eval.warm.client has moved to agent_eval.runtime.warm.client; the old path will be "
        "removed in a later release",
        "DeprecationWarning agent_eval.request has moved to agent_eval.plan.request; the old path will be removed in "
        "a later release",
    ]


def test_the_public_names_are_listed_once_and_typed() -> None:
    """`__all__` is the package's `TYPE_CHECKING` imports, each an explicit re-export (`Name as Name`)."""
    source = (REPO / "agent_eval" / "__init__.py").read_text(encoding="utf-8")
    imported = re.findall(r"^    from agent_eval[\w.]* import (\w+) as (\w+)$", source, re.M)
    assert imported and all(name == alias for name, alias in imported)
    assert sorted(alias for _, alias in imported) == agent_eval.__all__
    assert "__all__ = [" not in source
