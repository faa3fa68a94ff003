"""Lazy package exports: a package's public names are imported from their modules on first use.

Internal: the public API is `agent_eval`'s; this module's names may change between releases.

`import agent_eval` (and the CLI's `--help`) must not pay for Prefect, google-genai, nltk or scipy; a package
`__init__` therefore lists where each public name lives and imports it when first read (PEP 562).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, Sequence[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of a package whose public names live in `exports` (module name → the
    names it defines). The package keeps a literal `__all__` and imports the names under `TYPE_CHECKING` too,
    so type checkers see them.

    A name is imported on first access and then kept in the package's namespace, so later reads are plain
    attribute reads. An unknown name raises `AttributeError` as a normal module would.
    """
    where = {name: module for module, names in exports.items() for name in names}

    def __getattr__(name: str) -> Any:  # noqa: N807 (the module hook PEP 562 names)
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:  # noqa: N807
        return sorted(set(where) | set(vars(sys.modules[package])))

    return __getattr__, __dir__
