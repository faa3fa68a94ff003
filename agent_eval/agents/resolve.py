"""Turning an agent reference string into an `Agent`, and fingerprinting the agent's code.

References:
- `package.module:attr`: an attribute of an importable module (the current directory is importable);
- `path/to/file.py:attr`: an attribute of a Python file;
- `path/to/dir`: the folder's `agent.py` and its `root_agent`, as `adk eval AGENT_DIR` finds it (its `app`
  first when that is an ADK `App` wrapping `root_agent`, or when there is no `root_agent`);
- `http://...` / `https://...`: a generic JSON endpoint (`HttpAgent`);
- `adk-api+http://host:port/APP_NAME` (or `adk-api+https://`): app APP_NAME of an ADK api_server (`AdkApiAgent`);
- `replay`: no agent, the cases' recorded invocations are scored as they are.
A reference of a form in `REFERENCE_FORMS` (`agent_eval.agents.references`) goes to that form's adapter; any
other is user code, imported. The attribute is an `Agent` (anything with `run_case`), an ADK agent or `App`
wrapped in `AdkAgent`, or a plain callable wrapped in `CallableAgent`.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, cast

from agent_eval.agents.adk_agent import ADK_INSTALL_HINT, AdkAgent, is_adk_object
from agent_eval.agents.base import Agent
from agent_eval.agents.callable import CallableAgent
from agent_eval.agents.references import AGENT_REFERENCE_FORMS, REFERENCE_FORMS
from agent_eval.errors import EvalInputError
from agent_eval.imports import import_user_module

__all__ = ["AGENT_REFERENCE_FORMS", "DEFAULT_AGENT_ATTRIBUTE", "find_default_agent", "resolve_agent"]

DEFAULT_AGENT_ATTRIBUTE = "root_agent"
ADK_APP_ATTRIBUTE = "app"
AGENT_FILE_NAME = "agent.py"


def resolve_agent(reference: str) -> Agent:
    """The agent a reference names (see the module docstring).

    Raises:
        EvalInputError: the module or file does not import, or has no such attribute, or it is not callable.
    """
    resolver = next((form.resolver for form in REFERENCE_FORMS if form.resolver and form.selects(reference)), None)
    if resolver is not None:
        return _resolver(resolver)(reference)
    module, attribute = _load_module(reference)
    target = _adk_app(module, attribute) or getattr(module, attribute, None)
    if target is None:
        raise EvalInputError(f"{module.__name__!r} has no attribute {attribute!r}", field="agent")
    fingerprint = _fingerprint(reference, module)
    if is_adk_object(target):
        return AdkAgent(target, reference=reference, source_fingerprint=fingerprint)
    if hasattr(target, "run_case"):
        return target  # type: ignore[no-any-return]
    if not callable(target):
        raise EvalInputError(f"{reference!r} is a {type(target).__name__}, not a callable or an Agent", field="agent")
    return CallableAgent(target, reference=reference, fingerprint=fingerprint)


def _resolver(name: str) -> Callable[[str], Agent]:
    """The adapter function a `ReferenceForm` names as `"module:function"`."""
    module, _, function = name.partition(":")
    return cast(Callable[[str], Agent], getattr(importlib.import_module(module), function))


def find_default_agent(paths: list[str]) -> str | None:
    """`DIR/agent.py:root_agent` for the first eval path whose folder (or a parent, up to 3) has an agent.py."""
    for item in paths:
        folder = Path(item.split(":", 1)[0] if not Path(item).exists() else item).resolve()
        folder = folder if folder.is_dir() else folder.parent
        for candidate in [folder, *list(folder.parents)[:3]]:
            if (candidate / AGENT_FILE_NAME).is_file():
                return f"{Path(os.path.relpath(candidate / AGENT_FILE_NAME)).as_posix()}:{DEFAULT_AGENT_ATTRIBUTE}"
    return None


def _adk_app(module: ModuleType, attribute: str) -> Any:
    """The module's ADK `App` named `app` where `adk eval` would take it over `root_agent`, else None: when the
    reference asks for `root_agent` (as a folder reference does) and the module has none, or the App wraps it
    (so the App's plugins and settings apply, as in `adk eval`)."""
    app = getattr(module, ADK_APP_ATTRIBUTE, None)
    if attribute != DEFAULT_AGENT_ATTRIBUTE or type(app).__name__ != "App" or not is_adk_object(app):
        return None
    root = getattr(module, DEFAULT_AGENT_ATTRIBUTE, None)
    return app if root is None or root is getattr(app, "root_agent", None) else None


def _load_module(reference: str) -> tuple[ModuleType, str]:
    path = Path(reference)
    if path.is_dir():
        return _load_file(path / AGENT_FILE_NAME, reference), DEFAULT_AGENT_ATTRIBUTE
    target, sep, attribute = reference.rpartition(":")
    if not sep or not target or not attribute:
        raise EvalInputError(
            f"agent reference {reference!r} must be 'package.module:attr', 'file.py:attr' or an agent folder",
            field="agent",
        )
    if target.endswith(".py"):
        return _load_file(Path(target), reference), attribute
    return _import(target, reference), attribute


def _import(module_name: str, reference: str, *, root: Path | None = None) -> ModuleType:
    """Import by dotted name, from `root` first when given (a file's package root), else from the current
    folder as well (console scripts do not put it on `sys.path`)."""
    try:
        if root is None:
            return import_user_module(module_name)
        if str(root) in sys.path:
            sys.path.remove(str(root))
        sys.path.insert(0, str(root))  # first, so a copy of a package elsewhere cannot shadow this one
        return importlib.import_module(module_name)
    except Exception as error:  # whatever the import raised, the user's reference is at fault
        raise EvalInputError(
            f"cannot import {module_name!r} for agent {reference!r}: {_import_problem(error)}", field="agent"
        ) from None


def _load_file(file: Path, reference: str) -> ModuleType:
    """Import a Python file as a module; inside a package it is imported by its dotted name."""
    if not file.is_file():
        raise EvalInputError(f"no agent file {str(file)!r}", field="agent")
    dotted = _dotted_name(file.resolve())
    if dotted is not None:
        package_root, name = dotted
        return _import(name, reference, root=package_root)
    name = f"agent_eval_user_{hashlib.sha1(str(file.resolve()).encode()).hexdigest()[:12]}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise EvalInputError(f"cannot load {str(file)!r} as Python", field="agent")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        del sys.modules[name]
        raise EvalInputError(f"importing {str(file)!r} failed: {_import_problem(error)}", field="agent") from None
    return module


def _import_problem(error: Exception) -> str:
    """The import error's message; for a missing google-adk, how to install it."""
    missing = error.name if isinstance(error, ModuleNotFoundError) else None
    if missing and (missing == "google.adk" or missing.startswith("google.adk.")):
        return ADK_INSTALL_HINT
    return str(error)


def _dotted_name(file: Path) -> tuple[Path, str] | None:
    """(folder to put on sys.path, dotted module name) for a file inside packages, else None."""
    parts = [file.stem]
    folder = file.parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    return (folder, ".".join(parts)) if len(parts) > 1 else None


def _fingerprint(reference: str, module: ModuleType) -> str:
    """Hash of the reference, the package version and the source of the module's folder (its .py files).

    The folder is hashed, not just the module, so a change to a sibling `tools.py` invalidates the cache.
    """
    digest = hashlib.sha256(reference.encode())
    version: Any = getattr(module, "__version__", None) or getattr(module, "__agent_version__", None)
    digest.update(str(version).encode())
    source = getattr(module, "__file__", None)
    if source:
        folder = Path(source).parent
        files = sorted(folder.glob("*.py")) if (folder / "__init__.py").is_file() else [Path(source)]
        for file in files:
            digest.update(file.name.encode())
            digest.update(file.read_bytes())
    return digest.hexdigest()[:16]
