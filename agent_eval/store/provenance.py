"""Where a run came from, best effort: the git commit of the agent's code and the Prefect deployment."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

__all__ = ["agent_folder", "deployment_name", "git_commit"]

_GIT_TIMEOUT_SECONDS = 5


def agent_folder(reference: str) -> Path | None:
    """The folder of the agent's code for a reference (`pkg.mod:attr`, `file.py:attr`, a folder), if found."""
    if Path(reference).is_dir():
        return Path(reference).resolve()
    target, _, _ = reference.rpartition(":")
    if not target:
        return None
    if target.endswith(".py"):
        return Path(target).resolve().parent if Path(target).is_file() else None
    module = sys.modules.get(target)
    origin = getattr(module, "__file__", None)
    if origin is None:
        try:
            spec = importlib.util.find_spec(target)
        except (ImportError, ValueError):
            return None
        origin = spec.origin if spec is not None else None
    return Path(origin).resolve().parent if origin else None


def git_commit(folder: Path | None) -> str | None:
    """`git rev-parse HEAD` in `folder`, or None (no folder, not a repository, no git, too slow)."""
    if folder is None or not folder.is_dir():
        return None
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and commit else None


def deployment_name() -> str | None:
    """The Prefect deployment running the current flow run (`prefect.runtime.deployment.name`), else None."""
    from prefect.runtime import deployment

    name = deployment.name
    return str(name) if name else None
