"""The persisted judge cache: one small JSON file per answered request, keyed by the request's content.

Key: sha256 of (backend identity, model, system, prompt, the response schema's JSON schema (none for a
free-text request), config, sample index). Value: the raw answer text, parsed again on every read (a schema
change changes the key, and a stored answer that no longer parses is ignored). Only answers that parsed (or,
for a free-text request, are not empty) are stored; errors never are.

Why files rather than SQLite: writers are many (threads, event loops, Prefect workers in other processes)
and each entry is written once and never updated, so a file per key written to a temporary name and moved
into place with `os.replace` is atomic without any lock: readers see a whole entry or none, two writers of
the same key write the same content, and no writer waits ("database is locked") or blocks the event loop on
a lock. Files live in `home_dir()/cache/judge/<first two hex digits>/<key>.json`; delete the folder to clear.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path

from pydantic_core import to_jsonable_python

from agent_eval.metrics.judged.base import JudgeRequest
from agent_eval.settings import home_dir

__all__ = ["JudgeCache", "cache_key"]

_log = logging.getLogger(__name__)


def cache_key(identity: str, request: JudgeRequest) -> str:
    """The hex sha256 of everything that shapes the answer to `request` on the backend `identity`."""
    content = [
        identity,
        request.model,
        request.system,
        request.prompt,
        request.response_schema.model_json_schema() if request.response_schema is not None else None,
        to_jsonable_python(request.config, fallback=repr),
        request.sample_index,
    ]
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()


class JudgeCache:
    """Answers stored on disk by key (see the module docstring).

    Args:
        directory: where the files go; default `home_dir()/cache/judge`, resolved at each use so that
            `AGENT_EVAL_HOME` set later is honoured.
    """

    def __init__(self, directory: str | Path | None = None) -> None:
        self._directory = Path(directory) if directory is not None else None

    @property
    def directory(self) -> Path:
        """The cache folder."""
        return self._directory if self._directory is not None else home_dir() / "cache" / "judge"

    def path(self, key: str) -> Path:
        """The file that holds the answer for `key`."""
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> str | None:
        """The stored answer text, or `None` (no entry, or an unreadable one)."""
        try:
            entry = json.loads(self.path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        text = entry.get("text") if isinstance(entry, dict) else None
        return text if isinstance(text, str) else None

    def put(self, key: str, text: str, *, model: str = "") -> None:
        """Store `text` for `key` atomically; a failure to write is logged, never raised (the answer stands)."""
        target = self.path(key)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            _write_atomically(target, json.dumps({"model": model, "text": text}))
        except OSError as error:
            _log.warning("judge cache: could not write %s: %s", target, error)


def _write_atomically(target: Path, data: str) -> None:
    """Write to a temporary file beside `target`, then move it into place (readers never see half a file)."""
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.stem[:8]}-", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(data)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
