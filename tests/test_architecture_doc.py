"""docs/architecture.md (and the pages beside it) name only code that exists, and its layer table follows the
import-linter layers contract in pyproject.toml."""

from __future__ import annotations

import importlib
import re
import sys
import tomllib
import warnings
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]
ARCHITECTURE = REPO / "docs" / "architecture.md"
PAGES = [ARCHITECTURE, REPO / "README.md", REPO / "docs" / "recorded.md"]

PATH = re.compile(r"(?<![\w/.-])(?:\.\./)?(agent_eval/(?:[\w-]+/)*[\w-]+\.py)\b")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
DOTTED = re.compile(r"(?<![\w.])agent_eval(?:\.\w+)+(?![\w.])")
FILE_SUFFIXES = (".db", ".json", ".log", ".py", ".md", ".toml", ".yaml")
LINK = re.compile(r"\[([^\]\n]*)\]\(([^)\s#]+)(?:#[^)]*)?\)")


def _paths(text: str) -> list[str]:
    return sorted(set(PATH.findall(text)))


def _dotted_names(text: str) -> list[str]:
    names = {name for span in CODE_SPAN.findall(text) for name in DOTTED.findall(span)}
    return sorted(name for name in names if not name.endswith(FILE_SUFFIXES))  # `agent_eval.db` is a file


def _import_quietly(name: str) -> ModuleType | None:
    """The module `name`, imported with a `DeprecationWarning` as an error (a moved module's old path warns);
    None when no module has that name."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as error:
            if error.name is not None and (name == error.name or name.startswith(error.name + ".")):
                return None
            raise
    return module


def _stale_reason(name: str) -> str | None:
    """Why the dotted name `name` names nothing (None when it is a module, or an attribute of one)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        module_name = ".".join(parts[:end])
        try:
            module = _import_quietly(module_name)
        except DeprecationWarning as warning:
            return f"{module_name} is an old module path ({warning})"
        except Exception as error:  # a module that exists but does not import is no reference to rely on
            return f"{module_name} does not import: {error!r}"
        if module is None:
            continue
        if module.__name__ != module_name:  # imported earlier under its old path, without the warning now
            return f"{module_name} is an old module path: the module is {module.__name__}"
        value: object = module
        for index in range(end, len(parts)):
            with warnings.catch_warnings():
                warnings.simplefilter("error", DeprecationWarning)
                if not hasattr(value, parts[index]):
                    return f"{'.'.join(parts[:index])} has no attribute {parts[index]!r}"
                value = getattr(value, parts[index])
        return None
    return "no such module"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(REPO).as_posix())
def test_every_named_file_exists(page: Path) -> None:
    missing = [path for path in _paths(page.read_text(encoding="utf-8")) if not (REPO / path).is_file()]
    assert missing == [], f"{page.name} names files that do not exist: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(REPO).as_posix())
def test_every_dotted_name_imports_without_a_deprecation(page: Path) -> None:
    names = _dotted_names(page.read_text(encoding="utf-8"))
    stale = {name: reason for name in names if (reason := _stale_reason(name)) is not None}
    assert stale == {}, f"{page.name} names stale code: {stale}"


def test_the_architecture_page_names_code_at_all() -> None:
    """The scans see real references (a broken pattern would make the tests above pass on anything)."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    assert "agent_eval/cli/main.py" in _paths(text)
    assert "agent_eval.api" in _dotted_names(text)
    assert _stale_reason("agent_eval.api.evaluate") is None
    assert _stale_reason("agent_eval.api.no_such_function") is not None
    assert _stale_reason("agent_eval.no_such_module") == "agent_eval has no attribute 'no_such_module'"
    assert _stale_reason("no_such_package.module") == "no such module"


def test_an_old_module_path_is_stale_even_when_already_imported() -> None:
    import agent_eval

    old = "agent_eval.stored_plans"
    before = sys.modules.get(old)
    had_attribute = "stored_plans" in vars(agent_eval)
    try:
        assert "old module path" in (_stale_reason(old) or "")  # warns
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            importlib.import_module(old)
        assert "old module path" in (_stale_reason(old) or "")  # no longer warns: the module's name says it
    finally:
        if before is None:
            sys.modules.pop(old, None)
        if not had_attribute:
            vars(agent_eval).pop("stored_plans", None)


def _relative_links(page: Path) -> list[tuple[str, str]]:
    """(text, target) of each link of `page` to a file of the repository."""
    found = LINK.findall(page.read_text(encoding="utf-8"))
    return [(text, target) for text, target in found if not re.match(r"[a-z]+:", target)]


def _names_another_file(text: str, target: Path) -> bool:
    """Whether a link written as a file or folder name (`[`cli/main.py`](...)`) links to another one."""
    shown = text.strip("`").rstrip("/")
    if not text.startswith("`") or not re.fullmatch(r"[\w./-]+", shown) or not {"/", "."} & set(shown):
        return False
    return not ("/" + target.as_posix()).endswith("/" + shown)


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(REPO).as_posix())
def test_every_link_reaches_a_file_its_text_names(page: Path) -> None:
    broken: list[str] = []
    misnamed: list[str] = []
    for text, target in _relative_links(page):
        path = (page.parent / target).resolve()
        if not path.exists():
            broken.append(target)
        if _names_another_file(text, path):
            misnamed.append(f"[{text}]({target})")
    assert broken == [], f"{page.name} links to files that do not exist: {broken}"
    assert misnamed == [], f"{page.name} has links whose text names another file than the target: {misnamed}"


def _layers_contract() -> list[list[str]]:
    """The `layers` contract's layers, bottom to top, each as its module names."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    assert len(contracts) == 1, "expected one import-linter layers contract in pyproject.toml"
    return [sorted(re.split(r"\s*[|:]\s*", layer.strip())) for layer in reversed(contracts[0]["layers"])]


def _layer_table() -> list[list[str]]:
    """The module names in the second column of the `## Layers` table, row by row."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    assert "\n## Layers\n" in text, "architecture.md has no `## Layers` section with the layer table"
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|") and not line.startswith("|---")][1:]
    return [sorted(DOTTED.findall(row.split("|")[2])) for row in rows]


def test_the_layer_table_matches_the_layers_contract() -> None:
    contract, table = _layers_contract(), _layer_table()
    missing = [" | ".join(layer) for layer in contract if layer not in table]
    assert missing == [], f"layers of pyproject.toml missing from the layer table of architecture.md: {missing}"
    extra = [", ".join(row) for row in table if row not in contract]
    assert extra == [], f"rows of the layer table of architecture.md that are no layer of pyproject.toml: {extra}"
    assert table == contract, "the layer table of architecture.md lists the layers in another order (bottom to top)"
