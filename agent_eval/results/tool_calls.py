"""Tool calls as plain values, shared by the metrics that score them and the renderers that show them.

Internal: the public API is `agent_eval`'s; this module's names may change between releases.

A call is `(name, args)`; `align` is the multiset alignment behind Vertex AI's trajectory metrics and the HTML
report's call-by-call diff; `format_call` writes a call as `name(key=value, ...)`; `argument_diff` says which
arguments of two calls of the same tool differ (`location: 'Living Room' → 'living room'`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from google.genai import types as genai_types

__all__ = ["ABSENT_ARGUMENT", "Alignment", "Call", "align", "argument_diff", "format_call"]

Call: TypeAlias = tuple[str, Mapping[str, Any]]
"""A tool call: the tool's name and its arguments (Vertex's `tool_name`, `tool_input`)."""

ABSENT_ARGUMENT = "(absent)"
"""How `argument_diff` shows an argument one of the two calls does not pass."""


@dataclass(frozen=True)
class Alignment:
    """The multiset alignment of a predicted trajectory with a reference one.

    Attributes:
        predicted: the predicted calls.
        matched: the predicted calls matched by a reference call, in reference order.
        missing: the reference calls no predicted call matched.
        unexpected_at: the positions (0-based) of the predicted calls no reference call matched.
    """

    predicted: Sequence[Call]
    matched: list[Call]
    missing: list[Call]
    unexpected_at: list[int]

    @property
    def unexpected(self) -> list[Call]:
        """The predicted calls no reference call matched."""
        return [self.predicted[i] for i in self.unexpected_at]


def align(predicted: Sequence[Call], reference: Sequence[Call]) -> Alignment:
    """Match each reference call to the first unused equal predicted call (the multiset intersection)."""
    unused = list(range(len(predicted)))
    matched: list[Call] = []
    missing: list[Call] = []
    for wanted in reference:
        index = next((i for i in unused if predicted[i] == wanted), None)
        if index is None:
            missing.append(wanted)
        else:
            unused.remove(index)
            matched.append(predicted[index])
    return Alignment(predicted=predicted, matched=matched, missing=missing, unexpected_at=unused)


def format_call(call: genai_types.FunctionCall) -> str:
    """`name(key=value, ...)` with values in Python repr, e.g. `set_temperature(location='Bedroom', temperature=23)`."""
    args: dict[str, Any] = call.args or {}
    shown = ", ".join(f"{key}={value!r}" for key, value in args.items())
    return f"{call.name}({shown})"


def argument_diff(expected: Call, actual: Call) -> list[str]:
    """The arguments that differ between two calls of the same tool, one line each, values in Python repr:
    `location: 'Living Room' → 'living room'`; an argument only one call passes shows `(absent)` on the other
    side. The expected call's arguments come first, in its order, then those only the actual call passes.

    Raises:
        ValueError: the calls name different tools (their arguments are not comparable).
    """
    if expected[0] != actual[0]:
        raise ValueError(f"argument_diff compares calls of one tool, not {expected[0]!r} and {actual[0]!r}")
    names = list(dict.fromkeys([*expected[1], *actual[1]]))
    return [
        f"{name}: {_argument(expected[1], name)} → {_argument(actual[1], name)}"
        for name in names
        if name not in expected[1] or name not in actual[1] or expected[1][name] != actual[1][name]
    ]


def _argument(args: Mapping[str, Any], name: str) -> str:
    return repr(args[name]) if name in args else ABSENT_ARGUMENT
