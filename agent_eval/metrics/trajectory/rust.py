"""ADK-Rust's `tool_trajectory_score` (`adk-eval`): tool calls with partial credit.

`tool_trajectory_score`, options `strict_order` (default true) and `strict_args` (default false), scores each
invocation with partial credit: matched / max(len(expected), len(actual)); both empty give 1, one empty gives 0.
An expected call matches an actual call when the names are equal and, with `strict_args`, the args are equal
as Python values (deep; `1 == 1.0`), without it when every expected top-level key is in the actual args with
an equal value (extra actual args allowed). A missing `args` is `{}`. Matching follows ADK-Rust's scorer:
- strict order (ordered greedy): for each expected call in turn, take the first matching actual call after
  the previously matched one; an expected call with no such match is skipped. E=[A, B, C] vs A=[A, X, B, C]
  gives 3/4; E=[A, B] vs A=[B, A] gives 1/2.
- any order (multiset): each expected call takes the first unused matching actual call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, TypeAlias

from google.genai import types as genai_types

from agent_eval.metrics.common import bool_option, needs_explanation
from agent_eval.metrics.per_invocation import Score
from agent_eval.metrics.registry import metric
from agent_eval.results.tool_calls import format_call
from agent_eval.schema import EvalMetric, Invocation, tool_calls_of

__all__ = [
    "TRAJECTORY_OPTION_KEYS",
    "TrajectoryFlags",
    "args_match",
    "tool_trajectory_score",
]

Call = genai_types.FunctionCall
Pairs: TypeAlias = list[tuple[int, int]]
"""Matched (expected index, actual index) pairs."""


# ------------------------------------------------------------------------------------------ tool trajectory
def args_match(expected: Mapping[str, Any], actual: Mapping[str, Any], *, strict: bool) -> bool:
    """Deep equality when `strict`; otherwise every expected key is in `actual` with an equal value."""
    if strict:
        return dict(expected) == dict(actual)
    return all(key in actual and actual[key] == value for key, value in expected.items())


def _calls_match(expected: Call, actual: Call, strict_args: bool) -> bool:
    return expected.name == actual.name and args_match(expected.args or {}, actual.args or {}, strict=strict_args)


def _ordered_pairs(expected: Sequence[Call], actual: Sequence[Call], strict_args: bool) -> Pairs:
    pairs: Pairs = []
    start = 0
    for e_index, wanted in enumerate(expected):
        found = next((i for i in range(start, len(actual)) if _calls_match(wanted, actual[i], strict_args)), None)
        if found is not None:
            pairs.append((e_index, found))
            start = found + 1
    return pairs


def _unordered_pairs(expected: Sequence[Call], actual: Sequence[Call], strict_args: bool) -> Pairs:
    pairs: Pairs = []
    unused = list(range(len(actual)))
    for e_index, wanted in enumerate(expected):
        found = next((i for i in unused if _calls_match(wanted, actual[i], strict_args)), None)
        if found is not None:
            pairs.append((e_index, found))
            unused.remove(found)
    return pairs


def _trajectory_score(
    expected: Sequence[Call], actual: Sequence[Call], strict_order: bool, strict_args: bool
) -> tuple[float, Pairs]:
    """ADK-Rust's trajectory score with partial credit (see the module docstring), and the matched pairs."""
    align = _ordered_pairs if strict_order else _unordered_pairs
    pairs = align(expected, actual, strict_args)
    if not expected or not actual:
        return float(not expected and not actual), pairs
    return len(pairs) / max(len(expected), len(actual)), pairs


def _trajectory_detail(expected: Sequence[Call], actual: Sequence[Call], pairs: Pairs) -> dict[str, list[str]]:
    matched_expected, matched_actual = {e for e, _ in pairs}, {a for _, a in pairs}
    return {
        "matched": [format_call(actual[a]) for _, a in pairs],
        "missing": [format_call(c) for i, c in enumerate(expected) if i not in matched_expected],
        "unexpected": [f"{format_call(c)} at step {i + 1}" for i, c in enumerate(actual) if i not in matched_actual],
    }


def _trajectory_explanation(detail: dict[str, list[str]], expected: Sequence[Call], actual: Sequence[Call]) -> str:
    total = max(len(expected), len(actual))
    parts = [f"{len(detail['matched'])} of {total} call(s) matched"]
    if detail["missing"]:
        parts.append(f"unmatched expected: {', '.join(detail['missing'])}")
    if detail["unexpected"]:
        parts.append(f"unmatched actual: {', '.join(detail['unexpected'])}")
    return "; ".join(parts)


class TrajectoryFlags(NamedTuple):
    """The options of `tool_trajectory_score`, with ADK-Rust's defaults."""

    strict_order: bool = True
    strict_args: bool = False


TRAJECTORY_OPTION_KEYS = frozenset(TrajectoryFlags._fields)
"""The options of `tool_trajectory_score` (any other key is rejected when the config is resolved)."""


def _trajectory_flags(eval_metric: EvalMetric) -> TrajectoryFlags:
    """The criterion's flags; raises `EvalInputError` when one is not a boolean."""
    return TrajectoryFlags(
        bool_option(eval_metric, "strict_order", True), bool_option(eval_metric, "strict_args", False)
    )


@metric(
    "tool_trajectory_score",
    description="Tool calls matched / max(expected, actual), with strict_order and strict_args (ADK-Rust).",
    options=_trajectory_flags,
    option_keys=TRAJECTORY_OPTION_KEYS,
    per_invocation=True,
    explain_when=needs_explanation,
    details=TrajectoryFlags._asdict,
)
def tool_trajectory_score(actual: Invocation, expected: Invocation, *, options: TrajectoryFlags) -> Score:
    """ADK-Rust's tool trajectory score; `details.invocations` holds each alignment (see the module docstring).

    Raises:
        EvalInputError: `strict_order` or `strict_args` is not a boolean.
    """
    actual_calls, expected_calls = tool_calls_of(actual), tool_calls_of(expected)
    score, pairs = _trajectory_score(expected_calls, actual_calls, options.strict_order, options.strict_args)
    detail = _trajectory_detail(expected_calls, actual_calls, pairs)
    return Score(score, _trajectory_explanation(detail, expected_calls, actual_calls), {"invocations": detail})
