"""Lazy package exports, and the old import paths of modules that moved.

Internal: the public API is `agent_eval`'s; this module's names may change between releases.

`import agent_eval` (and the CLI's `--help`) must not pay for Prefect, google-genai, nltk or scipy; a package
`__init__` therefore imports its public names under `TYPE_CHECKING` only (`from module import Name as Name`, the
explicit re-export type checkers read), and `lazy_exports` reads that one list from the `__init__`'s source to
import each name when first read (PEP 562). The names are listed once.
"""

from __future__ import annotations

import ast
import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["install_moved_modules", "lazy_exports", "type_checking_exports"]


def type_checking_exports(init_file: str) -> dict[str, str]:
    """Every name a package `__init__` imports under `if TYPE_CHECKING:`, mapped to the module it comes from."""
    tree = ast.parse(Path(init_file).read_text(encoding="utf-8"))
    where: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom) and statement.module:
                    where.update({alias.asname or alias.name: statement.module for alias in statement.names})
    return where


def lazy_exports(package: str, init_file: str) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """The `__getattr__`, `__dir__` and `__all__` of a package whose public names are its `TYPE_CHECKING`
    imports (read from `init_file`, the package's `__file__`).

    A name is imported on first access and then kept in the package's namespace, so later reads are plain
    attribute reads. An unknown name raises `AttributeError` as a normal module would.
    """
    where = type_checking_exports(init_file)

    def __getattr__(name: str) -> Any:  # noqa: N807 (the module hook PEP 562 names)
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:  # noqa: N807
        return sorted(set(where) | set(vars(sys.modules[package])))

    return __getattr__, __dir__, sorted(where)


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports a moved module under its old name too (the same module object), with a `DeprecationWarning`."""

    def __init__(self, moved: Mapping[str, str]) -> None:
        self.moved = dict(moved)

    def new_name(self, old: str) -> str | None:
        """Where the module once named `old` lives now (a moved package moves its submodules too)."""
        for before, after in self.moved.items():
            if old == before or old.startswith(before + "."):
                return after + old[len(before) :]
        return None

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if self.new_name(fullname) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        new = self.new_name(spec.name)
        assert new is not None  # find_spec answered only for moved names
        warnings.warn(
            f"{spec.name} has moved to {new}; the old path will be removed in a later release",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: `create_module` gave back the module, already imported under its new name."""


def install_moved_modules(moved: Mapping[str, str]) -> None:
    """Let `import OLD` (and `OLD.sub`) give the module now at `moved[OLD]`, warning that the path moved.

    The finder goes first on `sys.meta_path`, so a moved package's submodule is never imported twice (once
    under each name)."""
    if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
        sys.meta_path.insert(0, _MovedModules(moved))
