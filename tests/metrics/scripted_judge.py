"""A scripted `Judge` for metric tests (it answers by a rule or from a queue, and records every request), and
helpers to build invocations and run judged metrics.

A reply is what the judge answers for one sample:
- a dict: validated with the request's `response_schema` (a structured answer);
- a pydantic model: returned as the parsed answer;
- a string: raw text only, no parsed answer (the metric must parse it, or find it unusable);
- a `JudgeSample`: returned as it is (e.g. `failed("timeout")`);
- an exception: raised from `ask` (a judge that breaks its contract).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeAlias

from google.genai.types import Content, FunctionCall, FunctionResponse, Part
from pydantic import BaseModel

from agent_eval.metrics.judged.base import JudgeRequest, JudgeSample
from agent_eval.metrics.judged.voting import set_judge_factory
from agent_eval.schema import (
    ConversationScenario,
    EvalConfig,
    EvalMetric,
    EvaluationResult,
    IntermediateData,
    Invocation,
    Rubric,
)

Reply: TypeAlias = dict[str, Any] | BaseModel | JudgeSample | str | Exception
Rule: TypeAlias = Callable[[JudgeRequest], Reply]


class ScriptedJudge:
    """A `Judge` that answers from `queue` first, then by `rule`; `requests` and `models` record what it got."""

    def __init__(self, rule: Rule | None = None, *, queue: Iterable[Reply] = (), pause: float = 0.0) -> None:
        """Answer from `queue`, then by `rule`; wait `pause` seconds inside each call (to observe concurrency)."""
        self.rule = rule
        self.queue: deque[Reply] = deque(queue)
        self.pause = pause
        self.requests: list[JudgeRequest] = []
        self.models: list[str] = []
        self.running = 0
        self.max_running = 0

    async def ask(self, request: JudgeRequest) -> JudgeSample:
        """The scripted sample for `request`."""
        self.requests.append(request)
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        try:
            await asyncio.sleep(self.pause)
            return as_sample(self._reply(request), request)
        finally:
            self.running -= 1

    def _reply(self, request: JudgeRequest) -> Reply:
        if self.queue:
            return self.queue.popleft()
        if self.rule is None:
            raise AssertionError(f"no scripted reply left for {request.prompt[:80]!r}")
        return self.rule(request)


def as_sample(reply: Reply, request: JudgeRequest) -> JudgeSample:
    """The `JudgeSample` a reply stands for (see the module docstring)."""
    if isinstance(reply, Exception):
        raise reply
    if isinstance(reply, JudgeSample):
        return reply
    if isinstance(reply, str):
        return JudgeSample(raw_text=reply)
    if isinstance(reply, BaseModel):
        return JudgeSample(parsed=reply, raw_text=reply.model_dump_json())
    return JudgeSample(parsed=request.response_schema.model_validate(reply), raw_text=json.dumps(reply))


def failed(error: str) -> JudgeSample:
    """A sample the judge could not produce (what the client returns after its retries)."""
    return JudgeSample(error=error)


def by_sample(*replies: Reply) -> Rule:
    """A rule answering sample `i` of every question with `replies[i]`."""
    return lambda request: replies[request.sample_index]


def by_tag(tag: str, replies: dict[str, list[Reply]]) -> Rule:
    """A rule answering sample `i` with `replies[<text fenced in tag>][i]`."""
    return lambda request: replies[fenced(request.prompt, tag)][request.sample_index]


def fenced(prompt: str, tag: str) -> str:
    """The text of the one `<tag>` fence of a prompt (fails unless there is exactly one)."""
    found = re.findall(rf"<{tag}>\n(.*?)\n</{tag}>", prompt, flags=re.DOTALL)
    assert len(found) == 1, f"expected one <{tag}> fence, found {len(found)} in {prompt!r}"
    return str(found[0])


@contextmanager
def installed(judge: ScriptedJudge) -> Iterator[ScriptedJudge]:
    """Make every judged metric use `judge` (recording the models asked for) inside the block."""

    def factory(model: str) -> ScriptedJudge:
        judge.models.append(model)
        return judge

    previous = set_judge_factory(factory)
    try:
        yield judge
    finally:
        set_judge_factory(previous)


# --------------------------------------------------------------------------------------------- helpers
ADK_EXACT_CAPABLE = frozenset(
    {
        "final_response_match_v2",
        "rubric_based_final_response_quality_v1",
        "rubric_based_tool_use_quality_v1",
        "hallucinations_v1",
        "per_turn_user_simulator_quality_v1",
    }
)
"""ADK's judged metrics that default to judge_mode "adk-exact" when google-adk is installed."""


def eval_metric(name: str, threshold: float = 0.5, **options: Any) -> EvalMetric:
    """The `EvalMetric` of a config with one criterion `name` (threshold and options as a user writes them).

    The scripted judge answers agent-eval's structured questions, so ADK's judged metrics are put in
    judge_mode "agent-eval" unless the test chooses a mode (ADK-exact judging: tests/metrics/test_adk_exact_judges.py).
    """
    if name in ADK_EXACT_CAPABLE:
        options.setdefault("judge_mode", "agent-eval")
    config = EvalConfig.model_validate({"criteria": {name: {"threshold": threshold, **options}}})
    return config.eval_metrics()[0]


def samples(count: int, **judge_options: Any) -> dict[str, Any]:
    """`judge_model_options` with `num_samples=count`."""
    return {"judge_model_options": {"num_samples": count, **judge_options}}


def turn(
    user: str,
    response: str | None = None,
    *,
    calls: Sequence[tuple[str, dict[str, Any], Any]] = (),
    texts: Sequence[str] = (),
    rubrics: list[Rubric] | None = None,
    app_details: dict[str, Any] | None = None,
) -> Invocation:
    """An invocation: the user's text, the final response, tool calls `(name, args, output)`, intermediate texts."""
    uses = [FunctionCall(id=f"call_{i}", name=name, args=args) for i, (name, args, _) in enumerate(calls)]
    outputs = [
        FunctionResponse(id=f"call_{i}", name=name, response=output if isinstance(output, dict) else {"result": output})
        for i, (name, _, output) in enumerate(calls)
    ]
    return Invocation(
        user_content=Content(role="user", parts=[Part(text=user)]),
        final_response=Content(role="model", parts=[Part(text=response)]) if response is not None else None,
        intermediate_data=IntermediateData(
            tool_uses=uses, tool_responses=outputs, intermediate_responses=[("agent", [Part(text=t)]) for t in texts]
        ),
        rubrics=rubrics,
        app_details=app_details,
    )


def rubric(rubric_id: str, text: str, kind: str | None = None) -> Rubric:
    """An ADK rubric."""
    return Rubric.model_validate({"rubric_id": rubric_id, "rubric_content": {"text_property": text}, "type": kind})


def run(
    function: Callable[..., Any],
    metric: EvalMetric,
    actual: list[Invocation],
    expected: list[Invocation] | None = None,
    scenario: ConversationScenario | None = None,
) -> EvaluationResult:
    """Call a metric with ADK's positional signature and await it."""
    outcome = function(metric, actual, expected, scenario)
    result = asyncio.run(outcome) if inspect.iscoroutine(outcome) else outcome
    assert isinstance(result, EvaluationResult)
    return result
