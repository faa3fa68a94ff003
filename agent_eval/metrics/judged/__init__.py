"""The LLM-judged metric family and its judge.

Internal: the public API is `agent_eval`'s; this package's names may change between releases.

The judge: interface (`base`), client and backends (`client`, `backends`, `openai_backend`: Gemini API, Vertex
AI, OpenAI-compatible), credentials, retry policy and counters (`policy`), cache. The metrics: ADK's (`adk`,
`rubrics`, `user_simulator`, scored by google-adk's own evaluators in `adk_exact` by default, see `mode`) and
ADK-Rust's (`rust`), sharing prompts (`prompts`) and sampling, voting and results (`voting`).

Names are imported on first use (`agent_eval.lazy`), so importing the package is cheap."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_eval.lazy import lazy_exports

if TYPE_CHECKING:
    from agent_eval.metrics.judged.base import DEFAULT_JUDGE_MODEL, Judge, JudgeModelOptions, JudgeRequest, JudgeSample
    from agent_eval.metrics.judged.cache import JudgeCache
    from agent_eval.metrics.judged.client import ClientJudge, GenaiJudge, OpenAIJudge, close_judge_clients, make_judge
    from agent_eval.metrics.judged.credentials import JUDGE_CREDENTIALS_HELP, check_judge_credentials
    from agent_eval.metrics.judged.policy import JudgeStats, RetryPolicy

_EXPORTS = {
    "agent_eval.metrics.judged.base": (
        "DEFAULT_JUDGE_MODEL",
        "Judge",
        "JudgeModelOptions",
        "JudgeRequest",
        "JudgeSample",
    ),
    "agent_eval.metrics.judged.cache": ("JudgeCache",),
    "agent_eval.metrics.judged.client": (
        "ClientJudge",
        "GenaiJudge",
        "OpenAIJudge",
        "close_judge_clients",
        "make_judge",
    ),
    "agent_eval.metrics.judged.credentials": ("JUDGE_CREDENTIALS_HELP", "check_judge_credentials"),
    "agent_eval.metrics.judged.policy": ("JudgeStats", "RetryPolicy"),
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "DEFAULT_JUDGE_MODEL",
    "JUDGE_CREDENTIALS_HELP",
    "ClientJudge",
    "GenaiJudge",
    "Judge",
    "JudgeCache",
    "JudgeModelOptions",
    "JudgeRequest",
    "JudgeSample",
    "JudgeStats",
    "OpenAIJudge",
    "RetryPolicy",
    "check_judge_credentials",
    "close_judge_clients",
    "make_judge",
]
