"""Tool calls as plain values, shared by the metrics that score them and the renderers that show them.

Internal: the public API is `agent_eval`'s; this module's names may change between releases.

A call is `(name, args)`; `align` is the multiset alignment behind Vertex AI's trajectory metrics and the HTML
report's call-by-call diff; `format_call` writes a call as `name(key=value, ...)`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from google.genai import types as genai_types

__all__ = ["Alignment", "Call", "align", "format_call"]

Call: TypeAlias = tuple[str, Mapping[str, Any]]
"""A tool call: the tool's name and its arguments (Vertex's `tool_name`, `tool_input`)."""


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
