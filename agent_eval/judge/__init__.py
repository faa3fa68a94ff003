"""The LLM judge: interface (base), client and backends (Gemini API, Vertex AI, OpenAI-compatible), cache."""

from agent_eval.judge.base import DEFAULT_JUDGE_MODEL, Judge, JudgeModelOptions, JudgeRequest, JudgeSample
from agent_eval.judge.cache import JudgeCache
from agent_eval.judge.client import ClientJudge, GenaiJudge, OpenAIJudge, close_judge_clients, make_judge
from agent_eval.judge.credentials import JUDGE_CREDENTIALS_HELP, check_judge_credentials
from agent_eval.judge.policy import JudgeStats, RetryPolicy

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
