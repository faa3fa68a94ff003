"""Recorded sessions as an ADK EvalSet: production conversations become regression cases.

Each recorded case becomes an ADK eval case whose `conversation` is what the agent did (user content, final
response, and its events as `intermediate_data`), with a `session_input` where the app name and user id are
known (the session's state with them). ADK's own `EvalSet` model reads the file and `adk eval` runs it, as ADK's
web UI does for one session at a time. Our extensions (`actual_conversation`, `recorded`) are left out.
"""

from __future__ import annotations

from agent_eval.schema import EvalCase, EvalSet, SessionInput

__all__ = ["adk_eval_set"]


def adk_eval_set(recorded: EvalSet) -> tuple[EvalSet, list[str]]:
    """The recorded eval set in ADK's own shape (one case per session, cases in the same order), and one line
    per kind of session left out: a failed session (its answer is no reference) and one recorded without
    content (no user message to replay)."""
    failed = [case.eval_id for case in recorded.eval_cases if case.recorded is not None and case.recorded.error]
    blind = [c.eval_id for c in recorded.eval_cases if c.recorded is not None and not c.recorded.content_captured]
    kept = [case for case in recorded.eval_cases if case.eval_id not in {*failed, *blind}]
    eval_set = EvalSet(
        eval_set_id=recorded.eval_set_id,
        name=recorded.eval_set_id,
        description=f"{len(kept)} recorded session(s), imported by agent-eval",
        eval_cases=[_adk_case(case) for case in kept],
    )
    notes = [f"left out {len(failed)} failed session(s): {', '.join(failed)}"] if failed else []
    notes += [f"left out {len(blind)} session(s) recorded without content"] if blind else []
    return eval_set, notes


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
