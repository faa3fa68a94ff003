"""Throughput of a sharded run on two workers against the same run in one process, on this machine.

    python benchmarks/bench_shards.py                       # 2,000 cases, 0.2 s agent, concurrency 64 (~5 min)
    python benchmarks/bench_shards.py --cases 500 --latency 0.2 --concurrency 32

It starts the stack of `tests/deployments/test_sharded_e2e.py`: a Prefect server and the store on fresh
PostgreSQL databases (the local server, trust auth), the process work pool, every deployment of
`deployments/prefect.yaml`, and two process workers with their own HOME and PREFECT_HOME. Then it times whole
`agent-eval run` commands on N generated single-turn cases whose agent sleeps `latency` seconds:

| row | what runs |
|---|---|
| `1 process` | the run without shards: the parent invokes every case (the baseline) |
| `2 workers` | `--shards 2`: one shard on each worker, the parent waits, then scores and stores |
| `2 dask` | `--dask ADDRESS`: one flow run, its invocations on two Dask worker processes started here |

and prints the wall times, the throughput (case runs per second) and their ratio, plus the per-case cost
measured, from which the note at the end projects 100,000 cases. Exit status 1 when a run fails or stores
fewer than N cases.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from agent_eval.runtime.server import RECORDER_BATCH_DEFAULTS  # noqa: E402
from tests.deployments.prefect_stack import POOL, PREFECT, PrefectStack  # noqa: E402
from tests.store.conftest import fresh_postgres_database  # noqa: E402

AGENT = "benchmarks.shard_agent:sleeping_agent"


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, run both rows, print the table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--dask-threads", type=int, default=32, help="threads per Dask worker (default 32)")
    args = parser.parse_args(argv)
    with (
        tempfile.TemporaryDirectory() as folder,
        fresh_postgres_database() as prefect_db,
        fresh_postgres_database() as store_url,
    ):
        home = Path(folder)
        eval_set = _write_cases(home, args.cases)
        stack = _stack(home, prefect_db, store_url, args.latency)
        try:
            dask = _dask_cluster(stack, args.dask_threads)
            rows = [
                ("1 process", _timed_run(stack, eval_set, args, shards=1)),
                ("2 workers", _timed_run(stack, eval_set, args, shards=2)),
                ("2 dask", _timed_run(stack, eval_set, args, shards=1, dask=dask)),
            ]
        finally:
            stack.stop()
    return _print(rows, args)


def _stack(home: Path, prefect_db: str, store_url: str, latency: float) -> PrefectStack:
    env = {
        "PREFECT_SERVER_DATABASE_CONNECTION_URL": prefect_db.replace("+psycopg", "+asyncpg"),
        "AGENT_EVAL_DB_URL": store_url,
        "PREFECT_WORKER_QUERY_SECONDS": "2",
        "BENCH_AGENT_LATENCY": str(latency),
        **RECORDER_BATCH_DEFAULTS,  # as deployments/README.md recommends for a server of your own
    }
    stack = PrefectStack.start(home, env)
    for command in (("work-pool", "create", POOL, "--type", "process"),
                    ("deploy", "--all", "--prefect-file", "deployments/prefect.yaml", "--no-prompt")):  # fmt: skip
        done = stack.run(*command)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed: {done.stderr[-2000:]}")
    for worker in ("worker-1", "worker-2"):
        worker_home = home / worker
        (worker_home / "prefect").mkdir(parents=True)
        own = {"HOME": str(worker_home), "PREFECT_HOME": str(worker_home / "prefect")}
        stack.spawn(
            [PREFECT, "worker", "start", "--pool", POOL, "--limit", "1", "--name", worker], f"{worker}.log", own
        )
    return stack


def _dask_cluster(stack: PrefectStack, threads: int) -> str:
    """A Dask scheduler and two worker processes (each its own HOME); returns the scheduler's address."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    scheduler = [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", str(port)]
    stack.spawn([*scheduler, "--no-dashboard"], "dask-scheduler.log", {})
    for name in ("dask-1", "dask-2"):
        worker_home = stack.home / name
        worker_home.mkdir()
        worker = [sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", str(threads)]
        worker += ["--no-dashboard", "--no-nanny"]
        stack.spawn(worker, f"{name}.log", {"HOME": str(worker_home), "PYTHONPATH": str(REPO_ROOT)})
    _wait_for_dask_workers(address, 2)
    return address


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_for_dask_workers(address: str, count: int) -> None:
    from distributed import Client

    with Client(address, timeout=60) as client:
        client.wait_for_workers(count, timeout=60)


def _write_cases(folder: Path, count: int) -> Path:
    """`count` single-turn cases the sleeping agent answers exactly, with the demo's two criteria."""
    cases = [
        {
            "eval_id": f"case_{i:05d}",
            "conversation": [
                {
                    "invocation_id": f"inv-{i}",
                    "user_content": {"role": "user", "parts": [{"text": f"question {i}"}]},
                    "final_response": {"role": "model", "parts": [{"text": f"answer: question {i}"}]},
                    "intermediate_data": {"tool_uses": [], "tool_responses": []},
                }
            ],
        }
        for i in range(count)
    ]
    path = folder / "bench.evalset.json"
    path.write_text(json.dumps({"eval_set_id": "bench_shards", "eval_cases": cases}), encoding="utf-8")
    config = {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}}
    (folder / "test_config.json").write_text(json.dumps(config), encoding="utf-8")
    return path


def _timed_run(
    stack: PrefectStack, eval_set: Path, args: argparse.Namespace, *, shards: int, dask: str | None = None
) -> float:
    command = [sys.executable, "-m", "agent_eval.cli", "run", str(eval_set), "--agent", AGENT, "-q"]
    command += ["--max-concurrency", str(args.concurrency), "--shards", str(shards)]
    command += ["--dask", dask] if dask else []
    env = {**stack.env, "HOME": str(stack.home / "parent"), "AGENT_EVAL_HOME": str(stack.home / "parent-ae")}
    started = time.monotonic()
    done = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=False)
    elapsed = time.monotonic() - started
    if done.returncode != 0 or f"Total: {args.cases}  Passed: {args.cases}" not in done.stdout:
        raise SystemExit(
            f"the {shards}-shard run failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
        )
    return elapsed


def _print(rows: list[tuple[str, float]], args: argparse.Namespace) -> int:
    ideal = args.cases / args.concurrency * args.latency
    print(f"{args.cases} cases, agent {args.latency} s, max_concurrency {args.concurrency} (ideal {ideal:.1f} s)")
    print(f"{'row':<10} {'wall s':>8} {'cases/s':>8} {'ms/case':>8}")
    for name, seconds in rows:
        print(f"{name:<10} {seconds:>8.1f} {args.cases / seconds:>8.1f} {1000 * seconds / args.cases:>8.1f}")
    (_, one), (_, two), (_, dask) = rows
    print(f"throughput 2 workers / 1 process: {one / two:.2f}x; 2 dask workers / 1 process: {one / dask:.2f}x")
    per_case = two / args.cases
    print(
        f"projection: 100,000 cases at {1000 * per_case:.1f} ms per case on 2 workers of this size take "
        f"{100_000 * per_case / 60:.0f} min; each added worker divides the invocation part, not the parent's "
        "scoring and storing nor the server's ingestion of task-run events (see benchmarks/README.md)."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
