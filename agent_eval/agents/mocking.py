"""Tool mocking: canned responses for named tools, taken from the case (`EvalCase.tool_mocks`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agent_eval.schema import ToolMock

__all__ = ["find_mock"]


def find_mock(mocks: Sequence[ToolMock], tool_name: str, args: Mapping[str, Any] | None) -> ToolMock | None:
    """The first mock for this call: same tool name, and when the mock gives `args`, each of them equal in
    the call's arguments (`1 == 1.0`); a mock with args is preferred over a name-only one."""
    given = dict(args or {})
    by_name = [mock for mock in mocks if mock.tool_name == tool_name]
    with_args = [
        m for m in by_name if m.args is not None and all(given.get(k, _MISSING) == v for k, v in m.args.items())
    ]
    if with_args:
        return with_args[0]
    return next((mock for mock in by_name if mock.args is None), None)


_MISSING = object()
