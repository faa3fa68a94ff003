"""Vertex AI's trajectory metrics, defined precisely (Google scores them server-side and leaves edge cases open).

A call is a tool name plus its arguments; two calls are equal when the names are equal and the arguments
are equal as Python dicts (`1 == 1.0`; a missing `args` is `{}`). Per invocation, *predicted* = the actual
tool calls and *reference* = the expected ones; the overall score is the mean over invocations.

- `trajectory_exact_match`: 1 if predicted and reference have the same length and are equal call by call.
- `trajectory_in_order_match`: 1 if reference is a subsequence of predicted (extras allowed, order kept).
- `trajectory_any_order_match`: 1 if every reference call is matched by a distinct predicted call.
- `trajectory_precision`: matched / len(predicted). `trajectory_recall`: matched / len(reference).
- `trajectory_single_tool_use` (option `tool_name`, required): 1 if the invocation calls that tool at least once.

Duplicates (multiset counting): `matched` is the size of the multiset intersection, so each reference call
justifies at most one predicted call and the other way round. Predicted [A, A] against reference [A]:
precision 1/2, recall 1, any_order 1, in_order 1, exact 0; predicted [A] against reference [A, A]: precision 1,
recall 1/2, any_order 0, in_order 0.

Empty trajectories: both empty gives 1 for every metric. One side empty gives 0 for exact, precision and
recall. An empty reference gives in_order = any_order = 1 even when calls were predicted: "all reference calls
appear" holds vacuously and extra calls are allowed by definition (ADK's IN_ORDER / ANY_ORDER agree); use
`trajectory_exact_match` or `trajectory_precision` to penalise calls where none were expected. An empty
predicted trajectory against a non-empty reference gives 0 for all five.

The functions on plain `(name, args)` sequences (`exact_match`, `in_order_match`, `any_order_match`,
`precision`, `recall`, `single_tool_use`) serve rows of Vertex's `predicted_trajectory` /
`reference_trajectory` columns (`{tool_name, tool_input}`) without invocations.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeAlias

from google.genai import types as genai_types

from agent_eval.errors import EvalInputError
from agent_eval.metrics.common import needs_explanation
from agent_eval.metrics.per_invocation import Score
from agent_eval.metrics.registry import MetricFunction, metric
from agent_eval.results.tool_calls import Alignment, Call, align, format_call
from agent_eval.schema import EvalMetric, Invocation, tool_calls_of

__all__ = [
    "any_order_match",
    "exact_match",
    "in_order_match",
    "precision",
    "recall",
    "single_tool_use",
    "trajectory_any_order_match",
    "trajectory_exact_match",
    "trajectory_in_order_match",
    "trajectory_precision",
    "trajectory_recall",
    "trajectory_single_tool_use",
]

TrajectoryScore: TypeAlias = Callable[[Sequence[Call], Sequence[Call]], float]


def exact_match(predicted: Sequence[Call], reference: Sequence[Call]) -> float:
    """1.0 if the trajectories are equal call by call (both empty included), else 0.0."""
    return float(list(predicted) == list(reference))


def in_order_match(predicted: Sequence[Call], reference: Sequence[Call]) -> float:
    """1.0 if `reference` is a subsequence of `predicted` (an empty reference always is), else 0.0."""
    position = 0
    for call in predicted:
        if position < len(reference) and call == reference[position]:
            position += 1
    return float(position == len(reference))


def any_order_match(predicted: Sequence[Call], reference: Sequence[Call]) -> float:
    """1.0 if every reference call is matched by a distinct predicted call (multiset inclusion), else 0.0."""
    return float(not align(predicted, reference).missing)


def precision(predicted: Sequence[Call], reference: Sequence[Call]) -> float:
    """Matched calls / len(predicted), multiset counting; 1.0 when both are empty, 0.0 when only one is."""
    if not predicted:
        return float(not reference)
    return len(align(predicted, reference).matched) / len(predicted)


def recall(predicted: Sequence[Call], reference: Sequence[Call]) -> float:
    """Matched calls / len(reference), multiset counting; 1.0 when both are empty, 0.0 when only one is."""
    if not reference:
        return float(not predicted)
    return len(align(predicted, reference).matched) / len(reference)


def single_tool_use(predicted: Sequence[Call], tool_name: str) -> float:
    """1.0 if `tool_name` is called at least once in `predicted`, else 0.0."""
    return float(any(name == tool_name for name, _ in predicted))


# ------------------------------------------------------------------------------------- invocation metrics
def _calls(invocation: Invocation) -> list[Call]:
    return [(call.name or "", call.args or {}) for call in tool_calls_of(invocation)]


def _show(calls: Sequence[Call]) -> str:
    return ", ".join(format_call(genai_types.FunctionCall(name=name, args=dict(args))) for name, args in calls)


def _explain(predicted: Sequence[Call], reference: Sequence[Call], alignment: Alignment) -> str:
    """One call replaced by another: where; otherwise what is missing, unexpected or out of order."""
    if len(alignment.missing) == 1 and len(alignment.unexpected_at) == 1:
        step = alignment.unexpected_at[0] + 1
        return f"expected {_show(alignment.missing)}, got {_show(alignment.unexpected)} at step {step}"
    parts = [f"{len(alignment.matched)} of {len(reference)} expected call(s) made"]
    if alignment.missing:
        parts.append(f"missing {_show(alignment.missing)}")
    if alignment.unexpected_at:
        parts.append(f"unexpected {_show(alignment.unexpected)}")
    if not alignment.missing and not in_order_match(predicted, reference):
        parts.append(f"expected the order [{_show(reference)}], got [{_show(predicted)}]")
    return "; ".join(parts)


def _detail(alignment: Alignment) -> dict[str, list[str]]:
    return {
        "matched": [_show([call]) for call in alignment.matched],
        "missing": [_show([call]) for call in alignment.missing],
        "unexpected": [f"{_show([alignment.predicted[i]])} at step {i + 1}" for i in alignment.unexpected_at],
    }


def _scored(actual: Invocation, expected: Invocation, score: TrajectoryScore) -> Score:
    """One invocation pair's score, why, and its alignment (kept as `details.invocations[i]`)."""
    predicted, reference = _calls(actual), _calls(expected)
    value, alignment = score(predicted, reference), align(predicted, reference)
    return Score(value, _explain(predicted, reference, alignment), {"invocations": _detail(alignment)})


def _vertex_match(name: str, score: TrajectoryScore, description: str) -> MetricFunction:
    """Register Vertex AI's trajectory metric `name`: each invocation's tool calls scored by `score` against the
    reference ones, an imperfect score explained, the alignment kept as `details.invocations`."""

    def scored(actual: Invocation, expected: Invocation) -> Score:
        return _scored(actual, expected, score)

    scored.__name__ = scored.__qualname__ = name
    scored.__doc__ = f"Vertex AI's {name} (see the module docstring): {description}"
    return metric(name, description=description, per_invocation=True, explain_when=needs_explanation)(scored)


trajectory_exact_match = _vertex_match(
    "trajectory_exact_match", exact_match, "1 if the tool calls equal the reference ones in order (Vertex AI)."
)
trajectory_in_order_match = _vertex_match(
    "trajectory_in_order_match",
    in_order_match,
    "1 if the reference tool calls appear in order, extras allowed (Vertex AI).",
)
trajectory_any_order_match = _vertex_match(
    "trajectory_any_order_match",
    any_order_match,
    "1 if the reference tool calls appear in any order, extras allowed (Vertex AI).",
)
trajectory_precision = _vertex_match(
    "trajectory_precision", precision, "Share of the tool calls made that are in the reference (Vertex AI)."
)
trajectory_recall = _vertex_match(
    "trajectory_recall", recall, "Share of the reference tool calls that were made (Vertex AI)."
)


def _tool_name(eval_metric: EvalMetric) -> str:
    value = eval_metric.option("tool_name")
    if not isinstance(value, str) or not value:
        raise EvalInputError(
            f"a tool name (a non-empty string) is required, e.g. {{'tool_name': 'get_weather'}}; got {value!r}",
            field=f"criteria.{eval_metric.metric_name}.tool_name",
        )
    return value


@metric(
    "trajectory_single_tool_use",
    description="1 if the invocation calls the tool named by the `tool_name` option (Vertex AI).",
    requires_expected=False,
    options=_tool_name,
    option_keys={"tool_name"},
    per_invocation=True,
    uses_expected=False,
)
def trajectory_single_tool_use(actual: Invocation, expected: None, *, options: str) -> float | tuple[float, str]:
    """Vertex AI's single tool use: per invocation, whether the tool `tool_name` (`options`) is called at least once.

    Raises:
        EvalInputError: the `tool_name` option is missing or not a non-empty string.
    """
    predicted = _calls(actual)
    if single_tool_use(predicted, options):
        return 1.0
    made = ", ".join(sorted({name for name, _ in predicted})) or "no tools"
    return 0.0, f"{options} was not called (called: {made})"
