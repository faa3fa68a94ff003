"""The outage rule: an evaluation that could not reach its agent is not a result.

Internal: the public API is `agent_eval`'s; this module's names may change between releases.

A run is an outage (stored `errored`, exit code 4, never compared, never a baseline, alerted as "could not
evaluate") when at least `OUTAGE_SHARE` of its case runs, and at least one, failed because the agent could
not be reached: `error_kind == "transport"` (connection refused, DNS, TLS, HTTP client timeouts, 5xx after the
retries, 401/403), or was still rate limited at the retry deadline (`"rate_limit"`). Our own turn timeout and
the agent's own errors are results, never an outage.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_eval.schema import AgentRun

__all__ = ["OUTAGE_SHARE", "outage_error"]

OUTAGE_SHARE = 0.5


def outage_error(runs: Sequence[AgentRun]) -> str | None:
    """`could not evaluate: N of M case runs could not reach the agent (first: ...)` for an outage, else None."""
    unreachable = [run for run in runs if run.error_kind in ("transport", "rate_limit")]
    if not unreachable or len(unreachable) < OUTAGE_SHARE * len(runs):
        return None
    first = unreachable[0]
    cause = (first.error or "").strip().splitlines()[0] if first.error else "unknown"
    limited = " or were rate limited" if any(run.error_kind == "rate_limit" for run in unreachable) else ""
    return (
        f"could not evaluate: {len(unreachable)} of {len(runs)} case runs could not reach the agent{limited} "
        f"(first: {first.eval_set_id}/{first.eval_id}: {cause})"
    )
