"""A deterministic, rule-based home-automation agent: the bundled demo for agent-eval.

No LLM, no network, no randomness: each user message is matched against a small intent table of regular
expressions, the matching handler calls the tools in `tools.py` and writes an English reply. Every tool call
is recorded, in order, with the tool's response. The world (devices, temperatures, preferences, memory) lives
in `session.state`, so later turns of a case see the changes of earlier ones.

The agent has four deliberate quirks, so that some cases of the demo eval set fail by design. Each is marked
`QUIRK` where it happens:

* wrong argument: a room written all in lowercase ("living room") is passed to the tools as written;
* missing call: "as usual" makes it read the user's preferences from the session state directly, skipping
  `get_user_preferences`;
* extra call: after switching a Garage device it calls `get_device_info` again to "verify" the change;
* worse wording: it answers temperature questions about the Office with the bare number ("22.").

Entry point: `examples.home_automation.agent:root_agent`.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent_eval import AgentSession, AgentTurn, ToolCallRecord
from examples.home_automation import tools

__all__ = ["root_agent"]

FALLBACK = "Sorry, I can only help with your devices, room temperatures and things to remember."
MEMORY_KEY = "note"
"""The `remember` / `recall` key for free-form facts ("Remember that ...")."""


@dataclass
class _Context:
    """One turn in progress: the user's message, the session, and the tool calls made so far."""

    message: str
    session: AgentSession
    calls: list[ToolCallRecord] = field(default_factory=list)

    @property
    def state(self) -> tools.State:
        """The session state, which holds the world."""
        return self.session.state

    def call(self, tool: Callable[..., Any], **args: Any) -> Any:
        """Run `tool` on the session's world and record the call with its response."""
        response = tool(**args, state=self.state)
        self.calls.append(ToolCallRecord(name=tool.__name__, args=args, response=copy.deepcopy(response)))
        return response


# ---------------------------------------------------------------------------------------------- parsing
def _find_room(text: str) -> str | None:
    """The room the message names, spelled as the tools expect it (see the quirk)."""
    for room in tools.ROOMS:
        match = re.search(rf"\b{re.escape(room)}\b", text, re.IGNORECASE)
        if match:
            # QUIRK (wrong argument): a room typed all in lowercase is passed on exactly as typed, e.g.
            # "living room" instead of "Living Room". The tools forgive it; the trajectory check does not.
            return match.group(0) if match.group(0).islower() else room
    return None


def _find_device(text: str) -> str | None:
    """The device the message names ("device_2" or "device 2"), as "device_2"."""
    match = re.search(r"\bdevice[_ ](\d+)\b", text, re.IGNORECASE)
    return f"device_{match.group(1)}" if match else None


def _find_user(ctx: _Context) -> str:
    """Who is asking: a user id in the message, else `user_id` in the state, else the session's user."""
    match = re.search(r"\buser_\w+\b", ctx.message)
    if match:
        return match.group(0)
    return str(ctx.state.get("user_id", ctx.session.user_id))


_PRONOUNS = {"i": "you", "i'm": "you're", "am": "are", "me": "you", "my": "your", "mine": "yours"}


def _second_person(text: str) -> str:
    """Turn the user's "I left my keys" into "you left your keys"."""
    return re.sub(r"\b(?:i'm|i|am|me|my|mine)\b", lambda m: _PRONOUNS[m.group(0).lower()], text, flags=re.I)


def _join(items: list[str]) -> str:
    """ "a", "a and b", "a, b and c"."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


# ---------------------------------------------------------------------------------------------- devices
def _switch(ctx: _Context, location: str, device_id: str, status: str) -> dict[str, str]:
    """Call `set_device_info` (and, for the Garage, the quirky verification)."""
    result: dict[str, str] = ctx.call(tools.set_device_info, location=location, device_id=device_id, status=status)
    if "error" not in result and location == "Garage":
        # QUIRK (extra call): the agent does not trust the Garage's flaky hub and reads the device back after
        # every successful switch there, a call nobody asked for.
        ctx.call(tools.get_device_info, device_id=device_id)
    return result


def _set_device(match: re.Match[str], ctx: _Context) -> str:
    """Handle "Turn off device_2 in the Bedroom." (looking the room up when the user gives none)."""
    status = match.group("status").upper()
    device_id = _find_device(ctx.message)
    if device_id is None:
        return f"Which device should I turn {status.lower()}?"
    location = _find_room(ctx.message)
    if location is None:
        info = ctx.call(tools.get_device_info, device_id=device_id)
        if "error" in info:
            return f"Sorry, I couldn't find {device_id}."
        location = info["location"]
    result = _switch(ctx, location, device_id, status)
    if "error" in result:
        return f"Sorry, I couldn't turn {status.lower()} {device_id}: {result['error']}"
    ctx.state["last_command"] = f"turn {status.lower()} {device_id} in the {location}"
    return f"OK. I've turned {status.lower()} {device_id} in the {location}."


def _set_all_devices(match: re.Match[str], ctx: _Context) -> str:
    """Handle "Turn off all devices in the Kitchen.": list the ones to switch, then switch each."""
    status = match.group("status").upper()
    location = _find_room(ctx.message)
    current = "ON" if status == "OFF" else "OFF"
    filters = {"status": current} | ({"location": location} if location else {})
    devices = ctx.call(tools.list_devices, **filters)
    switched = [
        device["device_id"]
        for device in devices
        if "error" not in _switch(ctx, device["location"], device["device_id"], status)
    ]
    where = f" in the {location}" if location else ""
    ctx.state["last_command"] = f"turn {status.lower()} all devices{where}"
    if not switched:
        return f"There was nothing to turn {status.lower()}{where}."
    return f"OK. I've turned {status.lower()} {_join(switched)}{where}."


def _device_status(match: re.Match[str], ctx: _Context) -> str:
    """Handle "What's the status of device_3?" and "Is device_5 on?"."""
    device_id = _find_device(ctx.message)
    if device_id is None:
        return "Which device do you mean?"
    info = ctx.call(tools.get_device_info, device_id=device_id)
    if "error" in info:
        return f"Sorry, I couldn't find {device_id}."
    return f"{device_id} in the {info['location']} is currently {info['status'].lower()}."


def _list_devices(match: re.Match[str], ctx: _Context) -> str:
    """Handle "Which devices are on in the Kitchen?" and "List all devices."."""
    status = match.group("status")
    location = _find_room(ctx.message)
    filters = ({"status": status.upper()} if status else {}) | ({"location": location} if location else {})
    devices = ctx.call(tools.list_devices, **filters)
    where = f" in the {location}" if location else ""
    if not devices:
        return f"No devices are {status.lower()}{where}." if status else f"There are no devices{where}."
    if status:
        return f"These devices are {status.lower()}{where}: {_join([d['device_id'] for d in devices])}."
    listed = [f"{d['device_id']} ({d['location']}, {d['status'].lower()})" for d in devices]
    return f"Your devices{where}: {_join(listed)}."


# ------------------------------------------------------------------------------------------ temperature
def _set_temperature(match: re.Match[str], ctx: _Context) -> str:
    """Handle "Set the Living Room temperature to 22 degrees."."""
    location = _find_room(ctx.message)
    if location is None:
        return "Which room should I set the temperature for?"
    temperature = int(match.group("temperature"))
    result = ctx.call(tools.set_temperature, location=location, temperature=temperature)
    if "error" in result:
        return f"Sorry, I couldn't set the {location} temperature: {result['error']}"
    ctx.state["last_command"] = f"set the {location} temperature to {temperature}°C"
    return f"OK. I've set the {location} temperature to {temperature}°C."


def _get_temperature(match: re.Match[str], ctx: _Context) -> str:
    """Handle "What is the temperature in the Kitchen?"."""
    location = _find_room(ctx.message)
    if location is None:
        return "Which room do you mean?"
    temperature = ctx.call(tools.get_temperature, location=location)
    if isinstance(temperature, dict):
        return f"Sorry, I couldn't read the {location} temperature: {temperature['error']}"
    if location == "Office":
        # QUIRK (worse wording): the Office answer uses a terse "status bar" template, just the number.
        return f"{temperature}."
    return f"The temperature in the {location} is {temperature}°C."


def _preferred_temperature(match: re.Match[str], ctx: _Context) -> str:
    """Handle "Set the temperature in my preferred room to my preferred temperature, I am user_y"."""
    user_id = _find_user(ctx)
    if match.group("usual"):
        # QUIRK (missing call): "as usual" makes the agent trust the preferences it finds in the session state
        # and skip `get_user_preferences`.
        preferences = ctx.state["user_preferences"].get(user_id, {"error": "unknown user"})
    else:
        preferences = ctx.call(tools.get_user_preferences, user_id=user_id)
    if "error" in preferences:
        return f"Sorry, I couldn't find the preferences of {user_id}."
    location, temperature = preferences["preferred_location"], preferences["preferred_temperature"]
    result = ctx.call(tools.set_temperature, location=location, temperature=temperature)
    if "error" in result:
        return f"Sorry, I couldn't set the {location} temperature: {result['error']}"
    ctx.state["last_command"] = f"set the {location} temperature to {temperature}°C"
    return f"OK. I've set the {location} temperature to {temperature}°C, your preferred temperature."


# ----------------------------------------------------------------------------------------------- memory
def _remember(match: re.Match[str], ctx: _Context) -> str:
    """Handle "Remember that I left the garage door open."."""
    fact = match.group("fact")
    ctx.call(tools.remember, key=MEMORY_KEY, value=fact)
    return f"Got it. I'll remember that {_second_person(fact)}."


def _recall(match: re.Match[str], ctx: _Context) -> str:
    """Handle "What did I tell you earlier?"."""
    result = ctx.call(tools.recall, key=MEMORY_KEY)
    if "error" in result:
        return "You haven't asked me to remember anything yet."
    return f"You told me that {_second_person(result['value'])}."


def _last_command(match: re.Match[str], ctx: _Context) -> str:
    """Handle "What's the command I just issued?" from the session state; no tool needed."""
    command = ctx.state.get("last_command")
    if command is None:
        return "You haven't given me a command yet."
    return f"You asked me to {command}."


# ---------------------------------------------------------------------------------------------- intents
Handler = Callable[[re.Match[str], _Context], str]

_INTENTS: tuple[tuple[re.Pattern[str], Handler], ...] = (
    (re.compile(r"^\s*remember that (?P<fact>.+?)[.!]*\s*$", re.I), _remember),
    (re.compile(r"\bwhat did i (?:tell you|ask you to remember)\b", re.I), _recall),
    (re.compile(r"\b(?:command|request) i (?:just )?(?:issued|gave|made)\b", re.I), _last_command),
    (re.compile(r"\bturn (?P<status>on|off) (?:all|every)(?: the)? devices?\b", re.I), _set_all_devices),
    (re.compile(r"\b(?:turn|switch) (?:device[_ ]\d+ )?(?P<status>on|off)\b", re.I), _set_device),
    (re.compile(r"\bset\b.*\b(?:preferred|(?P<usual>as usual))\b", re.I), _preferred_temperature),
    (re.compile(r"\b(?:set|change|make)\b.*?\b(?P<temperature>\d+) ?(?:degrees|°)", re.I), _set_temperature),
    (re.compile(r"\btemperature\b|\bhow (?:warm|cold|hot)\b", re.I), _get_temperature),
    (re.compile(r"\bstatus of\b|\bis device[_ ]\d+ (?:on|off)\b", re.I), _device_status),
    (
        re.compile(r"\b(?:which|what|list)(?: all)?(?: the)? devices\b(?:.*\b(?P<status>on|off)\b)?", re.I),
        _list_devices,
    ),
)
"""(pattern, handler) pairs, tried in order; the first pattern that matches handles the message."""


def root_agent(message: str, session: AgentSession) -> AgentTurn:
    """Answer one user message: run the first matching intent's handler and record its tool calls."""
    tools.init_state(session.state)
    ctx = _Context(message=message.strip(), session=session)
    for pattern, handler in _INTENTS:
        match = pattern.search(ctx.message)
        if match:
            return AgentTurn(response=handler(match, ctx), tool_calls=ctx.calls)
    return AgentTurn(response=FALLBACK)
