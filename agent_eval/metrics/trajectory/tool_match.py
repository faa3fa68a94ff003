"""`tool_trajectory_match`: tool calls aligned optimally, with order modes, argument rules and partial credit.

Criterion options (snake or camel case; an unknown option is an error, checked when the config is resolved;
ADK's common `include_intermediate_responses_in_final` is accepted and has no effect here), e.g.::

    {"threshold": 0.8, "order": "in_order", "score": "f1",
     "args": {"mode": "exact", "ignore_keys": ["request_id"], "keys": {"city": {"fuzzy": 0.85}}},
     "tools": {"set_temperature": {"args": {"keys": {"temperature": {"tolerance": 0.5}}}}}}

Pair similarity (in [0, 1]). Calls with different names score 0. Otherwise their args decide, under `args` or
the tool's entry in `tools` (laid over `args`: its `mode` replaces the default one when given, its key rules
replace the default rules key by key). Args `mode`: `exact` (default) needs the same keys with deep-equal
values (`1 == 1.0`); `subset` needs only the expected keys (extra actual keys allowed, in nested dicts too);
`ignore` compares names only. `keys: {name: rule}` sets a rule for a top-level argument; `ignore_keys: [name]`
is short for `{ignore: true}` (an explicit `keys` entry wins). Rules:
- `{ignore: true}`: the key is not compared, whether or not either side has it;
- `{case_insensitive: true}`: strings compared casefolded;
- `{fuzzy: t}` (0 < t <= 1): strings match when rapidfuzz `fuzz.ratio(expected, actual) / 100 >= t`;
- `{tolerance: a}`, `{rel_tolerance: r}`: numbers match when `math.isclose(expected, actual, rel_tol=r,
  abs_tol=a)`;
- `{comparator: "pkg.module:function"}`: `function(expected, actual)` returns a bool or a float in [0, 1]
  (imported once, when the options are read; it cannot be combined with other rules, nor can `ignore`).
A built-in rule applies to the whole value and recursively to the items of lists (same length, item by item)
and dicts. Built-in rules give 1 or 0 per key, comparators may give partial credit; a pair scores the minimum
over its compared keys.

Alignment. Each expected call pairs with at most one actual call and vice versa (multisets: two identical
expected calls need two actual ones); pairs of similarity 0 are never made. Ordered modes (`exact`,
`in_order`) take the order-preserving pairing of maximum total similarity (a weighted longest common
subsequence by dynamic programming); unordered modes (`any_order`, `subset`, `superset`) take a maximum-weight
bipartite matching (`scipy.optimize.linear_sum_assignment`). Both are optimal where a greedy pass is not: with
a fuzzy rule, greedy can give an actual call to the first expected call it resembles and leave a later
expected call, which only that actual call fits, unmatched.

Scores. With W the summed similarity of the pairs: precision = W / len(actual), recall = W / len(expected),
F1 their harmonic mean; all three are 1 when both lists are empty and 0 when only one is. Option `score`:
`f1` (default), `precision`, `recall`, or `binary`: 1 when the `order` mode (default `exact`) holds with
pairs of similarity 1 only:
- `exact`: every expected call matched in order, and nothing else called;
- `in_order`: every expected call matched in order, extra calls anywhere allowed;
- `any_order` (and its synonym `superset`): every expected call matched in any order, extras allowed;
- `subset`: every actual call matched to its own expected call (nothing unexpected); expected calls may be
  left out.
An empty expected list satisfies every mode but `exact` (as in ADK). Without key rules, `binary` with
`exact`, `in_order` or `any_order` gives ADK's `tool_trajectory_avg_score` verdict.

Retries, duplicates, parallel calls. A retried call (expected `[w]`, actual `[w, w]`) scores recall 1,
precision 0.5, F1 2/3, and satisfies `in_order`, `any_order` and `superset` but not `exact` or `subset`. A
duplicated expected call needs as many actual calls. Calls made in parallel in one model turn come in an
arbitrary order: use an unordered mode for them; `exact` and `in_order` hold the recorded order strictly.

Per invocation the score is the selected value; the overall score is the mean over invocations, and pass
means `score >= threshold`. `details` holds `order`, `score` and `invocations[i]`: the alignment of
invocation i (`matched` as `[expected index, actual index, similarity]`, `missing` expected and `extra` actual
indices, `precision`, `recall`, `f1`, `satisfied`, `score`). The explanation reads e.g. `matched 2/3; missing
set_temperature(location='Bedroom', temperature=21); extra get_device_info(device_id='device_5')`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache

from google.genai import types as genai_types

from agent_eval.metrics.common import model_option_keys
from agent_eval.metrics.per_invocation import Score
from agent_eval.metrics.registry import metric
from agent_eval.metrics.trajectory.matching import Alignment, Call, Matcher, MatchOptions, parse_options
from agent_eval.results.tool_calls import format_call
from agent_eval.schema import EvalMetric, Invocation, tool_calls_of

__all__ = ["as_calls", "explain_alignment", "matcher_for", "tool_trajectory_match"]


def as_calls(calls: Sequence[genai_types.FunctionCall]) -> list[Call]:
    """Plain `(name, args)` tuples for the matching engine (a missing name is `""`, missing args `{}`)."""
    return [(call.name or "", call.args or {}) for call in calls]


def matcher_for(eval_metric: EvalMetric) -> Matcher:
    """The matcher for a criterion's options, validated once per distinct options (also the up-front check).

    Raises:
        EvalInputError: a bad option, named as `criteria.<metric name>.<option path>`.
    """
    options = (eval_metric.criterion.model_extra if eval_metric.criterion else None) or {}
    return _matcher(eval_metric.metric_name, json.dumps(options, sort_keys=True, default=repr))


@lru_cache(maxsize=128)
def _matcher(metric_name: str, options_json: str) -> Matcher:
    return Matcher(parse_options(json.loads(options_json), field=f"criteria.{metric_name}"))


def _calls(indices: Sequence[int], calls: Sequence[genai_types.FunctionCall]) -> str:
    return ", ".join(format_call(calls[i]) for i in indices)


def _out_of_order(
    alignment: Alignment, matcher: Matcher, expected: Sequence[Call], actual: Sequence[Call]
) -> list[tuple[int, int]]:
    """Greedy pairs of a missing expected call and an extra actual call that match: only the order was wrong."""
    free, pairs = list(alignment.extra), []
    for i in alignment.missing:
        j = next((j for j in free if matcher.similarity(expected[i], actual[j]) > 0.0), None)
        if j is not None:
            free.remove(j)
            pairs.append((i, j))
    return pairs


def explain_alignment(
    alignment: Alignment,
    matcher: Matcher,
    expected: Sequence[genai_types.FunctionCall],
    actual: Sequence[genai_types.FunctionCall],
) -> str | None:
    """E.g. `matched 2/3; missing set_temperature(location='Bedroom', temperature=21); extra f(x=1)`.

    A missing call that was made, but out of the required order, is shown as `out of order` instead of as
    missing and extra. None when every call is matched in full and nothing else was called.
    """
    partial = [(i, j, s) for i, j, s in alignment.matched if s < 1.0]
    if not (partial or alignment.missing or alignment.extra):
        return None
    moved = _out_of_order(alignment, matcher, as_calls(expected), as_calls(actual))
    parts = [f"matched {len(alignment.matched)}/{len(expected)}"]
    if partial:
        shown = (f"{format_call(actual[j])} for {format_call(expected[i])} ({s:.2f})" for i, j, s in partial)
        parts.append(f"partial {', '.join(shown)}")
    if moved:
        parts.append(f"out of order {_calls([i for i, _ in moved], expected)}")
    if missing := [i for i in alignment.missing if i not in {i for i, _ in moved}]:
        parts.append(f"missing {_calls(missing, expected)}")
    if extra := [j for j in alignment.extra if j not in {j for _, j in moved}]:
        parts.append(f"extra {_calls(extra, actual)}")
    return "; ".join(parts)


def _order_and_score(matcher: Matcher) -> dict[str, str]:
    """The options every result records in `details`."""
    return {"order": matcher.options.order, "score": matcher.options.score}


@metric(
    "tool_trajectory_match",
    description="Tool calls aligned optimally with the expected ones: order modes (exact, in_order, any_order, "
    "subset, superset), per-argument rules (ignore, subset, fuzzy, tolerance, custom), F1 / precision / recall "
    "/ binary with partial credit.",
    options=matcher_for,
    option_keys=model_option_keys(MatchOptions),
    per_invocation=True,
    details=_order_and_score,
)
def tool_trajectory_match(actual: Invocation, expected: Invocation, *, options: Matcher) -> Score:
    """The trajectory metric described in the module docstring; `details.invocations` holds each alignment."""
    actual_calls, expected_calls = tool_calls_of(actual), tool_calls_of(expected)
    alignment = options.align(as_calls(expected_calls), as_calls(actual_calls))
    explanation = explain_alignment(alignment, options, expected_calls, actual_calls)
    return Score(alignment.score, explanation, {"invocations": alignment.as_dict()})
