"""The LLM judge: interface (base), client and backends (Gemini API, Vertex AI, OpenAI-compatible), cache."""

from agent_eval.judge.base import DEFAULT_JUDGE_MODEL, Judge, JudgeModelOptions, JudgeRequest, JudgeSample

__all__ = ["DEFAULT_JUDGE_MODEL", "Judge", "JudgeModelOptions", "JudgeRequest", "JudgeSample"]
