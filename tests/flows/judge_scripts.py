"""Scripted LLM-judge answers for the fake Gemini server, for the judged metrics run through the real flow.

`JudgeRouter` is a `FakeGeminiServer.respond_with` handler. It tells which metric asks by the request's system
instruction (each judged metric has its own constant prompt in `agent_eval.metrics.judged.prompts`), checks that
the request asks for that metric's structured answer (the response schema's title), and answers:
- by the first rule (`on(...)`) whose metric matches and whose fenced section (e.g. `<user_prompt>`) contains a
  given text, else by the metric's default answer (every default is a positive, well-formed verdict);
- per sample: a question is sent once per sample with an identical body (the sample index is only part of the
  judge's cache key), so `JudgeCall.ordinal` counts the earlier requests with the same system instruction and
  prompt, and `per_sample(a, b, c)` gives sample i the i-th answer (the last one for any later request, e.g.
  the retry after a 429).

Answer builders write the JSON each schema expects (`validity`, `user_turn`, `safety`, `graded`, `labels`,
`rubric_verdicts`), possibly inside a code fence (`fenced`), or a reply no schema accepts (`prose`), or an
API error (`status`).
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from agent_eval.metrics.judged import prompts as jp
from tests.fakes.gemini_server import FakeReply, error_reply, text_reply

__all__ = [
    "JUDGED_METRICS",
    "Answer",
    "JudgeCall",
    "JudgeRouter",
    "fenced",
    "graded",
    "labels",
    "per_sample",
    "prose",
    "rubric_verdicts",
    "safety",
    "status",
    "user_turn",
    "validity",
]

Reply: TypeAlias = dict[str, Any] | FakeReply
Answer: TypeAlias = Callable[["JudgeCall"], Reply]
"""Makes the fake server's reply to one judge request."""

_METRIC_OF_SYSTEM = {
    jp.FINAL_RESPONSE_MATCH_SYSTEM: "final_response_match_v2",
    jp.RUBRIC_FINAL_RESPONSE_SYSTEM: "rubric_based_final_response_quality_v1",
    jp.RUBRIC_TOOL_USE_SYSTEM: "rubric_based_tool_use_quality_v1",
    jp.HALLUCINATIONS_SYSTEM: "hallucinations_v1",
    jp.SAFETY_SYSTEM: "safety_v1",
    jp.USER_SIMULATOR_SYSTEM: "per_turn_user_simulator_quality_v1",
    jp.RUST_SEMANTIC_SYSTEM: "semantic_match_score",
    jp.RUST_RUBRIC_SYSTEM: "rubric_quality_score",
    jp.RUST_SAFETY_SYSTEM: "safety_score",
    jp.RUST_HALLUCINATION_SYSTEM: "hallucination_score",
}
_SCHEMA_OF_METRIC = {
    "final_response_match_v2": "ValidityAnswer",
    "rubric_based_final_response_quality_v1": "RubricAnswer",
    "rubric_based_tool_use_quality_v1": "RubricAnswer",
    "hallucinations_v1": "SentencesAnswer",
    "safety_v1": "SafetyAnswer",
    "per_turn_user_simulator_quality_v1": "UserTurnAnswer",
    "semantic_match_score": "GradedAnswer",
    "rubric_quality_score": "GradedAnswer",
    "safety_score": "GradedAnswer",
    "hallucination_score": "GradedAnswer",
}
JUDGED_METRICS = tuple(_SCHEMA_OF_METRIC)
"""Every LLM-judged metric: ADK's six, then ADK-Rust's four."""


@dataclass(frozen=True)
class JudgeCall:
    """One judge request as the router saw it.

    Attributes:
        metric: the metric that asked (from the system instruction).
        prompt: the user message (the fenced data and the task).
        schema: the title of the response schema the request asks for.
        ordinal: how many requests with the same system instruction and prompt came before this one.
    """

    metric: str
    prompt: str
    schema: str
    ordinal: int

    def section(self, tag: str) -> str:
        """The text fenced by `<tag>` in the prompt ("" when the prompt has no such section)."""
        found = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", self.prompt, re.DOTALL)
        return found.group(1) if found else ""


@dataclass(frozen=True)
class _Rule:
    metric: str
    section: str
    contains: str
    answer: Answer

    def matches(self, call: JudgeCall) -> bool:
        return call.metric == self.metric and self.contains in call.section(self.section)


def _reply(body: Mapping[str, Any]) -> Reply:
    return text_reply(json.dumps(body, ensure_ascii=False))


def validity(verdict: str, reasoning: str = "") -> Answer:
    """A `ValidityAnswer` (final_response_match_v2): `valid` or `invalid`."""
    return lambda _call: _reply({"reasoning": reasoning or f"the response is {verdict}", "verdict": verdict})


def user_turn(verdict: str, *violations: str) -> Answer:
    """A `UserTurnAnswer` (per_turn_user_simulator_quality_v1): `valid` or `invalid`, with broken rules."""
    return lambda _call: _reply(
        {"rationale": f"the user message is {verdict}", "violations": list(violations), "verdict": verdict}
    )


def safety(verdict: str, *issues: str) -> Answer:
    """A `SafetyAnswer` (safety_v1): `safe` or `unsafe`, with the issues found."""
    return lambda _call: _reply({"rationale": f"the response is {verdict}", "issues": list(issues), "verdict": verdict})


def graded(score: float, reasoning: str = "") -> Answer:
    """A `GradedAnswer` (ADK-Rust's criteria): a score that should lie in [0, 1] (a test may break that)."""
    return lambda _call: _reply({"reasoning": reasoning or f"scored {score}", "score": score, "issues": []})


def labels(default: str = "supported", **by_text: str) -> Answer:
    """A `SentencesAnswer` (hallucinations_v1) labelling every numbered sentence of `<sentences>`: `by_text`
    maps a text a sentence contains (e.g. `°C`, given as a keyword with any name) to its label; a sentence
    without a letter's worth of claim (`OK.`) is `not_applicable`; any other is `default`."""

    def answer(call: JudgeCall) -> Reply:
        sentences = json.loads(call.section("sentences") or "[]")
        labelled = []
        for item in sentences:
            text = str(item["sentence"])
            chosen = next((label for needle, label in by_text.items() if needle in text), None)
            if chosen is None:
                chosen = "not_applicable" if len(text.split()) == 1 else default
            labelled.append({"index": item["index"], "label": chosen, "rationale": f"{chosen}: {text}"})
        return _reply({"sentences": labelled})

    return answer


def rubric_verdicts(default: str = "yes", **by_id: str) -> Answer:
    """A `RubricAnswer` (the rubric-based metrics): a verdict for every rubric of `<rubrics>`, `by_id` first."""

    def answer(call: JudgeCall) -> Reply:
        rubrics = json.loads(call.section("rubrics") or "[]")
        verdicts = [
            {
                "rubric_id": r["rubric_id"],
                "rationale": f"checked {r['rubric_id']}",
                "verdict": by_id.get(r["rubric_id"], default),
            }
            for r in rubrics
        ]
        return _reply({"verdicts": verdicts})

    return answer


def fenced(answer: Answer) -> Answer:
    """The same answer's JSON inside a Markdown code fence (as chat models often write it)."""

    def wrapped(call: JudgeCall) -> Reply:
        reply = answer(call)
        if not isinstance(reply, dict):
            raise TypeError("only a 200 answer can be fenced")
        text = reply["candidates"][0]["content"]["parts"][0]["text"]
        return text_reply(f"```json\n{text}\n```")

    return wrapped


def prose(text: str = "I think the response is fine.") -> Answer:
    """A 200 answer that is not JSON: no schema parses it (an unusable sample)."""
    return lambda _call: text_reply(text)


def status(code: int, message: str = "scripted failure") -> Answer:
    """An API error answer (429 and 5xx are retried by the judge client; other 4xx are not)."""
    return lambda _call: error_reply(code, message)


def per_sample(*answers: Answer) -> Answer:
    """Request `i` of a question gets `answers[i]` (the last one for any later request)."""
    if not answers:
        raise ValueError("per_sample needs at least one answer")
    return lambda call: answers[min(call.ordinal, len(answers) - 1)](call)


_DEFAULTS: dict[str, Answer] = {
    "final_response_match_v2": validity("valid"),
    "rubric_based_final_response_quality_v1": rubric_verdicts(),
    "rubric_based_tool_use_quality_v1": rubric_verdicts(),
    "hallucinations_v1": labels(),
    "safety_v1": safety("safe"),
    "per_turn_user_simulator_quality_v1": user_turn("valid"),
    "semantic_match_score": graded(1.0),
    "rubric_quality_score": graded(1.0),
    "safety_score": graded(1.0),
    "hallucination_score": graded(1.0),
}


@dataclass
class JudgeRouter:
    """The fake server's handler for judge requests (see the module docstring); thread-safe.

    Attributes:
        calls: every judge request answered, in arrival order.
        problems: requests it could not route (unknown system instruction, wrong schema); a test asserts
            there are none.
    """

    calls: list[JudgeCall] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    _rules: list[_Rule] = field(default_factory=list)
    _seen: Counter[tuple[str, str]] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def on(self, metric: str, contains: str, answer: Answer, *, section: str = "user_prompt") -> JudgeRouter:
        """Answer `metric`'s questions whose `<section>` contains `contains` with `answer` (first rule wins)."""
        if metric not in _SCHEMA_OF_METRIC:
            raise ValueError(f"{metric!r} is not a judged metric; known: {', '.join(JUDGED_METRICS)}")
        self._rules.append(_Rule(metric, section, contains, answer))
        return self

    def __call__(self, body: Any) -> Reply:
        system = "".join(part.get("text", "") for part in (body.get("systemInstruction") or {}).get("parts", []))
        prompt = "".join(part.get("text", "") for content in body.get("contents", []) for part in content["parts"])
        schema = str(((body.get("generationConfig") or {}).get("responseSchema") or {}).get("title", ""))
        metric = _METRIC_OF_SYSTEM.get(system)
        with self._lock:
            if metric is None or schema != _SCHEMA_OF_METRIC[metric]:
                self.problems.append(f"unroutable judge request: metric {metric!r}, schema {schema!r}")
                return error_reply(400, "judge router: unknown system instruction or response schema")
            call = JudgeCall(metric, prompt, schema, self._seen[(system, prompt)])
            self._seen[(system, prompt)] += 1
            self.calls.append(call)
        rule = next((rule for rule in self._rules if rule.matches(call)), None)
        return (rule.answer if rule is not None else _DEFAULTS[metric])(call)

    def count(self, metric: str | None = None, contains: str = "", *, section: str = "user_prompt") -> int:
        """How many requests came for `metric` (any when None) whose `<section>` contains `contains`."""
        with self._lock:
            calls = list(self.calls)
        return sum(
            1
            for call in calls
            if (metric is None or call.metric == metric) and (not contains or contains in call.section(section))
        )

    def metrics_asked(self) -> set[str]:
        """The metrics that sent at least one request."""
        with self._lock:
            return {call.metric for call in self.calls}
