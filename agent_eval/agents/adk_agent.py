"""The Google ADK adapter: runs an ADK agent (`BaseAgent`, a workflow node, or an `App`) in-process with ADK's
own `Runner`, one fresh in-memory session per case run.

The session takes the case's `session_input` (app name, user id, session id, state); each user turn is sent
with `Runner.run_async`, and the session state after the last turn is the run's final session state.

What one turn records (`turn_from_events`, shared with the ADK api_server adapter):
- tool calls: the `function_call` parts of every event of the turn, in order, with name, args and id. That
  includes the calls of sub-agents reached with `transfer_to_agent` (the transfer itself counts too, as in
  ADK), and the calls made *inside* an `AgentTool`: the agent behind it runs in a nested `Runner` whose events
  never reach the caller, so ADK's own eval misses them. We see them because we collect events with a plugin
  (`on_event_callback`) and `AgentTool` hands its caller's plugins on to the nested runner. A nested call
  appears right after the `AgentTool` call that made it (depth first). An `AgentTool(include_plugins=False)`
  opts out of the caller's plugins: its inner calls are not seen and not mocked (a warning says so).
- tool responses: each `function_response` part, attached to the call with the same id (else the first
  unanswered call of the same name).
- final response: the text (thought parts left out) of the last event of the *outer* runner that
  `Event.is_final_response()` and has text. After a transfer that is the sub-agent's answer, as in ADK's
  eval; text from inside an `AgentTool` never is (it is the tool's response).
- intermediate responses: the other texts of the outer runner's events, in order.
- tokens: over every complete event, nested ones included: input = prompt + tool-use prompt tokens,
  output = candidates + thoughts tokens (`usage_metadata`).

Tool mocking: tools named in the case's `tool_mocks` answer with the canned response and do not run; the
same plugin's `before_tool_callback` does it, so it applies to every agent of the tree, sub-agents and
`AgentTool` agents included, and the user's agent objects are never changed.

google-adk is an optional dependency (`pip install 'agent-eval[adk]'`): this module imports it only when an
ADK agent is actually run.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from google.genai import types as genai_types
from pydantic import PrivateAttr

from agent_eval.agents.base import AgentSession, AgentTurn, ToolCallRecord
from agent_eval.agents.conversation import TurnAgent, fresh_session
from agent_eval.agents.mocking import find_mock
from agent_eval.errors import EvalInputError
from agent_eval.schema import EvalCase, ModelUsage, ToolMock, add_usage

if TYPE_CHECKING:
    from google.adk.apps import App
    from google.adk.events import Event
    from google.adk.plugins.base_plugin import BasePlugin
    from google.adk.runners import Runner

__all__ = ["ADK_INSTALL_HINT", "AdkAgent", "EventView", "is_adk_object", "require_adk", "turn_from_events"]

logger = logging.getLogger(__name__)

ADK_INSTALL_HINT = "google-adk is not installed: pip install 'agent-eval[adk]'"
PLUGIN_NAME = "agent_eval_recorder"
_ADK_ROOT_CLASSES = frozenset({"BaseAgent", "BaseNode", "App"})


def require_adk() -> None:
    """Raise a clear error when google-adk cannot be imported.

    Raises:
        EvalInputError: google-adk is missing (says how to install it).
    """
    try:
        import google.adk  # noqa: F401
    except ImportError:
        raise EvalInputError(ADK_INSTALL_HINT, field="agent") from None


def is_adk_object(target: object) -> bool:
    """Whether `target` is an ADK agent, workflow node or `App` (checked without importing google.adk)."""
    return any(
        cls.__module__.startswith("google.adk.") and cls.__name__ in _ADK_ROOT_CLASSES for cls in type(target).__mro__
    )


# ------------------------------------------------------------------------------------------- events → turn
@dataclass(frozen=True)
class EventView:
    """What a turn is built from, out of one ADK event (an in-process `Event` or a JSON event of api_server).

    Attributes:
        parts: the event's content parts.
        outer: the event comes from the runner the user talks to (not from a runner nested in an AgentTool).
        final: ADK's `Event.is_final_response()`.
        partial: a streaming fragment (ignored: the complete event follows).
        input_tokens: prompt + tool-use prompt tokens of the model call, when reported.
        output_tokens: candidates + thoughts tokens of the model call, when reported.
        model: the model that answered (the event's `model_version`), when reported.
        usage: the model call's usage (`ModelUsage.of_genai`), None for an event that is no model answer.
    """

    parts: tuple[genai_types.Part, ...] = ()
    outer: bool = True
    final: bool = False
    partial: bool = False
    input_tokens: int | None = None
    output_tokens: int | None = None
    model: str | None = None
    usage: ModelUsage | None = None

    @property
    def text(self) -> str:
        """The text parts, thoughts left out, joined with newlines."""
        return "\n".join(part.text for part in self.parts if part.text and not part.thought)


def token_counts(usage: genai_types.GenerateContentResponseUsageMetadata | None) -> tuple[int | None, int | None]:
    """(input, output) tokens of a model call: prompt + tool-use prompt, candidates + thoughts."""
    if usage is None:
        return None, None
    inputs = [usage.prompt_token_count, usage.tool_use_prompt_token_count]
    outputs = [usage.candidates_token_count, usage.thoughts_token_count]
    return _sum_known(inputs), _sum_known(outputs)


def turn_from_events(events: Sequence[EventView]) -> AgentTurn:
    """The turn the events describe (rules in the module docstring)."""
    complete = [event for event in events if not event.partial]
    calls = [
        ToolCallRecord(
            name=part.function_call.name or "", args=dict(part.function_call.args or {}), id=part.function_call.id
        )
        for event in complete
        for part in event.parts
        if part.function_call is not None
    ]
    _attach_responses(calls, [part.function_response for e in complete for part in e.parts if part.function_response])
    outer_texts = [event for event in complete if event.outer and event.text]
    final = next((event for event in reversed(outer_texts) if event.final), None)
    return AgentTurn(
        response=final.text if final is not None else "",
        tool_calls=calls,
        intermediate_responses=[event.text for event in outer_texts if event is not final],
        input_tokens=_sum_known([event.input_tokens for event in complete]),
        output_tokens=_sum_known([event.output_tokens for event in complete]),
        model_usage=_model_usage(complete),
    )


def _model_usage(events: Sequence[EventView]) -> dict[str, ModelUsage]:
    """Per model, the calls and tokens of the events that carry a model answer's usage."""
    totals: dict[str, ModelUsage] = {}
    for event in events:
        if event.usage is not None:
            add_usage(totals, event.model, event.usage)
    return totals


def _attach_responses(calls: list[ToolCallRecord], responses: list[genai_types.FunctionResponse]) -> None:
    pending = list(calls)
    for response in responses:
        by_id = (call for call in pending if response.id and call.id == response.id)
        by_name = (call for call in pending if call.name == response.name)
        match = next(by_id, None) or next(by_name, None)
        if match is not None:
            match.response = response.response
            pending.remove(match)


def _sum_known(values: Sequence[int | None]) -> int | None:
    known = [value for value in values if value is not None]
    return sum(known) if known else None


def _view_of(event: Event, outer: bool) -> EventView:
    input_tokens, output_tokens = token_counts(event.usage_metadata)
    return EventView(
        parts=tuple(event.content.parts or []) if event.content else (),
        outer=outer,
        final=event.is_final_response(),
        partial=bool(event.partial),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        model=event.model_version,
        usage=ModelUsage.of_genai(event.usage_metadata) if event.usage_metadata is not None else None,
    )


# ------------------------------------------------------------------------------------------------ plugin
@dataclass
class _Recorder:
    """Every event of every runner that shares the plugin, in the order they happen; the case's mocks."""

    mocks: list[ToolMock]
    events: list[Event] = field(default_factory=list)


@functools.cache
def _plugin_class() -> Callable[[_Recorder], BasePlugin]:
    """The recording and mocking plugin (a class built on first use, so google.adk is imported lazily)."""
    from google.adk.plugins.base_plugin import BasePlugin

    class RecorderPlugin(BasePlugin):
        def __init__(self, recorder: _Recorder) -> None:
            super().__init__(name=PLUGIN_NAME)
            self.recorder = recorder

        async def on_event_callback(self, *, invocation_context: Any, event: Event) -> Event | None:
            self.recorder.events.append(event)
            return None

        async def before_tool_callback(self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any) -> Any:
            mock = find_mock(self.recorder.mocks, tool.name, tool_args)
            if mock is None:
                return None
            return mock.response if isinstance(mock.response, dict) else {"result": mock.response}

    return RecorderPlugin


# ----------------------------------------------------------------------------------------------- adapter
class _AdkSession(AgentSession):
    """An `AgentSession` that also holds the case run's ADK runner and event recorder."""

    _runner: Runner = PrivateAttr()
    _recorder: _Recorder = PrivateAttr()


class AdkAgent(TurnAgent):
    """Runs eval cases on an ADK agent, workflow node or `App`, in-process (see the module docstring).

    Args:
        agent: the ADK `BaseAgent` (e.g. `root_agent`), workflow node or `App` to evaluate.
        reference: the reference string it was resolved from (default: `adk:<agent name>`).
        source_fingerprint: a hash of the agent's source, e.g. of its folder (always combined with the agent
            tree's names, models and tools, and the source of the modules defining its tools and models).

    Raises:
        EvalInputError: google-adk is not installed.
    """

    def __init__(self, agent: Any, *, reference: str | None = None, source_fingerprint: str = "") -> None:
        require_adk()
        from google.adk.apps import App

        self._app: App | None = agent if isinstance(agent, App) else None
        self._root: Any = agent.root_agent if isinstance(agent, App) else agent
        if self._root is None:
            raise EvalInputError(f"the ADK App {agent.name!r} has no root_agent", field="agent")
        self._reference = reference or f"adk:{self._root.name}"
        self._fingerprint = _code_fingerprint(self._root, source_fingerprint)
        _warn_isolated_agent_tools(self._root)

    @property
    def reference(self) -> str:
        """The reference the agent was resolved from."""
        return self._reference

    @property
    def code_fingerprint(self) -> str:
        """Hash of the agent's source and of its tree (names, models, instructions, tools)."""
        return self._fingerprint

    async def open_session(self, case: EvalCase) -> AgentSession:
        """A fresh ADK runner and in-memory session with the case's `session_input` and tool mocks."""
        from google.adk.artifacts import InMemoryArtifactService
        from google.adk.memory import InMemoryMemoryService
        from google.adk.runners import Runner
        from google.adk.sessions import InMemorySessionService

        session = _AdkSession.model_validate(fresh_session(case).model_dump())
        recorder = _Recorder(mocks=list(case.tool_mocks))
        runner = Runner(
            app=self._runner_app(_plugin_class()(recorder)),
            app_name=session.app_name,
            session_service=InMemorySessionService(),
            artifact_service=InMemoryArtifactService(),
            memory_service=InMemoryMemoryService(),
        )
        await runner.session_service.create_session(
            app_name=session.app_name, user_id=session.user_id, session_id=session.session_id, state=session.state
        )
        session._runner, session._recorder = runner, recorder
        return session

    async def answer(self, message: str, session: AgentSession) -> AgentTurn:
        """Send one user message through the runner and build the turn from the events it caused."""
        assert isinstance(session, _AdkSession), "sessions come from AdkAgent.open_session"
        runner, recorder = session._runner, session._recorder
        recorder.events.clear()
        outer_ids: set[str] = set()
        new_message = genai_types.Content(role="user", parts=[genai_types.Part(text=message)])
        async for event in runner.run_async(
            user_id=session.user_id, session_id=session.session_id, new_message=new_message
        ):
            outer_ids.add(event.id)
        adk_session = await runner.session_service.get_session(
            app_name=session.app_name, user_id=session.user_id, session_id=session.session_id
        )
        if adk_session is not None:
            session.state = dict(adk_session.state)
        return turn_from_events([_view_of(event, event.id in outer_ids) for event in recorder.events])

    async def close_session(self, session: AgentSession) -> None:
        """Close the case run's runner."""
        if isinstance(session, _AdkSession):
            await session._runner.close()

    def _runner_app(self, plugin: BasePlugin) -> App:
        """The user's App with our plugin added (a copy), or a bare App around the root agent."""
        from google.adk.apps import App

        if self._app is not None:
            return self._app.model_copy(update={"plugins": [*self._app.plugins, plugin]})
        return App.model_construct(name=self._root.name, root_agent=self._root, plugins=[plugin])


# ------------------------------------------------------------------------------------ agent tree, fingerprint
def _tree(root: Any) -> Iterator[tuple[Any, list[Any]]]:
    """Every agent of the tree (sub-agents and agents behind AgentTools) with its declared tools."""
    from google.adk.tools.agent_tool import AgentTool

    seen: set[int] = set()
    stack = [root]
    while stack:
        agent = stack.pop()
        if id(agent) in seen:
            continue
        seen.add(id(agent))
        tools = list(getattr(agent, "tools", None) or [])
        yield agent, tools
        stack.extend(reversed(getattr(agent, "sub_agents", None) or []))
        stack.extend(tool.agent for tool in tools if isinstance(tool, AgentTool))


def _warn_isolated_agent_tools(root: Any) -> None:
    from google.adk.tools.agent_tool import AgentTool

    for agent, tools in _tree(root):
        for tool in tools:
            if isinstance(tool, AgentTool) and not tool.include_plugins:
                logger.warning(
                    "%s: AgentTool %r has include_plugins=False: the tool calls made inside it are not recorded "
                    "and tool mocks do not apply there",
                    agent.name,
                    tool.name,
                )


def _code_fingerprint(root: Any, source_fingerprint: str) -> str:
    """Hash of the given source fingerprint, the tree's shape and the source of the modules it is built from."""
    digest = hashlib.sha256(source_fingerprint.encode())
    modules: dict[str, str] = {}
    for agent, tools in _tree(root):
        model = getattr(agent, "model", "")
        instruction = getattr(agent, "instruction", "")
        names = [getattr(tool, "name", None) or getattr(tool, "__name__", type(tool).__name__) for tool in tools]
        signature = [type(agent).__name__, agent.name, str(getattr(model, "model", model)), type(model).__name__]
        digest.update(repr([*signature, instruction if isinstance(instruction, str) else "", names]).encode())
        for obj in [agent, model, *tools, *(getattr(tool, "func", None) for tool in tools)]:
            _add_module(modules, obj)
    for name in sorted(modules):
        digest.update(name.encode())
        digest.update(modules[name].encode())
    return digest.hexdigest()[:16]


def _add_module(modules: dict[str, str], obj: object) -> None:
    """Record the source file of the user module defining `obj` (or its class); ADK's own modules are skipped."""
    if obj is None:
        return
    target = obj if inspect.isfunction(obj) or inspect.isclass(obj) else type(obj)
    module = inspect.getmodule(target)
    file = getattr(module, "__file__", None)
    if module is None or module.__name__.startswith(("google.", "agent_eval.")) or not file:
        return
    if module.__name__ not in modules and Path(file).is_file():
        modules[module.__name__] = hashlib.sha256(Path(file).read_bytes()).hexdigest()
