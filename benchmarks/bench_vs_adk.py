"""agent-eval against ADK's own `adk eval`: the same ADK agent and eval sets, both CLIs timed as whole processes.

The agent (`benchmarks/adk_race/race_agent`, copied into a temporary folder so that `adk eval`'s result files
stay out of the repository) is an ADK `LlmAgent` whose scripted `BaseLlm` sleeps `RACE_LATENCY_SECONDS` per
call and makes 2 calls a case (`echo(i=N)`, then a final text), so every generated case passes ADK's default
criteria `tool_trajectory_avg_score` and `response_match_score`. ADK runs from its own venv
(`--adk-venv`, default `~/.cache/agent-eval-bench/adk-venv`, created with `google-adk[eval]` on first use) as
`adk eval AGENT_DIR EVALSET --config_file_path CONFIG` (its own concurrency: 4 cases at once); agent-eval as
`.venv/bin/agent-eval run EVALSET --agent AGENT_DIR --db-url sqlite:///...` (plus `-q` when the CLI has it).

Scenarios (`--only 1,2,...`; every timed run is a whole process, wall time; figures are medians over
`--repeat` runs (default 3), `--long-repeat` for 4 and 7 (default 1), `--repeat-1000` for 5 (default 1), fewer
so that the whole script stays under 15 min on a busy 2-core machine; agent-eval and ADK alternate run by run):
1. 1 case, no latency, a local Prefect server already up (`agent-eval server start`, or `prefect server start`
   with `PREFECT_API_URL` on CLIs without it), with the warm process `server start` starts beside it; and again
   with `AGENT_EVAL_WARM=0` (no goal). Goal: agent-eval <= 0.5 x adk eval.
2. 1 case, first run on a machine: fresh `AGENT_EVAL_HOME` / `PREFECT_HOME`, no server; `CI` unset (agent-eval
   starts its background server, stopped again after each run) and `CI=1` (Prefect's temporary server).
   Goal: <= 1.2 x adk eval.
3. 33 cases, no latency, server up (no goal).
4. 200 cases, 0.5 s per model call, agent-eval `--max-concurrency 16`; ideal = ceil(200/16) x 2 x 0.5 s.
   Goals: >= 3.5 x faster than adk eval; peak RSS (largest single process) no more than adk eval's.
5. 1,000 cases, no latency, 2 criteria: agent-eval's per-case cost, (wall(N=1000) - wall(N=1)) / 999, against a
   bare Prefect flow mapping no-op tasks on the same server (`adk_race/floors.py`). Goal <= 1.3 x. The race
   agent alone through ADK's `InMemoryRunner` is printed too. Skipped by `--quick`.
6. `agent-eval --help` (goal <= 0.5 s) and `agent-eval run nonexistent.json` (exit 2, goal <= 1 s); ADK's
   `adk eval --help` and a missing eval set beside them (the latter run once: it costs ADK 10-20 s).
7. judged: 33 cases, `final_response_match_v2` with 5 samples, a fake Gemini judge answering in 1.5 s
   (tests/fakes/gemini_server.py, run in a thread of this script; importing from tests/ is deliberate),
   `AGENT_EVAL_JUDGE_CONCURRENCY=8`. Scoring time = first judge request to last answer. Goal <= 1.3 x
   33 x 5 x 1.5 / 8 s. agent-eval only.

Every child gets the same `PYTHONPYCACHEPREFIX` (under the cache folder) and one untimed warm-up of each
tool, and never inherits Prefect, agent-eval or Google credential variables. Before each timed run against
the shared server the script waits until the server is idle. Exit status 1 when a run fails its checks.

Usage (from the repository root; 10-15 min on 2 busy cores, plus the ADK venv's install on the first run):
    .venv/bin/python benchmarks/bench_vs_adk.py [--repeat 3] [--long-repeat 1] [--repeat-1000 1] [--only 1,2,6]
        [--quick] [--adk-venv DIR] [--keep]
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT)]  # adk_race; tests.fakes for the fake judge

from adk_race.bench import Bench, Row  # noqa: E402
from adk_race.processes import ensure_adk_venv, start_server, stop_server  # noqa: E402
from adk_race.scenarios import SCENARIOS  # noqa: E402

DEFAULT_VENV = Path.home() / ".cache" / "agent-eval-bench" / "adk-venv"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per tool and scenario (default 3)")
    parser.add_argument("--long-repeat", type=int, default=1, help="timed runs for scenarios 4 and 7 (default 1)")
    parser.add_argument("--repeat-1000", type=int, default=1, help="timed runs for scenario 5 (default 1)")
    parser.add_argument("--only", default="", help="comma-separated scenario numbers (default: all)")
    parser.add_argument("--quick", action="store_true", help="skip scenario 5 (1,000 cases)")
    parser.add_argument("--adk-venv", type=Path, default=DEFAULT_VENV, help=f"ADK's venv (default {DEFAULT_VENV})")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args(argv)
    try:
        chosen = {int(item) for item in args.only.split(",") if item.strip()} or set(SCENARIOS)
    except ValueError:
        parser.error(f"--only takes comma-separated scenario numbers, got {args.only!r}")
    if unknown := chosen - set(SCENARIOS):
        parser.error(f"--only: no scenario {sorted(unknown)}; choose from {sorted(SCENARIOS)}")
    if args.quick:
        chosen.discard(5)
    if min(args.repeat, args.long_repeat, args.repeat_1000) < 1:
        parser.error("--repeat, --long-repeat and --repeat-1000 must be at least 1")
    args.scenarios = sorted(chosen)
    return args


def _git_state() -> str:
    def git(*words: str) -> str:
        return subprocess.run(["git", *words], check=False, cwd=ROOT, capture_output=True, text=True).stdout.strip()

    changed = len(git("status", "--porcelain").splitlines())
    return f"{git('rev-parse', '--short', 'HEAD')} + {changed} changed files in the work tree"


def _header(adk_version: str, args: argparse.Namespace) -> list[str]:
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    return [
        f"bench_vs_adk {now}: agent-eval {importlib.metadata.version('agent-eval')} at {_git_state()}",
        f"  adk eval: google-adk {adk_version} ({args.adk_venv}); prefect {importlib.metadata.version('prefect')}; "
        f"python {sys.version.split()[0]}",
        f"  nproc {cores}; load average before: {load}; timed runs: {args.repeat} per tool, "
        f"{args.long_repeat} in scenarios 4 and 7, {args.repeat_1000} in scenario 5",
    ]


def _table(rows: list[Row]) -> list[str]:
    head = ("scenario", "agent-eval", "adk eval (or the yardstick)", "ratio", "goal", "pass")
    cells = [head] + [(r.label, r.ours, r.theirs, r.ratio, r.goal, r.verdict) for r in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(head))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)) for line in cells]
    lines.insert(1, "  ".join("-" * width for width in widths))
    for row in rows:
        lines += [f"  [{row.label}] {note}" for note in row.notes]
    return lines


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    adk_version = ensure_adk_venv(args.adk_venv)
    header = _header(adk_version, args)
    print("\n".join(header), file=sys.stderr)
    folder = Path(tempfile.mkdtemp(prefix="bench-vs-adk-"))
    repeats = (args.repeat, args.long_repeat, args.repeat_1000)
    bench = Bench.create(folder, ROOT, args.adk_venv, args.adk_venv.parent / "pycache", repeats)
    rows: list[Row] = []
    durations: list[str] = []
    began = time.perf_counter()
    try:
        if any(number in (1, 3, 4, 5, 7) for number in args.scenarios):
            bench.server = start_server(bench.agent_eval, bench.env(), folder)
            print(f"server: {bench.server.started_by} at {bench.server.api_url}", file=sys.stderr)
        bench.warm_up(needs_runs=any(number != 6 for number in args.scenarios))
        for number in args.scenarios:
            started = time.perf_counter()
            rows += SCENARIOS[number](bench)
            durations.append(f"{number}: {time.perf_counter() - started:.0f} s")
    finally:
        if bench.server is not None:
            stop_server(bench.agent_eval, bench.server, bench.env())
        if args.keep:
            print(f"kept {folder}", file=sys.stderr)
        else:
            shutil.rmtree(folder, ignore_errors=True)
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    took = f"script {time.perf_counter() - began:.0f} s (scenarios {', '.join(durations)})"
    print("\n".join([*header, "", *_table(rows), "", f"load average after: {load}; {took}"]))
    for problem in bench.problems:
        print(f"PROBLEM: {problem}")
    return 1 if bench.problems else 0


if __name__ == "__main__":
    sys.exit(main())
