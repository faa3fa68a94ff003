"""The home-automation agent's tools and the small simulated world they act on.

Tool names and argument names follow the home automation agent of ADK's integration tests. Like an ADK
tool's `tool_context`, the keyword-only `state` argument is supplied by the agent and is not part of the
recorded call: the world lives in the session state, so the turns of one eval case see each other's changes.
"""

from __future__ import annotations

import copy
from typing import Any, Final

__all__ = [
    "DEFAULT_WORLD",
    "ROOMS",
    "State",
    "get_device_info",
    "get_temperature",
    "get_user_preferences",
    "init_state",
    "list_devices",
    "recall",
    "remember",
    "set_device_info",
    "set_temperature",
]

State = dict[str, Any]
"""A session state holding the world: devices, temperatures, user preferences and memory."""

ROOMS: Final = ("Living Room", "Bedroom", "Kitchen", "Office", "Garage")
"""The rooms of the house, spelled as the tools expect them."""

MIN_TEMPERATURE: Final = 10
MAX_TEMPERATURE: Final = 30

DEFAULT_WORLD: Final[State] = {
    "devices": {
        "device_1": {"status": "ON", "location": "Living Room"},
        "device_2": {"status": "ON", "location": "Bedroom"},
        "device_3": {"status": "ON", "location": "Kitchen"},
        "device_4": {"status": "OFF", "location": "Office"},
        "device_5": {"status": "OFF", "location": "Garage"},
    },
    "temperatures": {"Living Room": 21, "Bedroom": 20, "Kitchen": 24, "Office": 22, "Garage": 16},
    "user_preferences": {
        "user_x": {"preferred_temperature": 21, "preferred_location": "Bedroom"},
        "user_y": {"preferred_temperature": 23, "preferred_location": "Living Room"},
    },
    "memory": {},
}
"""The house every eval case starts from (keys missing from a case's session state are taken from here)."""


def init_state(state: State) -> None:
    """Fill in every part of the world `state` lacks, with deep copies so sessions never share data."""
    for key, value in DEFAULT_WORLD.items():
        if key not in state:
            state[key] = copy.deepcopy(value)


def _room_key(rooms: dict[str, Any], location: str) -> str | None:
    """The key of `rooms` that names `location`, ignoring case (the tools are forgiving)."""
    wanted = location.casefold()
    return next((room for room in rooms if room.casefold() == wanted), None)


# ------------------------------------------------------------------------------------------------- devices
def get_device_info(device_id: str, *, state: State) -> dict[str, str]:
    """A device's status ("ON" / "OFF") and location, or an error."""
    device = state["devices"].get(device_id)
    if device is None:
        return {"error": f"Device {device_id} not found."}
    return {"status": device["status"], "location": device["location"]}


def set_device_info(location: str, device_id: str, status: str, *, state: State) -> dict[str, str]:
    """Switch a device "ON" or "OFF"; `location` must be the room the device is in."""
    device = state["devices"].get(device_id)
    if device is None:
        return {"error": f"Device {device_id} not found."}
    if device["location"].casefold() != location.casefold():
        return {"error": f"{device_id} is in the {device['location']}, not the {location}."}
    if status.upper() not in ("ON", "OFF"):
        return {"error": f"Unknown status {status!r}; use ON or OFF."}
    device["status"] = status.upper()
    return {"device_id": device_id, "status": device["status"], "location": device["location"]}


def list_devices(status: str | None = None, location: str | None = None, *, state: State) -> list[dict[str, str]]:
    """Every device, optionally only those with a given status and / or in a given room."""
    return [
        {"device_id": device_id, "status": device["status"], "location": device["location"]}
        for device_id, device in sorted(state["devices"].items())
        if (status is None or device["status"] == status.upper())
        and (location is None or device["location"].casefold() == location.casefold())
    ]


# ---------------------------------------------------------------------------------------------- temperature
def get_temperature(location: str, *, state: State) -> int | dict[str, str]:
    """The temperature of a room in °C, or an error."""
    room = _room_key(state["temperatures"], location)
    if room is None:
        return {"error": f"Location {location} not found."}
    temperature: int = state["temperatures"][room]
    return temperature


def set_temperature(location: str, temperature: int, *, state: State) -> dict[str, Any]:
    """Set a room's thermostat to a whole number of °C between 10 and 30."""
    room = _room_key(state["temperatures"], location)
    if room is None:
        return {"error": f"Location {location} not found."}
    if not MIN_TEMPERATURE <= temperature <= MAX_TEMPERATURE:
        return {"error": f"{temperature}°C is outside the allowed range of {MIN_TEMPERATURE}-{MAX_TEMPERATURE}°C."}
    state["temperatures"][room] = temperature
    return {"location": room, "temperature": temperature}


def get_user_preferences(user_id: str, *, state: State) -> dict[str, Any]:
    """A user's preferred temperature and room, or an error."""
    preferences = state["user_preferences"].get(user_id)
    if preferences is None:
        return {"error": f"No preferences found for {user_id}."}
    return dict(preferences)


# --------------------------------------------------------------------------------------------------- memory
def remember(key: str, value: str, *, state: State) -> dict[str, str]:
    """Store a fact the user asked the agent to remember."""
    state["memory"][key] = value
    return {"status": "remembered", "key": key}


def recall(key: str, *, state: State) -> dict[str, str]:
    """A fact stored with `remember`, or an error."""
    value = state["memory"].get(key)
    if value is None:
        return {"error": f"Nothing remembered under {key!r}."}
    return {"key": key, "value": value}
