"""Recorded sessions as an ADK EvalSet: production conversations become regression cases.

Each recorded case becomes an ADK eval case whose `conversation` is what the agent did (user content, final
response, and its events as `intermediate_data`), with a `session_input` where the app name and user id are
known (the session's state with them). ADK's own `EvalSet` model reads the file and `adk eval` runs it, as ADK's
web UI does for one session at a time. Our extensions (`actual_conversation`, `recorded`) are left out.

A failed session (its answer is no reference) and one recorded without content (no user message to replay) are
left out, each kind said in one line. `adk_eval_set` builds the eval set whole; `write_adk_eval_set` writes the
same JSON a part at a time, for an input of any size.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TextIO

from agent_eval.schema import EvalCase, EvalSet, SessionInput

__all__ = ["ImportedSessions", "adk_eval_set", "write_adk_eval_set"]


@dataclass
class ImportedSessions:
    """What an import kept and left out, counted as the cases go by (`keep`)."""

    written: int = 0
    failed: list[str] = field(default_factory=list)
    blind: int = 0

    def keep(self, cases: Sequence[EvalCase]) -> list[EvalCase]:
        """The cases to write, the others counted."""
        kept = []
        for case in cases:
            origin = case.recorded
            if origin is not None and origin.error:
                self.failed.append(case.eval_id)
            elif origin is not None and not origin.content_captured:
                self.blind += 1
            else:
                kept.append(case)
        self.written += len(kept)
        return kept

    @property
    def description(self) -> str:
        return f"{self.written} recorded session(s), imported by agent-eval"

    def notes(self) -> list[str]:
        """One line per kind of session left out."""
        notes = [f"left out {len(self.failed)} failed session(s): {', '.join(self.failed)}"] if self.failed else []
        return notes + ([f"left out {self.blind} session(s) recorded without content"] if self.blind else [])


def adk_eval_set(recorded: EvalSet) -> tuple[EvalSet, list[str]]:
    """The recorded eval set in ADK's own shape (one case per session, cases in the same order), and one line
    per kind of session left out."""
    counts = ImportedSessions()
    kept = counts.keep(recorded.eval_cases)
    eval_set = EvalSet(
        eval_set_id=recorded.eval_set_id,
        name=recorded.eval_set_id,
        description=counts.description,
        eval_cases=[_adk_case(case) for case in kept],
    )
    return eval_set, counts.notes()


def write_adk_eval_set(parts: Iterable[EvalSet], eval_set_id: str, target: TextIO) -> ImportedSessions:
    """Write the JSON of `adk_eval_set` over the cases of every part, in order, to `target`, one part in memory at
    a time (its `description`, known at the end, comes after the cases: JSON readers do not mind the order)."""
    shell = EvalSet(eval_set_id=eval_set_id, name=eval_set_id, eval_cases=[])
    head = shell.model_dump(mode="json", exclude_none=True, exclude={"eval_cases"})
    target.write("{\n" + "".join(f"  {json.dumps(key)}: {json.dumps(value)},\n" for key, value in head.items()))
    target.write('  "eval_cases": [')
    counts, separator = ImportedSessions(), "\n    "
    for part in parts:
        for case in counts.keep(part.eval_cases):
            text = _adk_case(case).model_dump_json(indent=2, exclude_none=True).replace("\n", "\n    ")
            target.write(separator + text)
            separator = ",\n    "
    target.write(f'\n  ],\n  "description": {json.dumps(counts.description)}\n}}\n')
    return counts


def _adk_case(case: EvalCase) -> EvalCase:
    origin = case.recorded
    session_input = None
    if origin is not None and origin.app_name and origin.user_id:
        session_input = SessionInput(app_name=origin.app_name, user_id=origin.user_id, state=dict(origin.state))
    return EvalCase(
        eval_id=case.eval_id,
        conversation=list(case.actual_conversation or case.conversation or []),
        session_input=session_input,
        creation_timestamp=min((inv.creation_timestamp for inv in case.actual_conversation or []), default=0.0),
    )
