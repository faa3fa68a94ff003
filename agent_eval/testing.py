"""Evals as tests: run an evaluation inside pytest (or any test runner) and fail with a readable summary.

```python
from agent_eval.testing import assert_eval_passes

def test_home_automation_agent():
    assert_eval_passes("examples/home_automation", min_pass_rate=0.8)
```
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent_eval.api import evaluate
from agent_eval.render import format_summary
from agent_eval.render.console import unscored_criteria_lines
from agent_eval.results.model import RunReport

__all__ = ["assert_eval_passes", "check_pass_rate"]


def check_pass_rate(report: RunReport, min_pass_rate: float = 1.0) -> None:
    """Fail unless the share of passed case runs reaches `min_pass_rate`.

    The share is passed / all case runs: not-evaluated case runs count as not passed (unlike the summary's
    pass rate, which leaves them out). A run without any case never passes (unless `min_pass_rate` is 0), nor
    does one where a criterion scored no case run at all.

    Args:
        report: the run report.
        min_pass_rate: the share of case runs that must pass, in [0, 1].

    Raises:
        ValueError: `min_pass_rate` is outside [0, 1].
        AssertionError: too few case runs passed; the message is the console summary with the failed cases.
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this helper's
    if not 0.0 <= min_pass_rate <= 1.0:
        raise ValueError(f"min_pass_rate must be between 0 and 1, got {min_pass_rate!r}")
    summary = report.summary
    share = summary.passed / summary.total if summary.total else 0.0
    if share < min_pass_rate or (summary.total == 0 and min_pass_rate > 0):
        header = f"{share:.1%} of case runs passed, below the required {min_pass_rate:.1%}"
        raise AssertionError(f"{header}\n{format_summary(report)}")
    unscored = unscored_criteria_lines(report)
    if unscored:
        raise AssertionError("\n".join([*unscored, format_summary(report)]))


def assert_eval_passes(
    paths: str | Path | Sequence[str | Path],
    agent: str | None = None,
    config: str | Path | None = None,
    *,
    min_pass_rate: float = 1.0,
    **evaluate_kwargs: Any,
) -> RunReport:
    """Evaluate an agent (through `agent_eval.evaluate`) and fail unless enough case runs pass.

    Args:
        paths: eval files or folders (`FILE:case1,case2` selects cases).
        agent: agent reference; default: the `agent.py` beside the eval files.
        config: an ADK `test_config.json`; default: the one beside the eval files, else ADK's defaults.
        min_pass_rate: the share of case runs that must pass, in [0, 1] (default: all of them).
        **evaluate_kwargs: passed on to `evaluate` (`num_runs`, `max_concurrency`, `db_url`, `refresh_cache`).

    Returns:
        The run report, for further assertions.

    Raises:
        ValueError: `min_pass_rate` is outside [0, 1] (checked before anything runs).
        EvalInputError: bad input, found before anything runs.
        AssertionError: too few case runs passed; the message is the console summary with the failed cases.
    """
    __tracebackhide__ = True
    if not 0.0 <= min_pass_rate <= 1.0:
        raise ValueError(f"min_pass_rate must be between 0 and 1, got {min_pass_rate!r}")
    report = evaluate(paths, agent, config, **evaluate_kwargs)
    check_pass_rate(report, min_pass_rate)
    return report
