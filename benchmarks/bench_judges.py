"""Benchmark of `agent-eval judges` over a store with many labels: the whole path a user waits for.

The data: a SQLite store (in a temporary folder) with one run of `--labels` (default 10,000) judged items of
`final_response_match_v2`, each on its own case run, each with a person's label; the judge agrees with the person
85% of the time (seeded). What is measured, over `--repeat` runs (default 5): the median wall time of
`judge_agreements(engine)` (the join of items and labels, the judge identity per run, kappa with 2,000 bootstrap
resamples, self-consistency), and of the command `agent-eval judges` in a fresh process (import included),
against `agent-eval --help` in a fresh process as the baseline of what any command costs to start.

Usage (from the repository root):
    python benchmarks/bench_judges.py [--labels 10000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from sqlmodel import Session

from agent_eval.judges.agreement import judge_agreements
from agent_eval.store import get_engine
from agent_eval.store.models import CaseRecord, JudgedItemRecord, LabelRecord, Run

METRIC = "final_response_match_v2"
IDENTITY = {"model": "gemini-2.5-flash", "mode": "agent-eval", "prompts": "prompts bench", "samples": 3}


def fill(url: str, count: int, seed: int = 7) -> None:
    """One run with `count` judged, labelled items (module docstring)."""
    rng = np.random.default_rng(seed)
    human = rng.random(count) < 0.6
    judge = np.where(rng.random(count) < 0.85, human, ~human)
    now = datetime.now(UTC)
    engine = get_engine(url)
    with Session(engine) as session, session.begin():
        session.add(_run(now))
        session.flush()
        cases = [CaseRecord(run_id="bench", eval_set_id="set", eval_id=f"c{i}", status=1) for i in range(count)]
        session.add_all(cases)
        session.flush()
        for i, case in enumerate(cases):
            assert case.id is not None
            key = f"{i:064x}"
            verdict = bool(judge[i])
            session.add(
                JudgedItemRecord(
                    run_id="bench",
                    case_result_id=case.id,
                    metric_name=METRIC,
                    item_key=key,
                    judge_score=float(verdict),
                    judge_passed=verdict,
                    samples=[float(verdict)] * 3,
                )
            )
            session.add(
                LabelRecord(item_key=key, metric_name=METRIC, passed=bool(human[i]), labeller="bench", labelled_at=now)
            )


def _run(now: datetime) -> Run:
    return Run(
        id="bench",
        agent_reference="bench:agent",
        agent_fingerprint="bench",
        config_hash="bench",
        status="completed",
        started_at=now,
        eval_set_ids=["set"],
        judges={"set": {METRIC: IDENTITY}},
    )


def timed(action: object, repeat: int) -> float:
    """The median wall time of `repeat` calls of `action`."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{Path(folder) / 'store.db'}"
        start = time.perf_counter()
        fill(url, args.labels)
        print(f"store of {args.labels:,} labelled items written in {time.perf_counter() - start:.1f} s")
        engine = get_engine(url)
        found = judge_agreements(engine)
        kappa = found[0].binary.kappa
        print(f"kappa {kappa:.4f} interval {found[0].binary.kappa_interval} on {found[0].labels:,} labels")
        in_process = timed(lambda: judge_agreements(engine), args.repeat)
        cli = [str(Path(sys.executable).with_name("agent-eval"))]
        env = {"CI": "1", "PATH": str(Path(sys.executable).parent)}

        def command(*argv: str) -> None:
            subprocess.run([*cli, *argv], env=env, check=True, capture_output=True, timeout=300)

        whole = timed(lambda: command("judges", "--db-url", url), args.repeat)
        start_only = timed(lambda: command("--help"), args.repeat)
    print(f"judge_agreements (in process), median of {args.repeat}: {in_process:.3f} s")
    print(f"agent-eval judges (fresh process), median of {args.repeat}: {whole:.3f} s")
    print(f"agent-eval --help (fresh process, the baseline), median of {args.repeat}: {start_only:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
