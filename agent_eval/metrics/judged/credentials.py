"""Which backend answers a judge model, read from the environment as google-genai reads it, and the checks
made before a run starts.

- `openai:<model>` (or `AGENT_EVAL_JUDGE_BACKEND=openai`): an OpenAI-compatible server at `OPENAI_BASE_URL`
  (default `http://127.0.0.1:8000/v1`, e.g. a local model server), `OPENAI_API_KEY` optional.
- otherwise google-genai: Vertex AI when `GOOGLE_GENAI_USE_VERTEXAI` (or `GOOGLE_GENAI_USE_ENTERPRISE`) is
  true, else the Gemini API; credentials are `GOOGLE_API_KEY` / `GEMINI_API_KEY`, or `GOOGLE_CLOUD_PROJECT`
  and `GOOGLE_CLOUD_LOCATION` for Vertex AI (application default credentials are found at the first call).
  `AGENT_EVAL_GEMINI_BASE_URL` moves the endpoint (a proxy, or a fake server in tests).

`AGENT_EVAL_JUDGE_CONCURRENCY` is the ceiling of the adaptive limit on judge calls in flight
(`agent_eval.metrics.judged.policy.judge_limiter`); `AGENT_EVAL_JUDGE_RETRY_ATTEMPTS`,
`AGENT_EVAL_JUDGE_RETRY_INITIAL_DELAY` and `AGENT_EVAL_JUDGE_RETRY_MAX_DELAY` (seconds) set the retries
(`agent_eval.metrics.judged.policy.retry_policy`). Every `AGENT_EVAL_*` variable is read through
`agent_eval.settings.settings()`, which rejects a bad value in one line; `check_judge_credentials` reads them
before a run.
"""

from __future__ import annotations

import os
from typing import Literal
from urllib.parse import urlsplit

from agent_eval.agents.google_env import has_google_credentials, vertex_enabled
from agent_eval.errors import EvalInputError
from agent_eval.secrets import redact_url_credentials
from agent_eval.settings import DEFAULT_JUDGE_CONCURRENCY, settings

__all__ = [
    "BACKEND_ENV",
    "CONCURRENCY_ENV",
    "DEFAULT_CONCURRENCY",
    "DEFAULT_OPENAI_BASE_URL",
    "GEMINI_BASE_URL_ENV",
    "JUDGE_CREDENTIALS_HELP",
    "OPENAI_PREFIX",
    "RETRY_ENV",
    "BackendName",
    "check_judge_credentials",
    "gemini_base_url",
    "judge_backend",
    "judge_concurrency",
    "judge_retry_env",
    "openai_api_key",
    "openai_base_url",
    "openai_model_name",
    "vertex_enabled",
]

BackendName = Literal["gemini", "vertex", "openai"]

BACKEND_ENV = "AGENT_EVAL_JUDGE_BACKEND"
CONCURRENCY_ENV = "AGENT_EVAL_JUDGE_CONCURRENCY"
GEMINI_BASE_URL_ENV = "AGENT_EVAL_GEMINI_BASE_URL"
RETRY_ENV = {
    "attempts": "AGENT_EVAL_JUDGE_RETRY_ATTEMPTS",
    "initial_delay": "AGENT_EVAL_JUDGE_RETRY_INITIAL_DELAY",
    "max_delay": "AGENT_EVAL_JUDGE_RETRY_MAX_DELAY",
}
"""The variables that set the judge's retries (a `RetryPolicy` field each; the config's `judge` section wins)."""
DEFAULT_CONCURRENCY = DEFAULT_JUDGE_CONCURRENCY
DEFAULT_OPENAI_BASE_URL = "http://127.0.0.1:8000/v1"
OPENAI_PREFIX = "openai:"
JUDGE_CREDENTIALS_HELP = (
    "set GOOGLE_API_KEY (or GEMINI_API_KEY), or GOOGLE_GENAI_USE_VERTEXAI=true with GOOGLE_CLOUD_PROJECT "
    "and GOOGLE_CLOUD_LOCATION, or use an openai:<model> judge with OPENAI_BASE_URL"
)


def judge_backend(model: str) -> BackendName:
    """The backend that answers `model`: `openai` for `openai:<model>` or `AGENT_EVAL_JUDGE_BACKEND=openai`,
    else `vertex` or `gemini` as google-genai would choose from the environment.

    Raises:
        EvalInputError: an `AGENT_EVAL_*` variable is not valid, e.g. `AGENT_EVAL_JUDGE_BACKEND` is neither
            `google` nor `openai` (`agent_eval.settings.settings`).
    """
    if model.startswith(OPENAI_PREFIX) or settings().judge_backend == "openai":
        return "openai"
    return "vertex" if vertex_enabled() else "gemini"


def check_judge_credentials(model: str) -> None:
    """Fail before a run when the judge `model` cannot be called from this environment.

    Raises:
        EvalInputError: one line naming the variables to set (or the bad value).
    """
    if not model.strip():
        raise EvalInputError(f"the judge model is empty; {JUDGE_CREDENTIALS_HELP}", field="judge_model")
    judge_concurrency()
    judge_retry_env()
    if judge_backend(model) == "openai":
        _check_openai(model)
    elif not has_google_credentials():
        raise EvalInputError(f"judge model {model!r} needs credentials: {JUDGE_CREDENTIALS_HELP}", field="judge_model")


def judge_concurrency() -> int:
    """The ceiling of the adaptive limit on judge calls in flight per event loop (the limit itself starts at 16 at
    most and follows the provider, `agent_eval.runtime.adaptive`): `AGENT_EVAL_JUDGE_CONCURRENCY`, default 64.

    Raises:
        EvalInputError: an `AGENT_EVAL_*` variable is not valid, e.g. this one is not a whole number of at
            least 1 (`agent_eval.settings.settings`).
    """
    return settings().judge_concurrency


def judge_retry_env() -> dict[str, float]:
    """The retry settings given in the environment (`RETRY_ENV`), by `RetryPolicy` field; unset ones are left out.

    Raises:
        EvalInputError: an `AGENT_EVAL_*` variable is not valid, e.g. one of these is not a number in its range
            (`agent_eval.settings.JUDGE_RETRY_LIMITS`).
    """
    current = settings()
    given = {name: getattr(current, f"judge_retry_{name}") for name in RETRY_ENV}
    return {name: value for name, value in given.items() if value is not None}


def openai_model_name(model: str) -> str:
    """The model name sent to the OpenAI-compatible server (`openai:` removed)."""
    return model.removeprefix(OPENAI_PREFIX)


def openai_base_url() -> str:
    """`OPENAI_BASE_URL` without a trailing slash, default `http://127.0.0.1:8000/v1`."""
    return (os.environ.get("OPENAI_BASE_URL") or DEFAULT_OPENAI_BASE_URL).strip().rstrip("/")


def openai_api_key() -> str | None:
    """`OPENAI_API_KEY`, or `None` (local servers usually need none)."""
    return os.environ.get("OPENAI_API_KEY") or None


def gemini_base_url() -> str | None:
    """`AGENT_EVAL_GEMINI_BASE_URL`: where google-genai sends judge calls instead of Google's endpoint.

    Raises:
        EvalInputError: an `AGENT_EVAL_*` variable is not valid (`agent_eval.settings.settings`).
    """
    return settings().gemini_base_url


def _check_openai(model: str) -> None:
    if not openai_model_name(model).strip():
        raise EvalInputError(f"judge model {model!r} names no model after 'openai:'", field="judge_model")
    url = openai_base_url()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        shown = redact_url_credentials(url)
        raise EvalInputError(f"OPENAI_BASE_URL={shown!r} is not an http(s) URL, e.g. {DEFAULT_OPENAI_BASE_URL!r}")
