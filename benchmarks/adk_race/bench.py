"""`Bench`: the paths, environments and commands every scenario shares, and `Row`, one line of the result table."""

from __future__ import annotations

import re
import shutil
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adk_race.evalsets import write_eval_set
from adk_race.processes import Measured, Server, child_env, run_measured, settle, warm_log_size, with_warm_child

__all__ = ["Bench", "Row", "median", "spread"]

_AE_TOTAL = re.compile(r"Total:\s*(\d+)\s+Passed:\s*(\d+)")
_ADK_PASSED = re.compile(r"Tests passed:\s*(\d+)")
_ADK_FAILED = re.compile(r"Tests failed:\s*(\d+)")


@dataclass
class Row:
    """One line of the result table (already formatted) and notes printed under the table."""

    label: str
    ours: str
    theirs: str
    ratio: str
    goal: str = "-"
    verdict: str = "-"
    notes: list[str] = field(default_factory=list)


def median(runs: Sequence[Measured]) -> float:
    """The median wall time of `runs`."""
    return statistics.median(run.wall for run in runs)


def spread(values: Sequence[float], unit: str = "s", scale: float = 1.0) -> str:
    """`median (min-max) unit`, e.g. `4.21 (4.02-4.90) s`."""
    low, mid, high = (scale * v for v in (min(values), statistics.median(values), max(values)))
    return f"{mid:.2f} ({low:.2f}-{high:.2f}) {unit}"


def verdict(passed: bool) -> str:
    """`yes` or `NO`."""
    return "yes" if passed else "NO"


@dataclass
class Bench:
    """What the scenarios share: the temporary folder, the agent copy, both CLIs, the server, the problems found."""

    folder: Path
    root: Path
    agent_eval: Path
    adk: Path
    pycache: Path
    agents_dir: Path
    repeat: int
    long_repeat: int
    repeat_1000: int
    quiet: list[str]
    server: Server | None = None
    problems: list[str] = field(default_factory=list)
    _sets: dict[tuple[int, str], tuple[Path, Path]] = field(default_factory=dict)

    @classmethod
    def create(cls, folder: Path, root: Path, venv: Path, pycache: Path, repeats: tuple[int, int, int]) -> Bench:
        """Copy the race agent into `folder/agents/race_agent` and find out whether `agent-eval run` has `-q`;
        `repeats` = timed runs per tool in most scenarios, in scenarios 4 and 7, in scenario 5."""
        agents_dir = folder / "agents" / "race_agent"
        source = root / "benchmarks" / "adk_race" / "race_agent"
        shutil.copytree(source, agents_dir, ignore=shutil.ignore_patterns("__pycache__", ".adk"))
        agent_eval = root / ".venv" / "bin" / "agent-eval"
        bench = cls(folder, root, agent_eval, venv / "bin" / "adk", pycache, agents_dir, *repeats, [])
        help_text = run_measured([str(agent_eval), "run", "--help"], bench.env(), folder).output
        bench.quiet = ["-q"] if re.search(r"(^|\s)-q[\s,]", help_text) else []
        return bench

    @property
    def home(self) -> Path:
        """`AGENT_EVAL_HOME` of the runs that use the shared server (its `PREFECT_HOME` is `home/prefect`)."""
        return self.folder / "home"

    def env(self, home: Path | None = None, **updates: str) -> dict[str, str]:
        """A child's environment: `home` (default the shared one, which reaches the shared server), no latency."""
        chosen = home or self.home
        chosen.mkdir(parents=True, exist_ok=True)  # a user's home exists; Prefect makes PREFECT_HOME inside it
        extra: dict[str, str] = {"AGENT_EVAL_HOME": str(chosen), "PREFECT_HOME": str(chosen / "prefect")}
        extra["RACE_LATENCY_SECONDS"] = "0"
        if home is None and self.server is not None and not self.server.started_by.startswith("agent-eval"):
            extra["PREFECT_API_URL"] = self.server.api_url
        return child_env(self.pycache, **{**extra, **updates})

    def eval_set(self, cases: int, kind: str = "default", criteria: dict[str, Any] | None = None) -> tuple[Path, Path]:
        """(eval set, config) of `cases` race cases, written once per (cases, kind)."""
        key = (cases, kind)
        if key not in self._sets:
            self._sets[key] = write_eval_set(self.folder / "sets" / f"{kind}_n{cases}", cases, criteria)
        return self._sets[key]

    def ae(self, evalset: Path, env: dict[str, str], *extra: str, db: Path | None = None) -> Measured:
        """`agent-eval run EVALSET --agent AGENT_DIR --db-url sqlite:///DB [-q] EXTRA...` (default: the shared DB)."""
        store = db or self.home / "store.db"
        command = [str(self.agent_eval), "run", str(evalset), "--agent", str(self.agents_dir)]
        command += ["--db-url", f"sqlite:///{store}", *self.quiet, *extra]
        home = Path(env["AGENT_EVAL_HOME"])
        offset = warm_log_size(home)
        return with_warm_child(run_measured(command, env, self.folder), home, offset)

    def adk_eval(self, evalset: Path, config: Path, env: dict[str, str]) -> Measured:
        """`adk eval AGENT_DIR EVALSET --config_file_path CONFIG` in ADK's own venv."""
        command = [str(self.adk), "eval", str(self.agents_dir), str(evalset), "--config_file_path", str(config)]
        return run_measured(command, env, self.folder)

    def check_ae(self, run: Measured, cases: int, label: str) -> None:
        """Record a problem unless agent-eval exited 0 (every case passed) with `cases` cases, when it says."""
        found = _AE_TOTAL.search(run.output)
        if run.returncode != 0 or (found and (int(found.group(1)), int(found.group(2))) != (cases, cases)):
            self._problem(label, "agent-eval", run, cases)

    def check_adk(self, run: Measured, cases: int, label: str) -> None:
        """Record a problem unless adk eval exited 0 with `cases` tests passed and none failed."""
        passed = sum(int(n) for n in _ADK_PASSED.findall(run.output))
        failed = sum(int(n) for n in _ADK_FAILED.findall(run.output))
        if run.returncode != 0 or passed != cases or failed:
            self._problem(label, "adk eval", run, cases)

    def _problem(self, label: str, tool: str, run: Measured, cases: int) -> None:
        tail = " | ".join(run.output.strip().splitlines()[-3:])
        self.problems.append(f"{label}: {tool} exit {run.returncode}, expected {cases} passing cases: {tail}")

    def log(self, label: str, tool: str, run: Measured, extra: str = "") -> None:
        """One progress line on stderr."""
        figures = f"{run.wall:.2f} s, CPU {run.cpu:.2f} s, {run.peak_mib:.0f} MiB, exit {run.returncode}"
        figures += " (warm process)" if run.warm else ""
        print(f"  [{label}] {tool}: {figures} {extra}", file=sys.stderr)

    def race(
        self, label: str, cases: int, repeat: int, *ae_extra: str, latency: str = "0", warm: bool = True
    ) -> tuple[list[Measured], list[Measured], list[float]]:
        """`repeat` alternating timed runs of both tools on `cases` race cases against the shared server, each
        from an idle server; returns (agent-eval runs, adk eval runs, seconds the server stayed busy after ours).
        `warm=False`: agent-eval without its warm process (`AGENT_EVAL_WARM=0`)."""
        evalset, config = self.eval_set(cases)
        env = self.env(RACE_LATENCY_SECONDS=latency, **({} if warm else {"AGENT_EVAL_WARM": "0"}))
        ours, theirs, backlog = [], [], []
        for _ in range(repeat):
            settle(self.server)
            ours.append(self.ae(evalset, env, *ae_extra))
            self.check_ae(ours[-1], cases, label)
            backlog.append(settle(self.server))
            self.log(label, "agent-eval", ours[-1], f"(server busy {backlog[-1]:.1f} s after)")
            theirs.append(self.adk_eval(evalset, config, env))
            self.check_adk(theirs[-1], cases, label)
            self.log(label, "adk eval", theirs[-1])
        return ours, theirs, backlog

    def warm_up(self, needs_runs: bool) -> None:
        """One untimed run of each tool (fills the bytecode cache, the store, the OS file cache)."""
        run_measured([str(self.agent_eval), "--help"], self.env(), self.folder)
        run_measured([str(self.adk), "eval", "--help"], self.env(), self.folder)
        if not needs_runs:
            return
        evalset, config = self.eval_set(1)
        if self.server is not None:
            self.check_ae(self.ae(evalset, self.env()), 1, "warm-up")
        else:
            home = self.folder / "warm-home"
            self.check_ae(self.ae(evalset, self.env(home, CI="1"), db=home / "store.db"), 1, "warm-up")
        self.check_adk(self.adk_eval(evalset, config, self.env()), 1, "warm-up")
