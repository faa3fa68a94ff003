"""One registry for every metric, built-in and custom alike, keyed by metric name.

A registered metric is a callable with ADK's signature
`(eval_metric, actual_invocations, expected_invocations, conversation_scenario) -> EvaluationResult`,
sync or async, so ADK custom metrics plug in unchanged. A built-in is a function plus its `@metric(...)` line;
the decorator gives it ADK's signature. A metric that scores each invocation and averages is written as the
function that scores one invocation (`per_invocation=True`, the same engine as users' `@invocation_metric`:
`metrics.per_invocation`); any other shape as one function of a `MetricContext` (the criterion, its parsed
options, the actual and expected invocations, the scenario). Custom metrics named in an `EvalConfig`
(`custom_metrics.<name>.code_config.name = "pkg.module.function"`) are imported on demand.

Option keys, one rule for every metric: a `MetricSpec` declares the criterion options it accepts, and
`MetricRegistry.resolve` rejects any other key before any work starts (`EvalInputError`, exit 2: the file, the
field `criteria.<metric>.<key>`, the accepted keys and a close match). Accepted are `threshold`, ADK's common
`include_intermediate_responses_in_final` (`COMMON_OPTIONS`), the fields of the spec's pydantic options model
(with their aliases: camelCase) and the keys it lists in `option_keys` (snake_case or camelCase). A metric that
declares nothing accepts nothing else. Only ADK custom metrics named in `custom_metrics` accept any key
(`option_keys=None`): ADK hands them the whole criterion, so their options are theirs to read and check.
Values are checked after the keys, by the options model or the spec's parser function.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeAlias, TypeVar, cast

from pydantic import BaseModel, alias_generators

from agent_eval.errors import EvalInputError
from agent_eval.imports import import_user_module
from agent_eval.metrics.common import (
    COMMON_OPTIONS,
    criterion_options,
    model_option_keys,
    model_option_spellings,
    require_expected,
    unknown_option_message,
)
from agent_eval.metrics.per_invocation import (
    ExplainWhen,
    InvocationRules,
    as_score,
    declared_option_keys,
    per_invocation_metric,
)
from agent_eval.schema import (
    ConversationScenario,
    EvalConfig,
    EvalMetric,
    EvaluationResult,
    Interval,
    Invocation,
    MetricInfo,
    MetricValueInfo,
)

__all__ = [
    "REGISTRY",
    "MetricContext",
    "MetricFunction",
    "MetricRegistry",
    "MetricSpec",
    "import_function",
    "metric",
    "parse_options",
]

MetricFunction: TypeAlias = Callable[
    [EvalMetric, list[Invocation], list[Invocation] | None, ConversationScenario | None],
    EvaluationResult | Awaitable[EvaluationResult],
]

OptionsCheck: TypeAlias = type[BaseModel] | Callable[[EvalMetric], object]
OptionsT_co = TypeVar("OptionsT_co", covariant=True)


@dataclass(frozen=True)
class MetricContext(Generic[OptionsT_co]):
    """What a built-in metric scores: one criterion over one case run.

    Attributes:
        eval_metric: the criterion (name, threshold, raw options).
        actual: the agent's invocations.
        expected: the case's expected invocations, None for a conversation-scenario case.
        scenario: the case's conversation scenario, if any.
        options: the criterion's options, parsed by the metric's options model or parser (None without one).
    """

    eval_metric: EvalMetric
    actual: list[Invocation]
    expected: list[Invocation] | None
    scenario: ConversationScenario | None
    options: OptionsT_co

    @property
    def threshold(self) -> float | None:
        """The criterion's effective threshold (None for an informational metric)."""
        return self.eval_metric.effective_threshold

    def expected_pairs(self) -> list[tuple[Invocation, Invocation]]:
        """Each actual invocation with its expected one.

        Raises:
            MetricNotApplicable: the case has no expected invocations (see `MetricSpec.requires_expected`).
            ValueError: the agent produced a different number of invocations than expected.
        """
        return list(zip(self.actual, require_expected(self.actual, self.expected), strict=True))

    def pairs(self) -> list[tuple[Invocation, Invocation | None]]:
        """Each actual invocation with its expected one, or with None when the case has none.

        Raises:
            ValueError: both are given with different lengths.
        """
        if self.expected is None:
            return [(actual, None) for actual in self.actual]
        return list(self.expected_pairs())


ContextMetric: TypeAlias = Callable[[MetricContext[Any]], EvaluationResult | Awaitable[EvaluationResult]]


@dataclass(frozen=True)
class MetricSpec:
    """A metric: its function, what it needs, the range of its values and the options it accepts.

    Attributes:
        name: the metric name used in `criteria`.
        function: the metric callable (ADK signature).
        info: name, description and value interval.
        requires_expected: the metric compares against expected invocations: on a case without them (a
            conversation scenario) it is not called, and its result is "not applicable" (`metrics.scoring`).
        informational: the metric reports a value but never passes or fails a case.
        needs_content: the metric reads message text or tool arguments: on a recorded case whose spans did not
            capture content it is not called, and its result is "not applicable" (`metrics.scoring`).
        requires_threshold: a criterion for this metric must give a threshold.
        options: the pydantic model of the criterion's options (besides `threshold`), or a function that
            parses them from the `EvalMetric` and raises `EvalInputError` on bad values; either is run before
            any work starts. `None`: no values to check.
        option_keys: the option keys (snake_case) the metric accepts besides `threshold`, `COMMON_OPTIONS`
            and the fields of an `options` model; a parser function must list its keys here. `None` accepts
            any key (ADK custom metrics only, see the module docstring).
        scorer: the function that scores one invocation, for a metric written as one (`@metric(...,
            per_invocation=True)` or `@invocation_metric`); None otherwise.
    """

    name: str
    function: MetricFunction
    info: MetricInfo
    requires_expected: bool = True
    informational: bool = False
    needs_content: bool = True
    requires_threshold: bool = True
    options: OptionsCheck | None = None
    option_keys: frozenset[str] | None = frozenset()
    scorer: Callable[..., Any] | None = None

    def __post_init__(self) -> None:
        """A parser function without declared keys would reject every option: a programming error."""
        if self.options is not None and self._options_model is None and self.option_keys == frozenset():
            raise ValueError(f"metric {self.name!r}: an options parser function needs its option_keys declared")

    @property
    def interval(self) -> Interval:
        """The interval a valid score lies in (default [0, 1])."""
        value_info = self.info.metric_value_info
        return (value_info.interval if value_info.interval else None) or Interval(min_value=0.0, max_value=1.0)

    @property
    def accepted_options(self) -> frozenset[str] | None:
        """The option keys a criterion of this metric may give (snake_case, with `threshold`); None: any."""
        if self.option_keys is None:
            return None
        model = self._options_model
        declared = model_option_keys(model) if model is not None else frozenset()
        return frozenset({"threshold"}) | COMMON_OPTIONS | self.option_keys | declared

    def accepts_option(self, key: str) -> bool:
        """Whether `key` names an accepted option, in snake_case, camelCase or an alias of the options model."""
        accepted = self.accepted_options
        if accepted is None:
            return True
        model = self._options_model
        spellings = model_option_spellings(model) if model is not None else frozenset()
        return key in accepted or key in spellings or key in {alias_generators.to_camel(name) for name in accepted}

    @property
    def _options_model(self) -> type[BaseModel] | None:
        options = self.options
        return options if isinstance(options, type) and issubclass(options, BaseModel) else None


@dataclass
class MetricRegistry:
    """Metric specs by name; resolves the criteria of a config to specs before any work starts."""

    _specs: dict[str, MetricSpec] = field(default_factory=dict)

    def register(self, spec: MetricSpec) -> MetricSpec:
        """Add a metric; a second metric of the same name is a programming error."""
        if spec.name in self._specs:
            raise ValueError(f"metric {spec.name!r} is already registered")
        self._specs[spec.name] = spec
        return spec

    def names(self) -> list[str]:
        """Every registered metric name, sorted."""
        return sorted(self._specs)

    def get(self, name: str) -> MetricSpec:
        """The metric called `name`.

        Raises:
            EvalInputError: no such metric; the message lists the known ones.
        """
        try:
            return self._specs[name]
        except KeyError:
            known = ", ".join(self.names())
            raise EvalInputError(
                f"unknown metric {name!r}; known metrics: {known} (or declare it in 'custom_metrics')",
                field=f"criteria.{name}",
            ) from None

    def resolve(self, config: EvalConfig, *, config_file: str | None = None) -> list[tuple[EvalMetric, MetricSpec]]:
        """The (eval metric, spec) pairs of a config's criteria, checked and imported up front.

        Raises:
            EvalInputError: an unknown metric, a custom function that does not import, an option the metric
                does not accept, a bad option value, or a threshold that is missing, outside the metric's
                interval, or set on an informational metric.
        """
        customs = config.custom_metrics or {}
        pairs = []
        for eval_metric in config.eval_metrics():
            name = eval_metric.metric_name
            try:
                spec = self._custom_spec(name, customs[name]) if name in customs else self.get(name)
                _check_option_keys(eval_metric, spec)
                _check_threshold(eval_metric, spec)
                _check_options(eval_metric, spec)
            except EvalInputError as error:
                raise EvalInputError(error.message, file=config_file, field=error.field) from None
            pairs.append((eval_metric, spec))
        return pairs

    def _custom_spec(self, name: str, custom: Any) -> MetricSpec:
        function = import_function(custom.code_config.name, field=f"custom_metrics.{name}.code_config.name")
        info = custom.metric_info or MetricInfo(
            metric_name=name,
            description=custom.description or None,
            metric_value_info=MetricValueInfo(interval=Interval(min_value=0.0, max_value=1.0)),
        )
        # A custom metric is always called, recorded content or not: what it reads is its own business.
        return MetricSpec(
            name=name, function=function, info=info, requires_expected=False, needs_content=False, option_keys=None
        )


def _check_threshold(eval_metric: EvalMetric, spec: MetricSpec) -> None:
    threshold = eval_metric.effective_threshold
    field_name = f"criteria.{eval_metric.metric_name}.threshold"
    if spec.informational:
        if threshold is not None:
            raise EvalInputError(
                f"{spec.name} is informational and never gates: remove the threshold", field=field_name
            )
        return
    if threshold is None:
        if spec.requires_threshold:
            raise EvalInputError("a threshold is required", field=field_name)
        return
    interval = spec.interval
    if not interval.contains(threshold):
        raise EvalInputError(
            f"threshold {threshold!r} is outside the metric's range [{interval.min_value}, {interval.max_value}]",
            field=field_name,
        )


def _check_option_keys(eval_metric: EvalMetric, spec: MetricSpec) -> None:
    """Reject the first criterion option the metric does not accept, with the accepted ones and a close match."""
    given = eval_metric.criterion.model_extra if eval_metric.criterion is not None else None
    accepted = spec.accepted_options
    if not given or accepted is None:
        return
    for key in given:
        if not spec.accepts_option(key):
            raise EvalInputError(
                unknown_option_message(key, accepted), field=f"criteria.{eval_metric.metric_name}.{key}"
            )


def _check_options(eval_metric: EvalMetric, spec: MetricSpec) -> None:
    """Validate the criterion's options with the metric's options model or parser."""
    parse_options(spec.options, eval_metric)


def parse_options(options: OptionsCheck | None, eval_metric: EvalMetric) -> object:
    """The criterion's options parsed by an options model or parser function; None without either.

    Raises:
        EvalInputError: an unknown option or a bad value.
    """
    if isinstance(options, type) and issubclass(options, BaseModel):
        return criterion_options(eval_metric, options)
    if options is not None:
        return cast(Callable[[EvalMetric], object], options)(eval_metric)
    return None


def import_function(path: str, *, field: str) -> MetricFunction:
    """Import `pkg.module.function` (or `pkg.module:function`) as ADK does, the current folder importable.

    Raises:
        EvalInputError: the module does not import or has no such callable attribute.
    """
    module_name, sep, attribute = path.replace(":", ".").rpartition(".")
    if not sep or not module_name:
        raise EvalInputError(f"{path!r} is not of the form 'package.module.function'", field=field)
    try:
        module = import_user_module(module_name)
    except Exception as error:  # any import-time failure is the user's to fix
        raise EvalInputError(f"cannot import module {module_name!r}: {error}", field=field) from None
    function = getattr(module, attribute, None)
    if not callable(function):
        raise EvalInputError(f"module {module_name!r} has no function {attribute!r}", field=field)
    return function  # type: ignore[no-any-return]


REGISTRY = MetricRegistry()
"""The default registry: every built-in metric, plus whatever users register."""


def metric(
    name: str,
    *,
    description: str,
    interval: tuple[float, float] = (0.0, 1.0),
    requires_expected: bool = True,
    informational: bool = False,
    needs_content: bool = True,
    options: OptionsCheck | None = None,
    option_keys: Iterable[str] | None = None,
    per_invocation: bool = False,
    uses_expected: bool = True,
    explain_when: ExplainWhen | None = None,
    details: Callable[[Any], Mapping[str, Any]] | None = None,
    registry: MetricRegistry = REGISTRY,
) -> Callable[[Callable[..., Any]], MetricFunction]:
    """Register a metric under `name` (decorator); returns it with ADK's metric signature.

    The function is one of:
    - with `per_invocation=True`, a function that scores one invocation, `function(actual, expected, **options)`
      returning a number, `(score, explanation)` or a `Score`: the decorator pairs the invocations, scores each
      one, sets statuses against the threshold, averages, and assembles the result (`metrics.per_invocation`
      has the rules). `uses_expected=False` makes it reference-free (`expected` is None, never paired; needs
      `requires_expected=False`), `explain_when(score, threshold)` says which turns keep their explanation
      (default: all), `details(parsed options)` gives the case-level `details`;
    - a function of one `MetricContext` (its `options` parsed with `options`), for any other shape;
    - a function that already has ADK's signature (returned unchanged).

    `options` is the criterion's options model or parser (see `MetricSpec`); `option_keys` the keys a parser
    reads (snake_case); a per-invocation function without either accepts its keyword parameters. Any other key
    in a criterion is rejected when the config is resolved.

    Raises:
        TypeError: a per-invocation function whose options do not match its parameters, or one that requires
            expected invocations without using them; `per_invocation` options on another kind of function.
    """
    rules = InvocationRules(requires_expected, uses_expected, informational, explain_when, details)
    if not per_invocation and rules != InvocationRules(requires_expected, informational=informational):
        raise TypeError(f"metric {name!r}: uses_expected, explain_when and details need per_invocation=True")

    def register(written: Callable[..., Any]) -> MetricFunction:
        if per_invocation:
            function, keys = _per_invocation_function(name, written, options, option_keys, rules)
        else:
            function, keys = _adk_function(written, options), frozenset(option_keys or ())
        registry.register(
            MetricSpec(
                name=name,
                function=function,
                info=_info(name, description, interval),
                requires_expected=requires_expected,
                informational=informational,
                needs_content=needs_content,
                requires_threshold=not informational,
                options=options,
                option_keys=keys,
                scorer=written if per_invocation else None,
            )
        )
        return function

    return register


def _per_invocation_function(
    name: str,
    written: Callable[..., Any],
    options: OptionsCheck | None,
    option_keys: Iterable[str] | None,
    rules: InvocationRules,
) -> tuple[MetricFunction, frozenset[str]]:
    """A function that scores one invocation as an ADK-signature metric, and the option keys it accepts."""
    keys, read_options = declared_option_keys(name, written, options, option_keys)
    function = per_invocation_metric(written, read_options, lambda value: as_score(value, name), rules)
    _named_as(function, written)
    return function, keys


def _adk_function(written: Callable[..., Any], options: OptionsCheck | None) -> MetricFunction:
    """A `MetricContext` function given ADK's signature; a function that has it already, unchanged."""
    if _takes_a_context(written):
        return _with_adk_signature(cast(ContextMetric, written), options)
    return cast(MetricFunction, written)


def _info(name: str, description: str, interval: tuple[float, float]) -> MetricInfo:
    return MetricInfo(
        metric_name=name,
        description=description,
        metric_value_info=MetricValueInfo(interval=Interval(min_value=interval[0], max_value=interval[1])),
    )


def _named_as(function: Callable[..., Any], written: Callable[..., Any]) -> None:
    """Give `function` the name, module and docstring of the function it was written as."""
    for attribute in ("__module__", "__name__", "__qualname__", "__doc__"):
        setattr(function, attribute, getattr(written, attribute, None))


def _takes_a_context(function: Callable[..., object]) -> bool:
    """Whether `function` is written against a `MetricContext`: exactly one parameter."""
    return len(inspect.signature(function, follow_wrapped=False).parameters) == 1


def _with_adk_signature(function: ContextMetric, options: OptionsCheck | None) -> MetricFunction:
    """`function` behind ADK's metric signature: the context is built (options parsed) per call. An async
    `function` gives an awaitable, as ADK's async metrics do."""

    def adk(
        eval_metric: EvalMetric,
        actual_invocations: list[Invocation],
        expected_invocations: list[Invocation] | None,
        conversation_scenario: ConversationScenario | None = None,
    ) -> EvaluationResult | Awaitable[EvaluationResult]:
        parsed = parse_options(options, eval_metric)
        ctx = MetricContext(eval_metric, actual_invocations, expected_invocations, conversation_scenario, parsed)
        return function(ctx)

    _named_as(adk, function)
    return adk
