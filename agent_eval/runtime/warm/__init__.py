"""The warm process: Prefect, SQLAlchemy, google-genai, ADK and agent-eval already imported, so that a run from
the command line starts in about a second instead of spending most of its time importing them.

Internal: the interface is the `agent-eval` command (`server start|stop|status`); this package's names may change
between releases. `protocol` holds what both ends share, `client` the command's side, `serving` the warm process
and its forked children, `lifecycle` starting and stopping it.

Rules (README "The everyday loop"):

- **When it runs.** Beside the local Prefect server that agent-eval manages: `agent-eval server start` starts
  both, `agent-eval server stop` stops both, and a run that used the local server starts it when it ends if none
  runs. Never in CI (`CI` set) or with `AGENT_EVAL_WARM=0`.
- **What it holds.** Library and agent-eval modules only (`PRELOADED`), never the user's agent: each run
  imports the agent afresh, so an edited prompt or tool is always the one evaluated.
- **How a run uses it.** The `agent-eval` command (the client) sends its arguments, working directory and
  environment, and hands over its stdin, stdout and stderr, through a Unix socket private to the user. The warm
  process forks a child that becomes the run: it prints to the client's terminal, and the client exits with the
  child's exit code. SIGINT, SIGTERM and SIGHUP that reach the client are passed on; if the client dies (even by
  SIGKILL), the child is stopped as by SIGTERM, so no run outlives its command.
- **When a run starts cold instead** (in the client's own process, exactly as without a warm process):
  agent-eval's sources or the installed packages changed since the warm process started (it then exits, and the
  run starts a fresh one when it ends); the client's `PREFECT_*`, `OTEL_*`, `ADK_*`, `GOOGLE_GENAI_*`,
  `GOOGLE_CLOUD_*`, `PYTHON*`, `LANG` or `LC_*` variables differ from the warm process's (modules read some
  at import: so a run with `-v`, or against a server that `PREFECT_API_URL` names, starts cold); or Prefect's
  settings seen from the client's folder differ (a `prefect.toml` or `.env` there); or a thread other than
  its main one runs in the warm process (a preloaded module started one), as forking it then is unsafe. With
  `-v` the client says so in one line, with the reason. The bad-input checks that need no import (a missing
  file) answer in the client at once.
- **When it leaves.** After `AGENT_EVAL_WARM_IDLE_MINUTES` (default 60; 0: never) with no request and no run,
  it exits and frees its memory; the next run on the local server starts it again.
- **If the warm process dies mid-run** (SIGKILL), its child finishes the run; the client then prints one line
  and exits 4, as it cannot learn the exit code.
- **Its log** (`$AGENT_EVAL_HOME/warm.log`) has one line per run (exit code, wall time, peak RSS and CPU time of
  the child, which the benchmarks read) and one per cold answer, naming the variables that differ (never values)
  or the threads that ran.
"""

from __future__ import annotations

from agent_eval.runtime.warm.client import run_in_warm_process
from agent_eval.runtime.warm.lifecycle import (
    WarmProcess,
    start_warm_process,
    stop_warm_process,
    wait_until_ready,
    warm_process_status,
)
from agent_eval.runtime.warm.protocol import WARM_ENV, in_warm_child, warm_wanted
from agent_eval.runtime.warm.serving import PRELOADED, serve

__all__ = [
    "PRELOADED",
    "WARM_ENV",
    "WarmProcess",
    "in_warm_child",
    "run_in_warm_process",
    "serve",
    "start_warm_process",
    "stop_warm_process",
    "wait_until_ready",
    "warm_process_status",
    "warm_wanted",
]
