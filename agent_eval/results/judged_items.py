"""What an LLM judge scored in a case run, item by item, each keyed by the content it judged.

Internal: the public API is `agent_eval`'s; this module's names may change between releases.

A *judged item* is one turn of a case run for a judged metric, or one rubric of that turn for a rubric metric.
Its key (`item_key`) is the hash of what the judge was shown: the metric, the rubric id and text, the earlier
turns of the conversation (user and agent text), the user's turn, the agent's answer and tool calls, and the
reference (the expected answer and tool calls). A person's label of an item (`agent_eval.store.labels`) is stored
under that key, so it applies to every run that judged the same content and to none that judged other content.

The rules:
- a metric result is judged when its `details` name a `judge_model` (every LLM-judged metric's do);
- the judge's verdict on a turn is its per-turn score, passing when at least the criterion's threshold (0.5
  when it has none); on a rubric, the rubric's score, passing when at least 0.5 (a rubric verdict is yes/no);
- the judge's samples are the per-sample scores in `details["invocations"][turn]` (`["rubrics"][id]` for a
  rubric), None for an unusable sample; a turn whose details have no samples has none;
- a rubric's text is looked up in `rubric_texts` (the criterion's rubrics), then among the case's own
  rubrics on the expected and actual turns; an unknown rubric is keyed by its id alone.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent_eval.results.model import CaseResult, MetricResult
from agent_eval.schema import Invocation, content_text, tool_calls_of

__all__ = [
    "JudgedItem",
    "case_rubric_texts",
    "is_judged",
    "item_key",
    "judged_items",
    "rubric_texts_of",
    "turn_content",
]

_PASS_WITHOUT_THRESHOLD = 0.5


@dataclass(frozen=True)
class JudgedItem:
    """One judged turn (or rubric of a turn) of a case run: where it is, its content key and the verdict."""

    metric_name: str
    eval_set_id: str
    eval_id: str
    run_index: int
    turn: int
    rubric_id: str | None
    key: str
    judge_score: float | None
    judge_passed: bool | None
    samples: list[float | None]


def is_judged(result: MetricResult) -> bool:
    """Whether an LLM judge scored this metric result (its details name a `judge_model`)."""
    return "judge_model" in result.details


def judged_items(case: CaseResult, rubric_texts: Mapping[str, str] | None = None) -> list[JudgedItem]:
    """Every judged item of a case run, in metric, turn and rubric order (rules in the module docstring)."""
    texts = {**case_rubric_texts(case), **(rubric_texts or {})}
    items: list[JudgedItem] = []
    for result in case.metrics:
        if is_judged(result):
            items.extend(_metric_items(case, result, texts))
    return items


def turn_content(case: CaseResult, turn: int) -> dict[str, Any]:
    """What the judge saw of turn `turn`: earlier turns, the user's turn, the answer, tool calls, the reference."""
    actual = case.agent_run.invocations
    expected = case.expected_invocations or []
    invocation = actual[turn] if turn < len(actual) else None
    reference = expected[turn] if turn < len(expected) else None
    return {
        "history": [[content_text(i.user_content), content_text(i.final_response)] for i in actual[:turn]],
        "user": content_text(invocation.user_content) if invocation else "",
        "response": content_text(invocation.final_response) if invocation else "",
        "tool_calls": _calls(invocation),
        "reference": content_text(reference.final_response) if reference else None,
        "expected_tool_calls": _calls(reference) if reference else None,
    }


def item_key(metric_name: str, rubric_id: str | None, rubric_text: str | None, content: Mapping[str, Any]) -> str:
    """The content key of a judged item: sha256 of its canonical JSON (64 hex characters)."""
    keyed = {"metric": metric_name, "rubric_id": rubric_id, "rubric": rubric_text, **content}
    text = json.dumps(keyed, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def rubric_texts_of(criterion: Mapping[str, Any] | None) -> dict[str, str]:
    """A criterion's rubrics (as JSON, snake or camel keys) by id: their text property, else description."""
    rubrics = (criterion or {}).get("rubrics") if isinstance(criterion, Mapping) else None
    texts = {}
    for rubric in rubrics or []:
        if isinstance(rubric, Mapping) and (rubric_id := rubric.get("rubric_id", rubric.get("rubricId"))):
            content = rubric.get("rubric_content", rubric.get("rubricContent")) or {}
            text = content.get("text_property", content.get("textProperty")) if isinstance(content, Mapping) else None
            texts[str(rubric_id)] = str(text or rubric.get("description") or "")
    return texts


def _metric_items(case: CaseResult, result: MetricResult, texts: Mapping[str, str]) -> list[JudgedItem]:
    turns = result.details.get("invocations") or []
    items = []
    for turn, score in enumerate(result.per_invocation):
        details = turns[turn] if turn < len(turns) and isinstance(turns[turn], Mapping) else {}
        content = turn_content(case, turn)
        if score.rubric_scores is None:
            items.append(
                _item(
                    case, result, turn, None, texts=texts, content=content, score=score.score, samples=_samples(details)
                )
            )
            continue
        for rubric in score.rubric_scores:
            rubric_details = (details.get("rubrics") or {}).get(rubric.rubric_id) or {}
            samples = _samples(rubric_details)
            item = _item(
                case, result, turn, rubric.rubric_id, texts=texts, content=content, score=rubric.score, samples=samples
            )
            items.append(item)
    return items


def _item(
    case: CaseResult,
    result: MetricResult,
    turn: int,
    rubric_id: str | None,
    *,
    texts: Mapping[str, str],
    content: Mapping[str, Any],
    score: float | None,
    samples: list[float | None],
) -> JudgedItem:
    threshold = _PASS_WITHOUT_THRESHOLD if rubric_id is not None or result.threshold is None else result.threshold
    rubric_text = texts.get(rubric_id) if rubric_id is not None else None
    return JudgedItem(
        metric_name=result.metric_name,
        eval_set_id=case.eval_set_id,
        eval_id=case.eval_id,
        run_index=case.run_index,
        turn=turn,
        rubric_id=rubric_id,
        key=item_key(result.metric_name, rubric_id, rubric_text, content),
        judge_score=score,
        judge_passed=None if score is None else score >= threshold,
        samples=samples,
    )


def _samples(details: Mapping[str, Any]) -> list[float | None]:
    samples = details.get("samples")
    if not isinstance(samples, Sequence):
        return []
    return [_sample_score(sample) for sample in samples]


def _sample_score(sample: Any) -> float | None:
    score = sample.get("score") if isinstance(sample, Mapping) else None
    return float(score) if isinstance(score, int | float) and not isinstance(score, bool) else None


def _calls(invocation: Invocation | None) -> list[dict[str, Any]]:
    if invocation is None:
        return []
    return [{"name": call.name, "args": call.args or {}} for call in tool_calls_of(invocation)]


def case_rubric_texts(case: CaseResult) -> dict[str, str]:
    """The case's own rubrics (on the expected and actual turns) by id: their text, else their description."""
    invocations = [*(case.expected_invocations or []), *case.agent_run.invocations]
    return {
        rubric.rubric_id: rubric.rubric_content.text_property or rubric.description or ""
        for invocation in invocations
        for rubric in invocation.rubrics or []
    }
