"""Aligning a judge from its disagreements: `agent-eval judges align METRIC --profile NAME`.

1. The labelled items of the metric (each content once, `check.labelled_items`), pass/fail labels only, are
   split in two, seeded: per label class, the items sorted by content key and shuffled with
   `random.Random(seed)`, the first `held_out` share of each class held out, the rest the training split.
   At least `2 * MIN_LABELS` labelled items are needed (`MIN_LABELS` held out).
2. Examples come from the training split: first the items where the stored judge verdict disagreed with the
   person, then the others, each alternating the two label classes, up to `examples` of them, the last given up
   for the first item of a verdict they lack (so both verdicts appear whenever both exist); each with what the
   judge saw (the user's turn, the answer, tool calls, reference, rubric text), the person's verdict and note.
3. The held-out items are judged twice with fresh calls and agent-eval's prompts (the criterion as stored, or
   `--config`'s, with `judge_mode: "agent-eval"`; ADK's prompts have no slot for examples): without any
   examples (an earlier profile's included), then with the new ones. The profile's evaluation names the
   held-out content keys.
4. The gain in kappa on the held-out items and its paired bootstrap interval
   (`agent_eval.results.agreement.kappa_gain`) decide: the profile is kept only when the interval's lower bound
   is above 0, i.e. the gain is beyond the interval's noise. Either way the version is stored (`judge_profiles`,
   numbered per name) with its evaluation, and only a kept version is what `"judge_profile": NAME` uses.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.engine import Engine

from agent_eval.errors import EvalInputError
from agent_eval.judges.check import (
    StoredCase,
    case_result_of,
    judge_again,
    labelled_items,
    stored_cases,
    stored_criterion,
)
from agent_eval.metrics.judged.base import JudgeExample
from agent_eval.metrics.judged.mode import AdkJudgedOptions
from agent_eval.metrics.registry import REGISTRY, MetricSpec
from agent_eval.results.agreement import MIN_LABELS, binary_agreement, kappa_gain
from agent_eval.results.agreement_model import BinaryAgreement
from agent_eval.results.judged_items import turn_content
from agent_eval.schema import EvalConfig, EvalMetric
from agent_eval.store.engine import get_engine
from agent_eval.store.labels import LabelledPair, labelled_pairs, save_judge_profile
from agent_eval.store.models import JudgeProfileRecord

__all__ = ["DEFAULT_EXAMPLES", "Alignment", "align_judge"]

DEFAULT_EXAMPLES = 8
"""How many examples a profile holds at most."""


@dataclass(frozen=True)
class Alignment:
    """The outcome of an alignment: the stored profile version, the held-out agreement without and with its
    examples, the gain's interval, and whether it was kept."""

    profile: JudgeProfileRecord
    before: BinaryAgreement
    after: BinaryAgreement
    gain: float | None
    gain_interval: tuple[float, float] | None
    train: int
    held_out: int

    @property
    def kept(self) -> bool:
        """Whether the profile is used from now on (`"judge_profile": NAME`)."""
        return self.profile.kept

    def describe(self) -> str:
        """The alignment in lines: the split, kappa before and after, the gain, kept or refused and why."""
        name = f"{self.profile.name}@{self.profile.version}"
        lines = [
            f"{self.profile.metric_name}: profile {name} with {len(self.profile.examples)} examples "
            f"({self.train} training items, {self.held_out} held out)",
            f"  held-out kappa without examples {_kappa(self.before)}, with them {_kappa(self.after)}",
        ]
        interval = self.gain_interval
        shown = f" [{interval[0]:+.2f}, {interval[1]:+.2f}]" if interval else " (no interval)"
        gain = "undefined" if self.gain is None else f"{self.gain:+.2f}"
        lines.append(f"  gain {gain}{shown}")
        if self.kept:
            lines.append(f'  kept: criteria naming "judge_profile": "{self.profile.name}" now send these examples')
        else:
            lines.append("  refused: the gain is within the interval's noise (its lower bound is not above 0)")
        return "\n".join(lines)


async def align_judge(
    metric: str,
    profile: str,
    engine: Engine | None = None,
    *,
    config: EvalConfig | None = None,
    examples: int = DEFAULT_EXAMPLES,
    held_out: float = 0.5,
    seed: int = 0,
) -> Alignment:
    """Choose examples for the judge of `metric`, measure them on held-out labels, store the profile version
    (rules in the module docstring).

    Raises:
        EvalInputError: too few labelled items, a bad argument, or a criterion the judge cannot be called for.
    """
    if not 1 <= examples <= 50 or not 0.1 <= held_out <= 0.9:
        raise EvalInputError("examples must be 1 to 50 and held_out a share from 0.1 to 0.9", field="examples")
    engine = engine or get_engine()
    items = {k: p for k, p in labelled_items(labelled_pairs(engine, metric=metric), metric).items() if _label(p)}
    if len(items) < 2 * MIN_LABELS:
        raise EvalInputError(
            f"aligning {metric} needs at least {2 * MIN_LABELS} items labelled pass or fail "
            f"({MIN_LABELS} to hold out), got {len(items)}",
            field="metric",
        )
    train, test = _split(items, held_out, seed)
    eval_metric, spec = _our_prompts(*stored_criterion(metric, config, next(iter(items.values())), engine))
    chosen = _examples(train, stored_cases(train.values(), engine), examples)
    with_examples = _with_examples(eval_metric, chosen)
    before = await judge_again(test, eval_metric, spec, engine)
    after = await judge_again(test, with_examples, spec, engine)
    outcome = _Outcome(chosen, test, before, after, len(train))
    return _stored(metric, profile, outcome, engine)


def _label(pair: LabelledPair) -> bool:
    return pair.label.passed is not None


def _split(
    items: Mapping[str, LabelledPair], share: float, seed: int
) -> tuple[dict[str, LabelledPair], dict[str, LabelledPair]]:
    rng = random.Random(seed)
    train: dict[str, LabelledPair] = {}
    test: dict[str, LabelledPair] = {}
    for verdict in (True, False):
        keys = sorted(key for key, pair in items.items() if pair.label.passed is verdict)
        rng.shuffle(keys)
        cut = round(len(keys) * share)
        test.update((key, items[key]) for key in keys[:cut])
        train.update((key, items[key]) for key in keys[cut:])
    return train, test


def _our_prompts(eval_metric: EvalMetric, spec: MetricSpec) -> tuple[EvalMetric, MetricSpec]:
    """The criterion with agent-eval's prompts (`judge_mode: "agent-eval"` where the metric has a mode)."""
    options = spec.options
    if not (isinstance(options, type) and issubclass(options, AdkJudgedOptions)):
        return eval_metric, spec
    return _with_options(eval_metric, {"judge_mode": "agent-eval"}), spec


def _with_examples(eval_metric: EvalMetric, examples: Sequence[JudgeExample]) -> EvalMetric:
    dumped = [example.model_dump(mode="json") for example in examples]
    return _with_options(eval_metric, {"judge_examples": dumped})


def _with_options(eval_metric: EvalMetric, options: Mapping[str, Any]) -> EvalMetric:
    criterion = eval_metric.criterion.model_dump(exclude_none=True) if eval_metric.criterion else {}
    dropped = ("judgeProfile", "judge_profile", "judgeExamples", "judge_examples")  # no earlier profile's examples
    criterion = {k: v for k, v in criterion.items() if k not in dropped}
    config = EvalConfig.model_validate({"criteria": {eval_metric.metric_name: {**criterion, **options}}})
    return REGISTRY.resolve(config)[0][0]


def _examples(train: Mapping[str, LabelledPair], cases: Mapping[int, StoredCase], wanted: int) -> list[JudgeExample]:
    """Disagreements first, then agreements, each alternating the label classes (module docstring, step 2)."""
    ordered: list[LabelledPair] = []
    for disagreeing in (True, False):
        groups = [
            [p for p in train.values() if p.label.passed is verdict and _disagrees(p) is disagreeing]
            for verdict in (False, True)
        ]
        for pair_index in range(max(len(g) for g in groups)):
            ordered.extend(group[pair_index] for group in groups if pair_index < len(group))
    found = [_example(pair, cases.get(pair.item.case_result_id)) for pair in ordered]
    return _both_verdicts([example for example in found if example is not None], wanted)


def _both_verdicts(ordered: Sequence[JudgeExample], wanted: int) -> list[JudgeExample]:
    """The first `wanted` examples, the last of them given up for the first example of a verdict they lack (so
    both verdicts appear whenever both exist and `wanted` is at least 2)."""
    chosen = list(ordered[:wanted])
    for verdict in (True, False):
        missing = next((e for e in ordered[wanted:] if e.verdict is verdict), None)
        if missing is not None and wanted >= 2 and all(e.verdict is not verdict for e in chosen):
            chosen[-1] = missing
    return chosen


def _disagrees(pair: LabelledPair) -> bool:
    return pair.item.judge_passed is not None and pair.item.judge_passed != pair.label.passed


def _example(pair: LabelledPair, stored: StoredCase | None) -> JudgeExample | None:
    if stored is None or pair.label.passed is None:
        return None
    rubric_texts = stored[2]
    content = turn_content(case_result_of(stored), pair.item.turn)
    rubric = rubric_texts.get(pair.item.rubric_id) if pair.item.rubric_id else None
    return JudgeExample(
        user=content["user"],
        response=content["response"],
        reference=content["reference"],
        tool_calls=content["tool_calls"],
        rubric=rubric or pair.item.rubric_id,
        verdict=pair.label.passed,
        note=pair.label.note,
    )


@dataclass(frozen=True)
class _Outcome:
    """What an alignment measured: the examples, the held-out items and their verdicts without and with them."""

    examples: Sequence[JudgeExample]
    test: Mapping[str, LabelledPair]
    before: Mapping[str, bool | None]
    after: Mapping[str, bool | None]
    train: int


def _stored(metric: str, name: str, outcome: _Outcome, engine: Engine) -> Alignment:
    before, after, test = outcome.before, outcome.after, outcome.test
    keys = [key for key in test if before.get(key) is not None and after.get(key) is not None]
    human = [bool(test[key].label.passed) for key in keys]
    first = [bool(before[key]) for key in keys]
    second = [bool(after[key]) for key in keys]
    gain, interval = kappa_gain(first, second, human)
    agreement_before, agreement_after = binary_agreement(first, human), binary_agreement(second, human)
    kept = interval is not None and interval[0] > 0 and not agreement_after.insufficient
    evaluation = {
        "before": agreement_before.model_dump(mode="json"),
        "after": agreement_after.model_dump(mode="json"),
        "gain": gain,
        "gain_interval": interval,
        "train": outcome.train,
        "held_out": len(test),
        "held_out_judged": len(keys),
        "held_out_keys": sorted(test),
    }
    record = JudgeProfileRecord(
        name=name,
        version=0,
        metric_name=metric,
        examples=[example.model_dump(mode="json") for example in outcome.examples],
        created_at=datetime.now(UTC),
        kept=kept,
        evaluation=evaluation,
    )
    stored = save_judge_profile(record, engine)
    return Alignment(stored, agreement_before, agreement_after, gain, interval, outcome.train, len(test))


def _kappa(agreement: BinaryAgreement) -> str:
    if agreement.kappa is None:
        return f"not measured ({agreement.insufficient or 'undefined'})"
    return agreement.kappa_text()
