"""Benchmark of an evaluation's adaptive case concurrency against an agent that is rate limited (issue 32, item 3).

An evaluation of `--cases` single-turn echo cases (default 200; `response_match_score` only, so scoring is
cheap) through the real flow, `agent_eval.evaluate(...)`, on a local Prefect server in a temporary home. The
agent is limited to `--limit` requests in flight (default 10): each admitted request is answered in `--latency`
seconds (default 1.5; each hold drawn, seeded, within +-`--spread` = 25% of it, as `LimitedProvider` does), and a
request past the limit is answered at once with Gemini's 429 `RESOURCE_EXHAUSTED` and a `RetryInfo.retryDelay`
of the latency (a concurrency-limited provider cannot know better). Three agents:

| scenario | agent | a refusal reaches the flow as |
|---|---|---|
| http | a generic JSON endpoint (`http://.../agent`, `HttpAgent`), `LimitedAgentServer` below | HTTP 429 |
| adk | an in-process ADK `LlmAgent` (`root_agent` below, gemini-2.5-flash), its model the fake | genai `ClientError` |
| genai | an in-process `GenaiAgent` (`genai_agent` below), its model the fake | genai `ClientError` |

The fake model is the fake Gemini server of `tests/fakes/` behind a `LimitedProvider`, reached through
google-genai (`GOOGLE_GEMINI_BASE_URL`, which ADK's `Gemini` model and `genai.Client()` both read).
The ideal of every variant is limit-bound: ceil(cases / limit) x latency = ceil(200 / 10) x 1.5 = 30 s.

Variants per scenario, measured in the same run of the script:
- `fixed-10`: `max_concurrency` = the limit, the perfect knob (no 429 expected): the baseline;
- `adaptive-64`: `max_concurrency=64` (the issue's case), a fresh store, so the limit starts at 16;
- `adaptive-64 2nd`: the same evaluation again on `adaptive-64`'s store, so the limit starts where that run
  settled (`agent_eval.store.settled`, issue 32 item 4).
Each variant (but the second run) has a fresh SQLite store and a fresh provider; before the timed variants of a
scenario an untimed warm-up evaluation (4 cases, no limit) starts the Prefect server and pays the lazy imports,
and before each timed one the server is let go idle (its CPU use, as `bench_flow.py` does).

Printed per variant: the wall seconds of the `evaluate` call (the whole flow: flow run, tasks, scoring, store), the
agent stage (the provider's last answer less its first request: what the limit governs), both as ratios to the
ideal, and the agent stage as a ratio to `fixed-10`'s (`stage/fixed`); the requests the provider received and
refused and the most it held at once; the cases passed of the total; and the run's `summary.invocations` (where
the limit settled, its largest value, rate-limited tries retried, case runs lost). The goal (issue 32): every
case completes, within 1.2 x the ideal at `--max-concurrency 64`. At `--scale` well below 1 the flow's own cost
per case run (tens of ms on 2 cores) bounds even `fixed-10`: only `stage/fixed` means much there.
`--timeline` also prints, per adaptive variant, the provider's requests in flight and refusals per second.

`--scale S` multiplies the latency (hence the retry delay), so a quick run keeps the ratios; default 1
(about 2 minutes per scenario on 2 cores, the server's start and warm-ups included).

Usage (from the repository root):
    .venv/bin/python benchmarks/bench_agent_rate_limits.py [--scale 1] [--only http,adk,genai] [--timeline]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from google.adk.agents import LlmAgent  # noqa: E402

from agent_eval.agents.genai_agent import GenaiAgent  # noqa: E402
from tests.agents.http_servers import serve  # noqa: E402
from tests.fakes.gemini_server import CREDENTIAL_VARIABLES, FAKE_API_KEY, FakeGeminiServer, FakeReply, text_reply  # noqa: E402
from tests.fakes.limited_gemini import LimitedProvider  # noqa: E402

if TYPE_CHECKING:
    from agent_eval.results.model import RunReport

INSTRUCTION = "Answer with 'answer: ' and the question."
MODULE = "benchmarks.bench_agent_rate_limits"
root_agent = LlmAgent(name="limited_echo", model="gemini-2.5-flash", instruction=INSTRUCTION)
"""The ADK agent of the `adk` scenario (reference `benchmarks.bench_agent_rate_limits:root_agent`)."""
genai_agent = GenaiAgent(model="gemini-2.5-flash", instruction=INSTRUCTION, name="limited_genai")
"""The GenaiAgent of the `genai` scenario."""

WARMUP_CASES = 4
CRITERIA = {"criteria": {"response_match_score": 0.8}}
SETTLE_WINDOW = 0.25  # seconds per CPU sample of the Prefect server
SETTLE_IDLE_CPU = 0.10  # idle below this fraction of one core ...
SETTLE_IDLE_WINDOWS = 2  # ... for this many windows in a row
SETTLE_MAX = 60.0
TIMELINE_STEP = 1.0  # seconds per timeline sample, times the scale


# ------------------------------------------------------------------------------------------------ providers
def echo_text(message: str) -> str:
    """What the agent answers to `message` (the cases' expected final response)."""
    return f"answer: {message}"


def gemini_echo(body: Any) -> Any:
    """The model's answer to a generateContent request: the echo of its last user text."""
    return text_reply(echo_text(body["contents"][-1]["parts"][0]["text"]))


def json_echo(body: Any) -> Any:
    """The generic JSON agent's answer to `{"prompt": ...}`."""
    return {"response": echo_text(body["prompt"])}


@dataclass
class Watched:
    """A `LimitedProvider` with the times of its first request and its last answer, and a timeline of samples
    (requests in flight, refused so far) taken every `step` seconds while `sample` runs."""

    provider: LimitedProvider
    first_request: float | None = None
    last_answer: float | None = None
    samples: list[tuple[int, int]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, body: Any) -> Any:
        with self._lock:
            if self.first_request is None:
                self.first_request = time.monotonic()
        reply = self.provider(body)
        if not isinstance(reply, FakeReply):
            with self._lock:
                self.last_answer = time.monotonic()
        return reply

    @property
    def stage(self) -> float:
        """Seconds from the first request to the last answer (0 before any answer)."""
        if self.first_request is None or self.last_answer is None:
            return 0.0
        return self.last_answer - self.first_request

    @contextlib.contextmanager
    def sample(self, step: float) -> Iterator[None]:
        stop = threading.Event()

        def run() -> None:
            while not stop.wait(step):
                self.samples.append((self.provider.in_flight, self.provider.refused))

        thread = threading.Thread(target=run, name="timeline", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()


class LimitedAgentServer:
    """A generic JSON agent endpoint (`{"prompt"}` in, `{"response"}` out) that holds at most `limit` requests at
    once, each `latency` seconds (+-`spread`, seeded), and answers one past the limit 429 with Gemini's error and a
    `RetryInfo` of `retry_delay` seconds: `LimitedProvider`'s rules, served over HTTP by `handle` (with
    `tests.agents.http_servers.serve`). `provider` is replaced between variants; the URL stays."""

    def __init__(self) -> None:
        self.provider: Callable[[Any], Any] | None = None

    def use(self, latency: float, limit: int | None, spread: float, retry_delay: float) -> Watched:
        watched = Watched(
            LimitedProvider(json_echo, latency=latency, max_concurrent=limit, spread=spread, retry_delay=retry_delay)
        )
        self.provider = watched
        return watched

    def handle(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        del path
        if method != "POST" or self.provider is None:
            return 200, {}
        reply = self.provider(body)
        if isinstance(reply, FakeReply):
            return reply.status, reply.body
        return 200, reply


# ----------------------------------------------------------------------------------------------- scenarios
@dataclass(frozen=True)
class Outcome:
    """What one variant did."""

    seconds: float
    stage: float
    requests: int
    refused: int
    most_in_flight: int
    passed: int
    total: int
    invocations: dict[str, int]
    timeline: list[tuple[int, int]]


class Scenario:
    """An agent behind a limited provider: `use` sets the provider for the next evaluation, `reference` names it."""

    name: str
    reference: str

    def use(self, latency: float, limit: int | None, spread: float, retry_delay: float) -> Watched:
        raise NotImplementedError

    def close(self) -> None:
        """Stop what the scenario serves."""


class HttpScenario(Scenario):
    name = "http"

    def __init__(self) -> None:
        self.server = LimitedAgentServer()
        self._serving = serve(self.server.handle)
        url, _requests = self._serving.__enter__()
        self.reference = f"{url}/agent"

    def use(self, latency: float, limit: int | None, spread: float, retry_delay: float) -> Watched:
        return self.server.use(latency, limit, spread, retry_delay)

    def close(self) -> None:
        self._serving.__exit__(None, None, None)


class GeminiScenario(Scenario):
    """An in-process agent whose model is the fake Gemini server (one for the whole script)."""

    def __init__(self, name: str, attribute: str, fake: FakeGeminiServer) -> None:
        self.name, self.reference, self.fake = name, f"{MODULE}:{attribute}", fake

    def use(self, latency: float, limit: int | None, spread: float, retry_delay: float) -> Watched:
        watched = Watched(
            LimitedProvider(gemini_echo, latency=latency, max_concurrent=limit, spread=spread, retry_delay=retry_delay)
        )
        self.fake.respond_with(watched)
        return watched


def write_echo_set(folder: Path, cases: int) -> Path:
    """An eval set of `cases` one-turn cases, each expecting the echo of its unique message."""
    token = uuid.uuid4().hex[:8]
    eval_cases = []
    for index in range(cases):
        message = f"case{index:03d} {token}"
        turn = {
            "user_content": {"role": "user", "parts": [{"text": message}]},
            "final_response": {"role": "model", "parts": [{"text": echo_text(message)}]},
        }
        eval_cases.append({"eval_id": f"case{index:03d}", "conversation": [turn]})
    path = folder / f"echo_{token}.evalset.json"
    path.write_text(json.dumps({"eval_set_id": f"echo_{token}", "eval_cases": eval_cases}), encoding="utf-8")
    return path


def evaluate_once(scenario: Scenario, eval_file: Path, store: str, max_concurrency: int) -> tuple[float, RunReport]:
    from agent_eval import evaluate

    started = time.perf_counter()
    report = evaluate(
        eval_file, agent=scenario.reference, config=CRITERIA, db_url=store, max_concurrency=max_concurrency
    )
    return time.perf_counter() - started, report


def measured(
    scenario: Scenario, args: argparse.Namespace, eval_file: Path, store: str, max_concurrency: int
) -> Outcome:
    """One timed evaluation against a fresh limited provider, from an idle Prefect server."""
    settle_server()
    latency = args.latency * args.scale
    watched = scenario.use(latency, args.limit, args.spread, latency)
    try:
        with watched.sample(TIMELINE_STEP * args.scale):
            seconds, report = evaluate_once(scenario, eval_file, store, max_concurrency)
    finally:
        watched.provider.stop()
    provider = watched.provider
    return Outcome(
        seconds=seconds,
        stage=watched.stage,
        requests=provider.requests,
        refused=provider.refused,
        most_in_flight=provider.most_in_flight,
        passed=report.summary.passed,
        total=report.summary.total,
        invocations=dict(report.summary.invocations),
        timeline=watched.samples,
    )


def run_scenario(scenario: Scenario, args: argparse.Namespace, folder: Path) -> dict[str, Outcome]:
    """The warm-up, then the variants (module docstring), each printed to stderr as it ends."""
    work = folder / scenario.name
    work.mkdir()
    scenario.use(0.0, None, 0.0, 0.0)
    started = time.perf_counter()
    evaluate_once(scenario, write_echo_set(work, WARMUP_CASES), f"sqlite:///{work / 'warmup.db'}", args.limit)
    print(f"[{scenario.name}] warm-up: {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
    eval_file = write_echo_set(work, args.cases)
    outcomes: dict[str, Outcome] = {}
    plan = [
        (f"fixed-{args.limit}", "fixed.db", args.limit),
        (f"adaptive-{args.ceiling}", "adaptive.db", args.ceiling),
        (f"adaptive-{args.ceiling} 2nd", "adaptive.db", args.ceiling),
    ]
    for label, store, max_concurrency in plan:
        outcome = measured(scenario, args, eval_file, f"sqlite:///{work / store}", max_concurrency)
        outcomes[label] = outcome
        print(
            f"[{scenario.name}] {label}: {outcome.seconds:.1f} s, agent stage {outcome.stage:.1f} s, "
            f"{outcome.passed}/{outcome.total} passed, {outcome.invocations}",
            file=sys.stderr,
            flush=True,
        )
    return outcomes


# -------------------------------------------------------------------------------------------- the server
def settle_server() -> float:
    """Wait until the local Prefect server is idle (it writes a run's task states for a while after the run
    returns, and a run started meanwhile waits on it); returns the seconds waited."""
    import psutil

    from agent_eval.runtime.processes import group_members
    from agent_eval.runtime.server import local_server_status

    server = local_server_status()
    if server is None:
        return 0.0

    def cpu() -> float:
        total = 0.0
        for pid in group_members(server.pgid):
            with contextlib.suppress(psutil.Error):
                times = psutil.Process(pid).cpu_times()
                total += times.user + times.system
        return total

    started, idle, previous = time.perf_counter(), 0, cpu()
    while idle < SETTLE_IDLE_WINDOWS and time.perf_counter() - started < SETTLE_MAX:
        time.sleep(SETTLE_WINDOW)
        current = cpu()
        idle = idle + 1 if (current - previous) / SETTLE_WINDOW < SETTLE_IDLE_CPU else 0
        previous = current
    return time.perf_counter() - started


def stop_server() -> None:
    """Send Prefect's queued logs and events, then stop the local server the runs started (in the temporary home)."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    from agent_eval.runtime.server import stop_local_server

    for worker in (APILogWorker, EventsWorker):
        with contextlib.suppress(Exception):
            worker.drain_all(timeout=10)
    stop_local_server()


def isolate(folder: Path, fake: FakeGeminiServer) -> None:
    """Prefect, agent-eval's home and process registry in `folder`, a local server that stops itself if left;
    the Gemini client pointed at `fake`. Must run before prefect is imported."""
    if "prefect" in sys.modules:
        raise RuntimeError("prefect was imported before its settings were isolated")
    for name in (*CREDENTIAL_VARIABLES, "PREFECT_API_URL", "PREFECT_PROFILE", "CI", "AGENT_EVAL_DB_URL"):
        os.environ.pop(name, None)
    os.environ.update(
        {
            "PREFECT_HOME": str(folder / "prefect"),
            "PREFECT_LOCAL_STORAGE_PATH": str(folder / "prefect" / "storage"),
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "CRITICAL",  # as the CLI: no line per rate-limited try
            "AGENT_EVAL_HOME": str(folder / "agent_eval"),
            "AGENT_EVAL_REGISTRY_DIR": str(folder / "registry"),
            "AGENT_EVAL_PREFECT_SERVER": "local",
            "AGENT_EVAL_SERVER_IDLE_MINUTES": "10",
            "AGENT_EVAL_WARM": "0",
            "GOOGLE_API_KEY": FAKE_API_KEY,
            "GOOGLE_GEMINI_BASE_URL": fake.base_url,
        }
    )


# ---------------------------------------------------------------------------------------------- printing
def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join(lines)


def report(results: dict[str, dict[str, Outcome]], ideal: float, args: argparse.Namespace) -> list[str]:
    """The printed table and notes; also the problems (a case not passed, a case run lost)."""
    rows, problems, notes = [], [], []
    for scenario, outcomes in results.items():
        baseline = outcomes.get(f"fixed-{args.limit}")
        for label, outcome in outcomes.items():
            stats = outcome.invocations
            rows.append(
                [
                    scenario,
                    label,
                    f"{outcome.seconds:.1f}",
                    f"{outcome.seconds / ideal:.2f}",
                    f"{outcome.stage:.1f}",
                    f"{outcome.stage / ideal:.2f}",
                    f"{outcome.stage / baseline.stage:.2f}" if baseline and baseline.stage else "-",
                    str(outcome.requests),
                    str(outcome.refused),
                    str(outcome.most_in_flight),
                    f"{outcome.passed}/{outcome.total}",
                    str(stats.get("lost", "-")),
                    str(stats.get("rate_limited", "-")),
                    f"{stats.get('concurrency', '-')}/{stats.get('concurrency_max', '-')}",
                ]
            )
            if outcome.passed != args.cases or stats.get("lost"):
                problems.append(f"{scenario} {label}: {outcome.passed}/{args.cases} passed, {stats}")
            if args.timeline and label != f"fixed-{args.limit}":
                in_flight = " ".join(str(held) for held, _ in outcome.timeline)
                refused = [b - a for (_, a), (_, b) in zip([(0, 0), *outcome.timeline], outcome.timeline, strict=False)]
                notes.append(f"{scenario} {label}, per {TIMELINE_STEP * args.scale:g} s: in flight  {in_flight}")
                notes.append(
                    f"{scenario} {label}, per {TIMELINE_STEP * args.scale:g} s: refused    "
                    + " ".join(map(str, refused))
                )
    headers = [
        "scenario",
        "variant",
        "wall s",
        "wall/ideal",
        "agent stage s",
        "stage/ideal",
        "stage/fixed",
        "requests",
        "refused",
        "most in flight",
        "passed",
        "lost",
        "rate-limited",
        "settled/max",
    ]
    print(table(headers, rows))
    for note in notes:
        print(note)
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--latency", type=float, default=1.5)
    parser.add_argument("--spread", type=float, default=0.25)
    parser.add_argument("--limit", type=int, default=10, help="requests the agent's provider holds at once")
    parser.add_argument("--ceiling", type=int, default=64, help="max_concurrency of the adaptive variants")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--only", default="http,adk,genai")
    parser.add_argument("--timeline", action="store_true")
    args = parser.parse_args()
    chosen = [name for name in args.only.split(",") if name]
    unknown = set(chosen) - {"http", "adk", "genai"}
    if unknown:
        parser.error(f"unknown scenarios: {sorted(unknown)}")
    ideal = math.ceil(args.cases / args.limit) * args.latency * args.scale
    folder = Path(tempfile.mkdtemp(prefix="bench-agent-rate-limits-"))
    fake = FakeGeminiServer().start()
    isolate(folder, fake)
    results: dict[str, dict[str, Outcome]] = {}
    try:
        makers: dict[str, Callable[[], Scenario]] = {
            "http": HttpScenario,
            "adk": lambda: GeminiScenario("adk", "root_agent", fake),
            "genai": lambda: GeminiScenario("genai", "genai_agent", fake),
        }
        for name in chosen:
            scenario = makers[name]()
            try:
                results[name] = run_scenario(scenario, args, folder)
            finally:
                scenario.close()
    finally:
        stop_server()
        fake.stop()
        shutil.rmtree(folder, ignore_errors=True)
    print(
        f"\n{args.cases} cases, latency {args.latency * args.scale:g} s +-{args.spread:.0%}, provider limit "
        f"{args.limit} in flight, 429 with retryDelay = latency; ideal = ceil({args.cases} / {args.limit}) x "
        f"{args.latency * args.scale:g} = {ideal:g} s (scale {args.scale:g})"
    )
    problems = report(results, ideal, args)
    for problem in problems:
        print(f"PROBLEM: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
