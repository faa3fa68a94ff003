"""The home-automation tools of `examples/home_automation/tools.py`, as ADK function tools.

Each tool takes ADK's `tool_context` instead of the `state` keyword: the world (devices, temperatures,
preferences, memory) lives in the ADK session state, so the turns of an eval case see each other's changes,
and a case's `session_input.state` can replace any part of it. A tool works on a copy of the world and writes
back only the parts it changed, through `tool_context.state`, so ADK records them as the event's state delta.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from google.adk.tools.tool_context import ToolContext

from examples.home_automation import tools as home

__all__ = [
    "get_device_info",
    "get_temperature",
    "get_user_preferences",
    "list_devices",
    "recall",
    "remember",
    "set_device_info",
    "set_temperature",
]


def _on_world(tool_context: ToolContext, tool: Callable[..., Any], **args: Any) -> Any:
    """Run a home-automation tool on the session's world and write back the parts it changed."""
    world: home.State = {
        key: copy.deepcopy(tool_context.state[key]) for key in home.DEFAULT_WORLD if key in tool_context.state
    }
    home.init_state(world)
    before = copy.deepcopy(world)
    result = tool(**args, state=world)
    for key, value in world.items():
        if value != before[key] or key not in tool_context.state:
            tool_context.state[key] = value
    return result


def get_device_info(device_id: str, tool_context: ToolContext) -> dict[str, str]:
    """Get the status ("ON" / "OFF") and the location of a device.

    Args:
        device_id: the device, e.g. "device_2".
    """
    result: dict[str, str] = _on_world(tool_context, home.get_device_info, device_id=device_id)
    return result


def set_device_info(location: str, device_id: str, status: str, tool_context: ToolContext) -> dict[str, str]:
    """Switch a device "ON" or "OFF".

    Args:
        location: the room the device is in, e.g. "Bedroom".
        device_id: the device, e.g. "device_2".
        status: "ON" or "OFF".
    """
    result: dict[str, str] = _on_world(
        tool_context, home.set_device_info, location=location, device_id=device_id, status=status
    )
    return result


def list_devices(tool_context: ToolContext, status: str | None = None, location: str | None = None) -> dict[str, Any]:
    """List the devices, optionally only those with a status and / or in a room.

    Args:
        status: "ON" or "OFF" (optional).
        location: a room, e.g. "Kitchen" (optional).
    """
    filters = {name: value for name, value in (("status", status), ("location", location)) if value is not None}
    return {"devices": _on_world(tool_context, home.list_devices, **filters)}


def get_temperature(location: str, tool_context: ToolContext) -> int | dict[str, str]:
    """Get the temperature of a room in °C.

    Args:
        location: the room, e.g. "Kitchen".
    """
    result: int | dict[str, str] = _on_world(tool_context, home.get_temperature, location=location)
    return result


def set_temperature(location: str, temperature: int, tool_context: ToolContext) -> dict[str, Any]:
    """Set a room's thermostat to a whole number of °C between 10 and 30.

    Args:
        location: the room, e.g. "Living Room".
        temperature: the temperature in °C.
    """
    result: dict[str, Any] = _on_world(tool_context, home.set_temperature, location=location, temperature=temperature)
    return result


def get_user_preferences(user_id: str, tool_context: ToolContext) -> dict[str, Any]:
    """Get a user's preferred temperature and room.

    Args:
        user_id: the user, e.g. "user_x".
    """
    result: dict[str, Any] = _on_world(tool_context, home.get_user_preferences, user_id=user_id)
    return result


def remember(key: str, value: str, tool_context: ToolContext) -> dict[str, str]:
    """Remember a fact the user mentioned.

    Args:
        key: a name for the fact.
        value: the fact.
    """
    result: dict[str, str] = _on_world(tool_context, home.remember, key=key, value=value)
    return result


def recall(key: str, tool_context: ToolContext) -> dict[str, str]:
    """Recall a fact stored with `remember`.

    Args:
        key: the fact's name.
    """
    result: dict[str, str] = _on_world(tool_context, home.recall, key=key)
    return result
