"""Calling any `Agent`, ours or the user's own: the check before the first case, and a case run whose final
failures, whatever they are, become recorded failures of that case run only."""

from __future__ import annotations

import asyncio

from agent_eval.agents.base import Agent, Preflighted
from agent_eval.agents.errors import AgentFailure, fail_run, format_traceback, is_transient
from agent_eval.errors import InfrastructureError
from agent_eval.schema import AgentRun, EvalCase

__all__ = ["DEFAULT_PREFLIGHT_TIMEOUT", "preflight_agent", "run_agent_case"]

DEFAULT_PREFLIGHT_TIMEOUT = 10.0


async def preflight_agent(agent: Agent, timeout: float = DEFAULT_PREFLIGHT_TIMEOUT) -> None:
    """Run the agent's `preflight()` check, if it has one, within `timeout` seconds.

    Raises:
        InfrastructureError: the agent's server cannot be reached, or the check took longer than `timeout`.
        EvalInputError: the reference names something the server does not have (e.g. a wrong app name), or the
            agent lacks credentials.
    """
    if not isinstance(agent, Preflighted):
        return
    try:
        async with asyncio.timeout(timeout):
            await agent.preflight()
    except TimeoutError:
        raise InfrastructureError(
            f"the agent {agent.reference!r} did not answer its check within {timeout:g} s: is its server up?"
        ) from None


async def run_agent_case(agent: Agent, case: EvalCase, eval_set_id: str, run_index: int) -> AgentRun:
    """`agent.run_case(...)`, with every final failure an `AgentFailure` whose run says why.

    A transient error is raised as it is (the caller retries it); anything else the agent raises, `SystemExit`
    and `KeyboardInterrupt` included (not `asyncio.CancelledError`), becomes an `AgentFailure` with the error,
    its kind and its traceback recorded: it fails this case run only.

    Raises:
        AgentFailure: the agent failed for good on this case run.
        Exception: a transient error (`is_transient`).
    """
    try:
        return await agent.run_case(case, eval_set_id, run_index)
    except AgentFailure as failure:
        _complete(failure)
        raise
    except asyncio.CancelledError:
        raise
    except BaseException as error:  # a user's Agent raising SystemExit must not end the evaluation
        if is_transient(error):
            raise
        run = AgentRun(eval_set_id=eval_set_id, eval_id=case.eval_id, run_index=run_index)
        raise fail_run(run, error) from error


def _complete(failure: AgentFailure) -> None:
    """Fill in what a user's own `AgentFailure` may leave out: the kind (the agent's) and the traceback."""
    run = failure.run
    run.error = run.error or "the agent failed"
    run.error_kind = run.error_kind or "agent"
    if run.error_traceback is None and failure.__cause__ is not None:
        run.error_traceback = format_traceback(failure.__cause__)
