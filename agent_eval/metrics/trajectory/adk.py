"""ADK's `tool_trajectory_avg_score`: per invocation 1.0 when the tool calls match, 0.0 otherwise.

Rules (google-adk 2.x): a call matches when the names are equal and the args are equal as
Python dicts (`1 == 1.0`; call ids ignored; a missing `args` is `{}`); `ignore_args` compares names only.
EXACT: same length, positional match. IN_ORDER: the expected calls are a subsequence of the actual ones
(greedy). ANY_ORDER: each expected call consumes the first unused matching actual call. With no expected
calls, IN_ORDER and ANY_ORDER give 1; EXACT gives 1 only when there are no actual calls either.
The overall score is the mean over invocations; pass means `score >= threshold`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence

from google.genai import types as genai_types
from pydantic import field_validator

from agent_eval.errors import EvalInputError
from agent_eval.metrics.common import CriterionOptions
from agent_eval.metrics.registry import metric
from agent_eval.results.tool_calls import format_call
from agent_eval.schema import Invocation, tool_calls_of

__all__ = ["MatchType", "ToolTrajectoryOptions", "tool_trajectory_avg_score", "trajectory_matches"]

Call = genai_types.FunctionCall
CallsEqual = Callable[[Call, Call], bool]


class MatchType(enum.Enum):
    """How actual tool calls are matched against expected ones."""

    EXACT = "EXACT"
    IN_ORDER = "IN_ORDER"
    ANY_ORDER = "ANY_ORDER"

    @classmethod
    def parse(cls, value: object) -> MatchType:
        """Case-insensitive, `-` or space for `_`, as ADK accepts it; also ADK's enum integers 0, 1, 2."""
        if isinstance(value, MatchType):
            return value
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(cls):
            return list(cls)[value]
        if isinstance(value, str):
            # ADK also accepts "in-order", " IN_ORDER ", "in order".
            name = "_".join(value.strip().replace("-", " ").upper().split())
            if name in cls.__members__:
                return cls[name]
        choices = ", ".join(cls.__members__)
        raise EvalInputError(f"unknown match_type {value!r}; choose one of {choices}")


class ToolTrajectoryOptions(CriterionOptions):
    """Options of `tool_trajectory_avg_score` (ADK's ToolTrajectoryCriterion)."""

    match_type: MatchType = MatchType.EXACT
    ignore_args: bool = False

    @field_validator("match_type", mode="before")
    @classmethod
    def _parse_match_type(cls, value: object) -> MatchType:
        return MatchType.parse(value)


def _calls_equal(ignore_args: bool) -> CallsEqual:
    def equal(actual: Call, expected: Call) -> bool:
        return actual.name == expected.name and (ignore_args or (actual.args or {}) == (expected.args or {}))

    return equal


def trajectory_matches(
    actual: Sequence[Call], expected: Sequence[Call], match_type: MatchType, ignore_args: bool = False
) -> bool:
    """Whether `actual` matches `expected` under ADK's rules for `match_type`."""
    equal = _calls_equal(ignore_args)
    if match_type is MatchType.EXACT:
        return len(actual) == len(expected) and all(equal(a, e) for a, e in zip(actual, expected, strict=True))
    if not expected:
        return True
    if match_type is MatchType.IN_ORDER:
        position = 0
        for call in actual:
            if position < len(expected) and equal(call, expected[position]):
                position += 1
        return position == len(expected)
    unused = list(actual)
    for wanted in expected:
        index = next((i for i, call in enumerate(unused) if equal(call, wanted)), None)
        if index is None:
            return False
        unused.pop(index)
    return True


def _explain(actual: Sequence[Call], expected: Sequence[Call], match_type: MatchType, ignore_args: bool) -> str:
    """A readable reason for a mismatch: the first step where the calls differ."""
    equal = _calls_equal(ignore_args)
    for step, (got, wanted) in enumerate(zip(actual, expected, strict=False), start=1):
        if not equal(got, wanted) and match_type is MatchType.EXACT:
            return f"expected {format_call(wanted)}, got {format_call(got)} at step {step}"
    if len(actual) < len(expected):
        missing = [format_call(c) for c in expected if not any(equal(a, c) for a in actual)]
        return f"missing call(s): {', '.join(missing) or format_call(expected[len(actual)])}"
    if len(actual) > len(expected) and match_type is MatchType.EXACT:
        return f"unexpected extra call(s): {', '.join(format_call(c) for c in actual[len(expected) :])}"
    shown_expected = ", ".join(format_call(c) for c in expected) or "no calls"
    shown_actual = ", ".join(format_call(c) for c in actual) or "no calls"
    return f"expected [{shown_expected}] ({match_type.value}), got [{shown_actual}]"


@metric(
    "tool_trajectory_avg_score",
    options=ToolTrajectoryOptions,
    description="Share of invocations whose tool calls match the expected ones (ADK; EXACT / IN_ORDER / "
    "ANY_ORDER, ignore_args).",
    per_invocation=True,
)
def tool_trajectory_avg_score(
    actual: Invocation, expected: Invocation, *, match_type: MatchType, ignore_args: bool
) -> float | tuple[float, str]:
    """ADK's tool trajectory metric (see the module docstring for the exact rules): 1.0 on a match, else 0.0
    with the first difference."""
    actual_calls, expected_calls = tool_calls_of(actual), tool_calls_of(expected)
    if trajectory_matches(actual_calls, expected_calls, match_type, ignore_args):
        return 1.0
    return 0.0, _explain(actual_calls, expected_calls, match_type, ignore_args)
