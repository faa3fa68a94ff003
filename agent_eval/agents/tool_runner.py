"""Running the Python functions an agent exposes as tools, with the case's tool mocks in front of them.

Rules (the google-genai SDK's automatic function calling does the same, except for mocks):
- a call answered by a mock (`EvalCase.tool_mocks`, see `find_mock`) returns the canned response and the real
  function is not called;
- a sync function runs on a daemon thread of its own (it cannot block exit if it hangs), an async one is awaited;
- an unknown tool, wrong arguments or an exception in the tool become `{"error": "..."}` for the model,
  which may recover: a tool failure is part of the agent's behaviour, not a crash of the evaluation;
- the result is made JSON-able (unknown objects by `repr`), so it can be recorded and sent back.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic_core import to_jsonable_python

from agent_eval.agents.mocking import find_mock
from agent_eval.agents.threads import run_in_daemon_thread
from agent_eval.schema import ToolMock

__all__ = ["ToolFunction", "check_tools", "run_tool", "tool_source"]

ToolFunction = Callable[..., Any]


def check_tools(tools: Sequence[ToolFunction]) -> dict[str, ToolFunction]:
    """The tools by name.

    Raises:
        TypeError: a tool is not a named callable.
        ValueError: two tools have the same name.
    """
    by_name: dict[str, ToolFunction] = {}
    for tool in tools:
        name = getattr(tool, "__name__", None)
        if not callable(tool) or not isinstance(name, str):
            raise TypeError(f"a tool must be a named Python function, got {tool!r}")
        if name in by_name:
            raise ValueError(f"two tools are named {name!r}; tool names must be unique")
        by_name[name] = tool
    return by_name


async def run_tool(
    tools: Mapping[str, ToolFunction], mocks: Sequence[ToolMock], name: str, args: Mapping[str, Any]
) -> Any:
    """The response to one tool call: the mock's, else the function's (errors as `{"error": ...}`)."""
    mock = find_mock(mocks, name, args)
    if mock is not None:
        return to_jsonable_python(mock.response, fallback=repr)
    function = tools.get(name)
    if function is None:
        return {"error": f"unknown tool {name!r}; the tools are {sorted(tools)}"}
    try:
        result = await _call(function, dict(args))
    except Exception as error:  # the tool's failure is reported to the model, as the genai SDK does
        return {"error": f"{type(error).__name__}: {error}"}
    return to_jsonable_python(result, fallback=repr)


async def _call(function: ToolFunction, args: dict[str, Any]) -> Any:
    if inspect.iscoroutinefunction(function):
        return await function(**args)
    result = await run_in_daemon_thread(functools.partial(function, **args), name="agent-eval-tool-call")
    return await result if inspect.isawaitable(result) else result


def tool_source(function: ToolFunction) -> str:
    """The function's source code (its qualified name when the source is not available)."""
    try:
        return inspect.getsource(function)
    except (OSError, TypeError):
        return f"{getattr(function, '__module__', '')}.{getattr(function, '__qualname__', repr(function))}"
