"""The home-automation demo as a Google ADK agent tree, played by a scripted model (no LLM, no network).

- `home_assistant` (root `LlmAgent`): switches devices itself; hands temperature requests over to
  `climate_agent` with `transfer_to_agent`; asks `memory_agent`, wrapped in an `AgentTool`, to remember and
  recall facts.
- `climate_agent` (sub-agent): reads and sets temperatures, applies a user's preferences; transfers anything
  else back to `home_assistant`.
- `memory_agent` (behind `AgentTool`): `remember` / `recall`.

Each agent's model is a `ScriptedLlm` whose rules (below) say which tools it calls for which message. One
deliberate quirk makes a case of the eval set fail: `climate_agent` passes a room to `set_temperature`
exactly as the user typed it, so "living room" in lowercase becomes `location="living room"` (marked QUIRK).

Entry point: `examples/home_automation_adk` (this file's `root_agent`), as `adk eval` finds it.
"""

from __future__ import annotations

import re

from google.adk.agents import LlmAgent
from google.adk.tools.agent_tool import AgentTool

from examples.home_automation_adk import tools
from examples.home_automation_adk.scripted_model import Reply, Rule, ScriptContext, ScriptedLlm, call

__all__ = ["climate_agent", "memory_agent", "root_agent"]

MEMORY_KEY = "note"
ROOT_NAME = "home_assistant"
CLIMATE_NAME = "climate_agent"
MEMORY_NAME = "memory_agent"
_ROOM = r"(?P<room>[A-Za-z]+(?: [A-Za-z]+)?)"
_PRONOUNS = {"i": "you", "i'm": "you're", "am": "are", "me": "you", "my": "your", "mine": "yours"}


def _second_person(text: str) -> str:
    """ "I left my keys" → "you left your keys"."""
    return re.sub(r"\b(?:i'm|i|am|me|my|mine)\b", lambda m: _PRONOUNS[m.group(0).lower()], text, flags=re.I)


def _status(ctx: ScriptContext) -> str:
    return ctx.match.group("status").upper()


def _error_or(ctx: ScriptContext, text: str) -> str:
    """`text`, or an apology when the latest tool answered with an error."""
    return f"Sorry, that didn't work: {ctx.last['error']}" if "error" in ctx.last else text


# ------------------------------------------------------------------------------------------ memory_agent
def _remembered(ctx: ScriptContext) -> str:
    return f"Got it. I'll remember that {_second_person(ctx.match.group('fact'))}."


def _recalled(ctx: ScriptContext) -> str:
    if "error" in ctx.last:
        return "You haven't asked me to remember anything yet."
    return f"You told me that {_second_person(ctx.last['value'])}."


MEMORY_RULES = [
    Rule(
        r"remember that (?P<fact>.+?)[.!]*$",
        [lambda ctx: [call("remember", key=MEMORY_KEY, value=ctx.match.group("fact"))], _remembered],
    ),
    Rule(r"what did i (?:tell you|ask you to remember)", [[call("recall", key=MEMORY_KEY)], _recalled]),
]


# ----------------------------------------------------------------------------------------- climate_agent
def _set_preferred(ctx: ScriptContext) -> Reply:
    preferences = ctx.last
    if "error" in preferences:
        return f"Sorry, I couldn't find the preferences of {ctx.match.group('user')}."
    location, temperature = preferences["preferred_location"], preferences["preferred_temperature"]
    return [call("set_temperature", location=location, temperature=temperature)]


def _preferred_set(ctx: ScriptContext) -> str:
    answer = f"OK. I've set the {ctx.last.get('location')} temperature to {ctx.last.get('temperature')}°C"
    return _error_or(ctx, answer + ", your preferred temperature.")


def _set_temperature(ctx: ScriptContext) -> Reply:
    # QUIRK (wrong argument): the room is passed exactly as the user typed it; "living room" in lowercase is
    # not "Living Room". The tool forgives it; the trajectory check does not.
    return [call("set_temperature", location=ctx.match.group("room"), temperature=int(ctx.match.group("degrees")))]


def _temperature_set(ctx: ScriptContext) -> str:
    room, degrees = ctx.match.group("room"), ctx.match.group("degrees")
    return _error_or(ctx, f"OK. I've set the {room} temperature to {degrees}°C.")


def _temperature_is(ctx: ScriptContext) -> str:
    return _error_or(ctx, f"The temperature in the {ctx.match.group('room')} is {ctx.last.get('result')}°C.")


CLIMATE_RULES = [
    Rule(
        r"\bset\b.*\bpreferred\b.*\b(?P<user>user_\w+)",
        [lambda ctx: [call("get_user_preferences", user_id=ctx.match.group("user"))], _set_preferred, _preferred_set],
    ),
    Rule(rf"\bset the {_ROOM} temperature to (?P<degrees>\d+)", [_set_temperature, _temperature_set]),
    Rule(
        rf"\btemperature in the {_ROOM}\b",
        [lambda ctx: [call("get_temperature", location=ctx.match.group("room"))], _temperature_is],
    ),
    Rule(r".", [[call("transfer_to_agent", agent_name=ROOT_NAME)]]),
]


# ---------------------------------------------------------------------------------------- home_assistant
def _switch_listed(ctx: ScriptContext) -> Reply:
    devices = ctx.last.get("devices", [])
    if not devices:
        return f"There was nothing to turn {_status(ctx).lower()} in the {ctx.match.group('room')}."
    return [
        call("set_device_info", location=d["location"], device_id=d["device_id"], status=_status(ctx)) for d in devices
    ]


def _listed_switched(ctx: ScriptContext) -> str:
    switched = [response["device_id"] for name, response in ctx.responses if name == "set_device_info"]
    listed = switched[0] if len(switched) == 1 else ", ".join(switched[:-1]) + " and " + switched[-1]
    return f"OK. I've turned {_status(ctx).lower()} {listed} in the {ctx.match.group('room')}."


def _switch_found(ctx: ScriptContext) -> Reply:
    if "error" in ctx.last:
        return f"Sorry, I couldn't find {ctx.match.group('device')}."
    device = ctx.match.group("device")
    return [call("set_device_info", location=ctx.last["location"], device_id=device, status=_status(ctx))]


def _switched(ctx: ScriptContext) -> str:
    done = ctx.response_of("set_device_info")
    return _error_or(
        ctx, f"OK. I've turned {_status(ctx).lower()} {done.get('device_id')} in the {done.get('location')}."
    )


def _device_status(ctx: ScriptContext) -> str:
    device, location, status = ctx.match.group("device"), ctx.last.get("location"), ctx.last.get("status", "")
    return _error_or(ctx, f"{device} in the {location} is currently {status.lower()}.")


def _switch_in_room(ctx: ScriptContext) -> Reply:
    device, room = ctx.match.group("device"), ctx.match.group("room")
    return [call("set_device_info", location=room, device_id=device, status=_status(ctx))]


ROOT_RULES = [
    Rule(
        r"^\s*remember that|what did i (?:tell you|ask you to remember)",
        [
            lambda ctx: [call(MEMORY_NAME, request=ctx.user_text)],
            lambda ctx: str(ctx.last.get("result", "")),
        ],
    ),
    Rule(r"\btemperature\b|\bdegrees\b", [[call("transfer_to_agent", agent_name=CLIMATE_NAME)]]),
    Rule(
        rf"\bturn (?P<status>on|off) all devices in the {_ROOM}",
        [
            lambda ctx: [
                call("list_devices", status="OFF" if _status(ctx) == "ON" else "ON", location=ctx.match.group("room"))
            ],
            _switch_listed,
            _listed_switched,
        ],
    ),
    Rule(rf"\bturn (?P<status>on|off) (?P<device>device_\d+) in the {_ROOM}", [_switch_in_room, _switched]),
    Rule(
        r"\bturn (?P<status>on|off) (?P<device>device_\d+)",
        [lambda ctx: [call("get_device_info", device_id=ctx.match.group("device"))], _switch_found, _switched],
    ),
    Rule(
        r"\bstatus of (?P<device>device_\d+)",
        [lambda ctx: [call("get_device_info", device_id=ctx.match.group("device"))], _device_status],
    ),
]

memory_agent = LlmAgent(
    name=MEMORY_NAME,
    model=ScriptedLlm(rules=MEMORY_RULES, fallback="I can only remember and recall facts."),
    description="Remembers facts the user mentions and recalls them later.",
    instruction="Store facts with `remember` and read them back with `recall`, under the key 'note'.",
    tools=[tools.remember, tools.recall],
)

climate_agent = LlmAgent(
    name=CLIMATE_NAME,
    model=ScriptedLlm(rules=CLIMATE_RULES),
    description="Reads and sets room temperatures, and applies a user's preferred temperature.",
    instruction="Handle temperature requests. Transfer anything else back to home_assistant.",
    tools=[tools.get_temperature, tools.set_temperature, tools.get_user_preferences],
)

root_agent = LlmAgent(
    name=ROOT_NAME,
    model=ScriptedLlm(rules=ROOT_RULES, fallback="Sorry, I can only help with your devices, temperatures and notes."),
    description="A home-automation assistant.",
    instruction=(
        "Switch devices with the device tools. Transfer temperature requests to climate_agent. "
        "Ask memory_agent to remember or recall facts."
    ),
    tools=[tools.get_device_info, tools.set_device_info, tools.list_devices, AgentTool(memory_agent)],
    sub_agents=[climate_agent],
)
