"""The tool-call alignment engine behind `tool_trajectory_match`: options, pair similarity, optimal alignment.

Calls are plain `(name, args)` tuples, converted once from genai types by the caller. The rules (pair
similarity, order modes, scores) are written out in `agent_eval.metrics.trajectory.tool_match`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal, Self, TypeAlias, cast

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError
from rapidfuzz import fuzz

from agent_eval.errors import EvalInputError
from agent_eval.metrics.common import CriterionOptions
from agent_eval.metrics.registry import import_function

__all__ = [
    "Alignment",
    "ArgsRules",
    "Call",
    "KeyRule",
    "MatchOptions",
    "Matcher",
    "ToolRules",
    "ordered_alignment",
    "parse_options",
    "precision_recall_f1",
    "unordered_alignment",
]

Call: TypeAlias = tuple[str, Mapping[str, Any]]
Pair: TypeAlias = tuple[int, int, float]
Similarity: TypeAlias = Callable[[Any, Any], float]


class _Options(BaseModel):
    """Snake or camel keys; an unknown key is an error that lists the valid ones."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, loc_by_alias=False, frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            valid = set(cls.model_fields) | {to_camel(name) for name in cls.model_fields}
            for key in data:
                if key not in valid:
                    raise PydanticCustomError(
                        "unknown_option",
                        "unknown option {shown}; valid options: {valid}",
                        {"key": str(key), "shown": repr(key), "valid": ", ".join(cls.model_fields)},
                    )
        return data


class KeyRule(_Options):
    """How one argument is compared; `{}` means deep equality."""

    ignore: bool = False
    fuzzy: float | None = Field(default=None, gt=0.0, le=1.0)
    tolerance: float = Field(default=0.0, ge=0.0)
    rel_tolerance: float = Field(default=0.0, ge=0.0)
    case_insensitive: bool = False
    comparator: str | None = None

    @field_validator("comparator")
    @classmethod
    def _importable(cls, path: str | None) -> str | None:
        if path is not None:
            try:
                _load_comparator(path)
            except EvalInputError as error:
                raise ValueError(error.message) from None
        return path

    @model_validator(mode="after")
    def _one_kind(self) -> Self:
        others = self.model_fields_set - {"ignore", "comparator"}
        if self.ignore and (others or self.comparator):
            raise ValueError("'ignore' cannot be combined with other rules")
        if self.comparator and others:
            raise ValueError("'comparator' cannot be combined with other rules")
        return self


class ArgsRules(_Options):
    """How the args of two calls of the same tool are compared."""

    mode: Literal["exact", "ignore", "subset"] = "exact"
    keys: dict[str, KeyRule] = Field(default_factory=dict)
    ignore_keys: list[str] = Field(default_factory=list)

    def all_keys(self) -> dict[str, KeyRule]:
        """`keys` with `ignore_keys` folded in (an explicit `keys` entry wins)."""
        return {**{key: KeyRule(ignore=True) for key in self.ignore_keys}, **self.keys}

    def overlaid(self, override: ArgsRules) -> ArgsRules:
        """These rules with `override` laid over: its mode if given, its key rules key by key."""
        mode = override.mode if "mode" in override.model_fields_set else self.mode
        return ArgsRules(mode=mode, keys={**self.all_keys(), **override.all_keys()})


class ToolRules(_Options):
    """Rules for one tool, overriding the defaults."""

    args: ArgsRules = Field(default_factory=ArgsRules)


class MatchOptions(CriterionOptions, _Options):
    """Every option of `tool_trajectory_match` (rules in its module's docstring), and ADK's common ones."""

    order: Literal["exact", "in_order", "any_order", "subset", "superset"] = "exact"
    score: Literal["f1", "precision", "recall", "binary"] = "f1"
    args: ArgsRules = Field(default_factory=ArgsRules)
    tools: dict[str, ToolRules] = Field(default_factory=dict)


def parse_options(raw: Mapping[str, Any], *, field: str) -> MatchOptions:
    """Validated options; `field` is where they live, e.g. `criteria.tool_trajectory_match`.

    Raises:
        EvalInputError: naming the bad option (`<field>.<option path>`) and its valid values.
    """
    try:
        return MatchOptions.model_validate(raw)
    except ValidationError as error:
        first = error.errors()[0]
        location = [str(part) for part in first["loc"]]
        if first["type"] == "unknown_option":
            location.append(str((first.get("ctx") or {})["key"]))
        shown = "" if first["type"] in ("unknown_option", "value_error") else f" (got {first['input']!r})"
        message = first["msg"].removeprefix("Value error, ") + shown
        raise EvalInputError(message, field=".".join([field, *location])) from None


@cache
def _load_comparator(path: str) -> Similarity:
    """The custom comparator at `pkg.module:function` (or `pkg.module.function`), imported once."""
    return cast(Similarity, import_function(path, field="comparator"))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@dataclass(frozen=True)
class _ValueRule:
    """A built-in key rule (or the default comparison in subset mode), applied recursively."""

    fuzzy: float | None = None
    tolerance: float = 0.0
    rel_tolerance: float = 0.0
    case_insensitive: bool = False
    partial: bool = False

    def __call__(self, expected: Any, actual: Any) -> float:
        return 1.0 if self.matches(expected, actual) else 0.0

    def matches(self, expected: Any, actual: Any) -> bool:
        """Whether `actual` is accepted for `expected` under this rule."""
        if isinstance(expected, str) and isinstance(actual, str):
            if self.case_insensitive:
                expected, actual = expected.casefold(), actual.casefold()
            return expected == actual or (self.fuzzy is not None and fuzz.ratio(expected, actual) / 100 >= self.fuzzy)
        if _is_number(expected) and _is_number(actual):
            close = math.isclose(expected, actual, rel_tol=self.rel_tolerance, abs_tol=self.tolerance)
            return expected == actual or (close and self.tolerance + self.rel_tolerance > 0.0)
        if isinstance(expected, Mapping) and isinstance(actual, Mapping):
            if not self.partial and expected.keys() != actual.keys():
                return False
            return all(key in actual and self.matches(value, actual[key]) for key, value in expected.items())
        if isinstance(expected, list | tuple) and isinstance(actual, list | tuple):
            return len(expected) == len(actual) and all(map(self.matches, expected, actual))
        return bool(expected == actual)


def _custom(path: str) -> Similarity:
    function = _load_comparator(path)

    def compare(expected: Any, actual: Any) -> float:
        result = function(expected, actual)
        if isinstance(result, int | float) and 0.0 <= result <= 1.0:
            return float(result)
        raise ValueError(f"comparator {path!r} returned {result!r}; it must return a bool or a float in [0, 1]")

    return compare


def _value_similarity(rule: KeyRule, partial: bool) -> Similarity:
    if rule.comparator:
        return _custom(rule.comparator)
    return _ValueRule(
        **rule.model_dump(include={"fuzzy", "tolerance", "rel_tolerance", "case_insensitive"}), partial=partial
    )


def _equal(expected: Any, actual: Any) -> float:
    return 1.0 if expected == actual else 0.0


@dataclass(frozen=True)
class _ArgsSimilarity:
    """Args similarity under key rules: the minimum over the compared keys."""

    values: Mapping[str, Similarity]
    ignored: frozenset[str]
    default: Similarity
    partial: bool

    def __call__(self, expected: Mapping[str, Any], actual: Mapping[str, Any]) -> float:
        if not self.partial and any(key not in expected and key not in self.ignored for key in actual):
            return 0.0
        compared = [key for key in expected if key not in self.ignored]
        if any(key not in actual for key in compared):
            return 0.0
        return min((self.values.get(key, self.default)(expected[key], actual[key]) for key in compared), default=1.0)


def _args_similarity(rules: ArgsRules) -> Similarity:
    if rules.mode == "ignore":
        return lambda expected, actual: 1.0
    keys = rules.all_keys()
    partial = rules.mode == "subset"
    if not keys and not partial:
        return _equal  # the common case, kept fast
    return _ArgsSimilarity(
        values={key: _value_similarity(rule, partial) for key, rule in keys.items() if not rule.ignore},
        ignored=frozenset(key for key, rule in keys.items() if rule.ignore),
        default=_ValueRule(partial=True) if partial else _equal,
        partial=partial,
    )


def ordered_alignment(similarities: Sequence[Sequence[float]]) -> list[Pair]:
    """The order-preserving pairs of maximum total similarity (weighted LCS), in sequence order.

    `similarities[i][j]`: expected call i against actual call j; pairs of similarity 0 are never made.
    """
    table = _lcs_table(similarities)
    pairs: list[Pair] = []
    i, j = len(table) - 1, len(table[0]) - 1
    while i and j:
        similarity = similarities[i - 1][j - 1]
        if similarity > 0.0 and table[i][j] == table[i - 1][j - 1] + similarity:
            i, j = i - 1, j - 1
            pairs.append((i, j, similarity))
        elif table[i][j] == table[i - 1][j]:
            i -= 1
        else:
            j -= 1
    return pairs[::-1]


def _lcs_table(similarities: Sequence[Sequence[float]]) -> list[list[float]]:
    """`table[i][j]`: the best total similarity of the first i expected and the first j actual calls."""
    width = len(similarities[0]) if similarities else 0
    table = [[0.0] * (width + 1)]
    for row in similarities:
        previous, current = table[-1], [0.0]
        for j, similarity in enumerate(row):
            best = max(previous[j + 1], current[j])
            if similarity > 0.0 and previous[j] + similarity > best:
                best = previous[j] + similarity
            current.append(best)
        table.append(current)
    return table


def unordered_alignment(similarities: Sequence[Sequence[float]]) -> list[Pair]:
    """The pairs of maximum total similarity in any order (maximum-weight bipartite matching)."""
    if not similarities or not similarities[0]:
        return []
    from scipy.optimize import linear_sum_assignment  # type: ignore[import-untyped]  # imported when first used

    rows, columns = linear_sum_assignment(np.asarray(similarities), maximize=True)
    pairs = [(i, j, similarities[i][j]) for i, j in zip(rows.tolist(), columns.tolist(), strict=True)]
    return [pair for pair in pairs if pair[2] > 0.0]


def precision_recall_f1(weight: float, expected: int, actual: int) -> tuple[float, float, float]:
    """Precision, recall and F1 of a matched weight; 1s when both lists are empty, 0s when one is."""
    if not expected and not actual:
        return 1.0, 1.0, 1.0
    if not expected or not actual:
        return 0.0, 0.0, 0.0
    precision, recall = weight / actual, weight / expected
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def _satisfied(order: str, full: int, expected: int, actual: int) -> bool:
    if order == "exact":
        return full == expected == actual
    return full == (actual if order == "subset" else expected)


@dataclass(frozen=True)
class Alignment:
    """How the actual calls of one invocation line up with the expected ones, and the resulting scores.

    Attributes:
        matched: `(expected index, actual index, similarity)` for each paired call, similarity > 0.
        missing, extra: indices of the expected and of the actual calls left unmatched.
        precision, recall, f1: matched weight / actual calls, matched weight / expected calls, harmonic mean.
        satisfied: the order mode holds (with pairs of similarity 1 only).
        score: the value selected by the `score` option.
    """

    matched: list[Pair]
    missing: list[int]
    extra: list[int]
    precision: float
    recall: float
    f1: float
    satisfied: bool
    score: float

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form for `EvaluationResult.details` (pairs as lists)."""
        pairs = [list(pair) for pair in self.matched]
        return {**vars(self), "matched": pairs, "missing": list(self.missing), "extra": list(self.extra)}


class Matcher:
    """Aligns call sequences under validated options; compile once, align many."""

    def __init__(self, options: MatchOptions) -> None:
        self.options = options
        self._default = _args_similarity(options.args)
        self._tools = {name: _args_similarity(options.args.overlaid(tool.args)) for name, tool in options.tools.items()}

    def similarity(self, expected: Call, actual: Call) -> float:
        """The similarity in [0, 1] of one expected and one actual call."""
        if expected[0] != actual[0]:
            return 0.0
        return self._tools.get(expected[0], self._default)(expected[1], actual[1])

    def similarities(self, expected: Sequence[Call], actual: Sequence[Call]) -> list[list[float]]:
        """The expected x actual similarity matrix (only calls of the same name are compared)."""
        by_name: dict[str, list[int]] = {}
        for j, (name, _) in enumerate(actual):
            by_name.setdefault(name, []).append(j)
        matrix = []
        for name, args in expected:
            row = [0.0] * len(actual)
            compare = self._tools.get(name, self._default)
            for j in by_name.get(name, ()):
                row[j] = compare(args, actual[j][1])
            matrix.append(row)
        return matrix

    def align(self, expected: Sequence[Call], actual: Sequence[Call]) -> Alignment:
        """The optimal alignment of `actual` against `expected` and its scores."""
        if self.options.order in ("exact", "in_order"):
            pairs = self._ordered(expected, actual)
        else:
            pairs = unordered_alignment(self.similarities(expected, actual))
        missing = sorted(set(range(len(expected))) - {i for i, _, _ in pairs})
        extra = sorted(set(range(len(actual))) - {j for _, j, _ in pairs})
        precision, recall, f1 = precision_recall_f1(sum(s for _, _, s in pairs), len(expected), len(actual))
        full = sum(1 for _, _, s in pairs if s >= 1.0)
        satisfied = _satisfied(self.options.order, full, len(expected), len(actual))
        scores = {"f1": f1, "precision": precision, "recall": recall, "binary": float(satisfied)}
        return Alignment(
            matched=pairs,
            missing=missing,
            extra=extra,
            precision=precision,
            recall=recall,
            f1=f1,
            satisfied=satisfied,
            score=scores[self.options.score],
        )

    def _ordered(self, expected: Sequence[Call], actual: Sequence[Call]) -> list[Pair]:
        """`ordered_alignment`, with the common prefix and suffix of fully matching calls paired directly.

        Pairing them is always optimal (an exchange argument: no pair scores above 1) and leaves only the
        differing middle to the dynamic program.
        """
        start, stop = 0, min(len(expected), len(actual))
        while start < stop and self.similarity(expected[start], actual[start]) >= 1.0:
            start += 1
        tail = 0
        while tail < stop - start and self.similarity(expected[-1 - tail], actual[-1 - tail]) >= 1.0:
            tail += 1
        middle = self.similarities(expected[start : len(expected) - tail], actual[start : len(actual) - tail])
        return [
            *((i, i, 1.0) for i in range(start)),
            *((i + start, j + start, s) for i, j, s in ordered_alignment(middle)),
            *((len(expected) - k, len(actual) - k, 1.0) for k in range(tail, 0, -1)),
        ]
