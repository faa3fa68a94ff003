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
    from agent_eval.metrics.judged.base import DEFAULT_JUDGE_MODEL as DEFAULT_JUDGE_MODEL
    from agent_eval.metrics.judged.base import Judge as Judge
    from agent_eval.metrics.judged.base import JudgeModelOptions as JudgeModelOptions
    from agent_eval.metrics.judged.base import JudgeRequest as JudgeRequest
    from agent_eval.metrics.judged.base import JudgeSample as JudgeSample
    from agent_eval.metrics.judged.cache import JudgeCache as JudgeCache
    from agent_eval.metrics.judged.client import ClientJudge as ClientJudge
    from agent_eval.metrics.judged.client import GenaiJudge as GenaiJudge
    from agent_eval.metrics.judged.client import OpenAIJudge as OpenAIJudge
    from agent_eval.metrics.judged.client import close_judge_clients as close_judge_clients
    from agent_eval.metrics.judged.client import make_judge as make_judge
    from agent_eval.metrics.judged.credentials import JUDGE_CREDENTIALS_HELP as JUDGE_CREDENTIALS_HELP
    from agent_eval.metrics.judged.credentials import check_judge_credentials as check_judge_credentials
    from agent_eval.metrics.judged.policy import JudgeStats as JudgeStats
    from agent_eval.metrics.judged.policy import RetryPolicy as RetryPolicy


__getattr__, __dir__, __all__ = lazy_exports(__name__, __file__)
