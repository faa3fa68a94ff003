"""What google-genai will find in the environment: Vertex AI or the Gemini API, and whether credentials are set.

Internal: the public API is `agent_eval`'s; this module's names may change between releases.

Shared by the Gemini agent, the user simulator and the judge, so the rule is written once.
"""

from __future__ import annotations

import os

__all__ = ["GOOGLE_CREDENTIALS_HELP", "has_google_credentials", "vertex_enabled"]

GOOGLE_CREDENTIALS_HELP = (
    "set GOOGLE_API_KEY or GEMINI_API_KEY, or GOOGLE_GENAI_USE_VERTEXAI=true with GOOGLE_CLOUD_PROJECT "
    "and GOOGLE_CLOUD_LOCATION"
)


def vertex_enabled() -> bool:
    """Whether google-genai would talk to Vertex AI (`GOOGLE_GENAI_USE_VERTEXAI` or `..._USE_ENTERPRISE` true)."""
    flag = os.environ.get("GOOGLE_GENAI_USE_ENTERPRISE") or os.environ.get("GOOGLE_GENAI_USE_VERTEXAI") or ""
    return flag.strip().lower() in ("true", "1")


def has_google_credentials() -> bool:
    """An API key, or Vertex AI with a project and a location.

    Application default credentials are not checked: with Vertex AI they are found at the first call.
    """
    if os.environ.get("GOOGLE_API_KEY") or os.environ.get("GEMINI_API_KEY"):
        return True
    has_project = bool(os.environ.get("GOOGLE_CLOUD_PROJECT") and os.environ.get("GOOGLE_CLOUD_LOCATION"))
    return vertex_enabled() and has_project
