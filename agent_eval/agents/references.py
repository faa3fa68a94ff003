"""The agent reference forms, in a module that imports nothing (the CLI's `--help` shows them).

Each form that an adapter of this package answers to is one `ReferenceForm` line in `REFERENCE_FORMS`: the
syntax and meaning `--help` shows, the prefixes that select it, and the adapter's resolver as a
`"module:function"` string (imported only when a reference of that form is resolved). Adding an adapter with
a reference form of its own is its module plus one line here (`docs/architecture.md`, "Where to add")."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["AGENT_REFERENCE_FORMS", "REFERENCE_FORMS", "ReferenceForm"]


@dataclass(frozen=True)
class ReferenceForm:
    """One way to name an agent in `--agent` / `evaluate(agent=...)`.

    Attributes:
        syntax: how it is written, with placeholders in capitals (`adk-api+http://HOST:PORT/APP`).
        meaning: what it names, one line.
        prefixes: a reference starting with one of them has this form; `exact` a reference equal to it.
        resolver: `"module:function"`, the function `(reference) -> Agent` of the adapter; None for the forms
            that import user code (`agent_eval.agents.resolve`), the fallback for a reference of no other form.
    """

    syntax: str
    meaning: str
    prefixes: tuple[str, ...] = ()
    exact: str | None = None
    resolver: str | None = None

    def selects(self, reference: str) -> bool:
        """Whether `reference` has this form (never for the user-code forms: they are the fallback)."""
        return reference == self.exact or (bool(self.prefixes) and reference.startswith(self.prefixes))


_HTTP = "agent_eval.agents.http_agent:resolve_http_agent"

REFERENCE_FORMS: tuple[ReferenceForm, ...] = (
    ReferenceForm(
        "adk-api+http://HOST:PORT/APP",
        "app APP of an ADK api_server (`adk api_server`; adk-api+https:// too)",
        prefixes=("adk-api+http://", "adk-api+https://"),
        resolver=_HTTP,
    ),
    ReferenceForm(
        "http://HOST/PATH",
        "a JSON endpoint: POST {prompt, session_id, user_id, state} per turn (https too)",
        prefixes=("http://", "https://"),
        resolver=_HTTP,
    ),
    ReferenceForm("path/to/agent_folder", "the folder's agent.py and its root_agent (or app), as `adk eval` finds it"),
    ReferenceForm("path/to/file.py:ATTR", "an attribute of a Python file"),
    ReferenceForm("package.module:ATTR", "an attribute of an importable module (the current folder is importable)"),
    ReferenceForm(
        "replay",
        "no agent: the cases' recorded responses are scored as they are",
        exact="replay",
        resolver="agent_eval.agents.replay:replay_agent",
    ),
)
"""Every accepted reference form, in the order `--help` lists them."""

AGENT_REFERENCE_FORMS = "\n".join(f"{form.syntax:<31} {form.meaning}" for form in REFERENCE_FORMS)
"""Every accepted `--agent` reference form, one per line (for the CLI help); an ATTR is an `Agent`, an ADK
agent or `App`, or a plain function `fn(message[, session])`."""
