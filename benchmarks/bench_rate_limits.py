"""Benchmark of the judge's adaptive concurrency against a provider that enforces its limits (issue 32).

A judged run: `--cases` case runs (default 200) scored by `safety_v1` with `--samples` samples each (default 3),
through `score_criterion`, the real judge client and google-genai, against the fake Gemini server of
`tests/fakes/` behind a `LimitedProvider` (`tests/fakes/limited_gemini.py`) that answers in `--latency` seconds
(default 1.5; each answer's time drawn, seeded, within +-`--spread` = 25% of it, as answers' lengths vary)
and, past its limit, answers Gemini's 429 `RESOURCE_EXHAUSTED` with a `RetryInfo.retryDelay`
(the time until its window has room again; for a concurrency limit, the latency). Three providers:

| scenario | provider | ideal (limit-bound) |
|---|---|---|
| rate | `--rate` requests per second (default 20) | calls / rate = 600 / 20 = 30 s |
| concurrency | `--max-concurrent` requests in flight (default 8) | calls x latency / 8 = 112.5 s |
| slow | no limit, no 429 | ceil(calls / ceiling) x latency = 15 s at a ceiling of 64 |

The judged run scores each case run's samples at once (`parallelism_limit` = samples), so that a case run's
samples do not queue behind each other at the end. Each scenario runs, in the same run of the script: the
adaptive limit (`AGENT_EVAL_JUDGE_CONCURRENCY=--ceiling`, default 64, as the user's cap; the limit starts at its
default, 16), the same for the next run, which starts where the first settled (as the flow does from the store,
issue 32 item 4), and the client as it was before (`_Today`) at a fixed concurrency
(`--fixed`, default 4 and 64; the slow scenario also 8, the default cap): a fixed `AdaptiveLimit` (floor =
start = ceiling, no pacing), and a 429 spends one of ADK's 7 attempts, waited 5 s doubling up to 120 s whatever the
provider asked (the signal is stripped before the client sees it), as before issue 32. Every variant has
a fresh judge cache (none) and its own server. Printed per variant: wall time of the scoring, its ratio to
the ideal, the requests the provider received and refused, the most it held at once, the samples lost (an
error after the retries), and the adaptive limit's settled and largest values.

`--scale S` multiplies every time (latency, rate window, backoff delays; the rate becomes rate / S), so the
ratios stay those of the full-size run; default 1 (the issue's numbers; about 25 minutes on 2 cores with the
fixed variants, whose 429 storms wait out ADK's backoff).

Usage (from the repository root):
    .venv/bin/python benchmarks/bench_rate_limits.py [--scale 1] [--only rate,concurrency,slow] [--fixed 4,64]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from agent_eval.metrics.judged.backends import GeminiBackend, TransientJudgeError  # noqa: E402
from agent_eval.metrics.judged.base import JudgeRequest  # noqa: E402
from agent_eval.metrics.judged.client import ClientJudge, close_judge_clients  # noqa: E402
from agent_eval.metrics.judged.policy import (  # noqa: E402
    RetryPolicy,
    judge_totals,
    start_judge_limiter_at,
    use_judge_limiter,
)
from agent_eval.metrics.judged.voting import set_judge_factory  # noqa: E402
from agent_eval.metrics.registry import REGISTRY  # noqa: E402
from agent_eval.metrics.scoring import score_criterion  # noqa: E402
from agent_eval.runtime.adaptive import AdaptiveLimit  # noqa: E402
from agent_eval.schema import AgentRun, EvalCase, EvalConfig  # noqa: E402
from tests.fakes.gemini_server import CREDENTIAL_VARIABLES, FakeGeminiServer  # noqa: E402
from tests.fakes.judges import SafetyServer  # noqa: E402
from tests.fakes.judges import numbered_case_runs as case_runs  # noqa: E402
from tests.fakes.limited_gemini import LimitedProvider  # noqa: E402


@dataclass(frozen=True)
class Variant:
    """How the judge is run: adaptive under `ceiling` (from `initial`, where an earlier run settled, when given),
    or today's client at a fixed `ceiling`."""

    name: str
    ceiling: int
    adaptive: bool
    initial: int | None = None


@dataclass(frozen=True)
class Outcome:
    """What one variant did."""

    seconds: float
    requests: int
    refused: int
    most_in_flight: int
    lost: int
    settled: int | None
    largest: int | None


class _Today:
    """A backend as the judge client saw it before issue 32: a 429 is an ordinary failure (no signal)."""

    def __init__(self, backend: GeminiBackend) -> None:
        self.backend, self.identity = backend, backend.identity

    async def generate(self, request: JudgeRequest) -> str:
        try:
            return await self.backend.generate(request)
        except TransientJudgeError as error:
            raise TransientJudgeError(error.reason, error.detail) from error


def run_variant(
    variant: Variant, provider: LimitedProvider, runs: list[tuple[EvalCase, AgentRun]], samples: int, scale: float
) -> Outcome:
    """Score `runs` once against a fresh server behind `provider`, as `variant` says."""
    options = {"num_samples": samples, "parallelism_limit": samples}
    config = EvalConfig.model_validate({"criteria": {"safety_v1": {"threshold": 0.5, "judge_model_options": options}}})
    [(eval_metric, spec)] = REGISTRY.resolve(config)
    adk = RetryPolicy()
    retry = RetryPolicy(initial_delay=adk.initial_delay * scale, max_delay=adk.max_delay * scale)
    make: Callable[[str], Any] = (
        (lambda _model: ClientJudge(GeminiBackend(), retry=retry, cache=False))
        if variant.adaptive
        else (lambda _model: ClientJudge(_Today(GeminiBackend()), retry=retry, cache=False))
    )
    os.environ["AGENT_EVAL_JUDGE_CONCURRENCY"] = str(variant.ceiling)
    previous = set_judge_factory(make)
    before = judge_totals().snapshot()

    async def score() -> float:
        if not variant.adaptive:
            fixed = AdaptiveLimit(variant.ceiling, initial=variant.ceiling, floor=variant.ceiling, pacing=False)
            use_judge_limiter(fixed)
        start_judge_limiter_at(variant.initial)  # what the flow does with the last run's settled value
        started = time.perf_counter()
        try:
            results = await score_criterion(spec, eval_metric, runs)
        finally:
            await close_judge_clients()
        assert len(results) == len(runs)
        return time.perf_counter() - started

    with FakeGeminiServer() as server:
        os.environ["AGENT_EVAL_GEMINI_BASE_URL"] = server.base_url
        server.respond_with(provider)
        try:
            seconds = asyncio.run(score())
        finally:
            provider.stop()
            set_judge_factory(previous)
    counted = judge_totals().since(before)
    return Outcome(
        seconds=seconds,
        requests=provider.requests,
        refused=provider.refused,
        most_in_flight=provider.most_in_flight,
        lost=counted["errors"],
        settled=counted["concurrency"] if variant.adaptive else None,
        largest=counted["concurrency_max"] if variant.adaptive else None,
    )


def scenarios(args: argparse.Namespace) -> dict[str, tuple[Callable[[], LimitedProvider], float, list[int]]]:
    """Per scenario: a provider factory, the ideal seconds, the fixed concurrencies to run beside."""
    scale, latency = args.scale, args.latency * args.scale
    calls = args.cases * args.samples
    answer = SafetyServer(lambda _case: 0.0)
    fixed = [int(n) for n in args.fixed.split(",") if n]
    return {
        "rate": (
            lambda: LimitedProvider(answer, latency=latency, rate=args.rate, window=scale, spread=args.spread),
            calls / args.rate * scale,
            fixed,
        ),
        "concurrency": (
            lambda: LimitedProvider(answer, latency=latency, max_concurrent=args.max_concurrent, spread=args.spread),
            calls * latency / args.max_concurrent,
            fixed,
        ),
        "slow": (
            lambda: LimitedProvider(answer, latency=latency, spread=args.spread),
            math.ceil(calls / args.ceiling) * latency,
            sorted({8, *fixed}),
        ),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--latency", type=float, default=1.5)
    parser.add_argument("--rate", type=int, default=20)
    parser.add_argument("--max-concurrent", type=int, default=8)
    parser.add_argument("--ceiling", type=int, default=64)
    parser.add_argument("--fixed", default="4,64")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--spread", type=float, default=0.25)
    parser.add_argument("--only", default="rate,concurrency,slow")
    args = parser.parse_args()

    home = tempfile.mkdtemp(prefix="bench-rate-limits-")
    for name in CREDENTIAL_VARIABLES:
        os.environ.pop(name, None)
    os.environ.update(GOOGLE_API_KEY="fake-gemini-key", AGENT_EVAL_HOME=home)
    runs = case_runs(args.cases)
    print(f"load average before: {os.getloadavg()[0]:.2f} (nproc {os.cpu_count()}); scale {args.scale:g}")
    print(f"{args.cases} cases x {args.samples} samples, latency {args.latency * args.scale:g} s")
    header = "| scenario | variant | wall s | ideal s | x ideal | requests | 429s | most held | lost | settled | max |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    failed = False
    for name, (provider, ideal, fixed) in scenarios(args).items():
        if name not in args.only.split(","):
            continue
        variants = [Variant(f"adaptive, ceiling {args.ceiling}", args.ceiling, adaptive=True)]
        variants += [Variant(f"fixed {n} (before)", n, adaptive=False) for n in fixed]
        for variant in variants:
            outcome = run_variant(variant, provider(), runs, args.samples, args.scale)
            if variant.adaptive and variant.initial is None and outcome.settled:
                next_run = f"adaptive, next run (starts at {outcome.settled})"
                variants.insert(1, Variant(next_run, args.ceiling, adaptive=True, initial=outcome.settled))
            settled = "" if outcome.settled is None else str(outcome.settled)
            largest = "" if outcome.largest is None else str(outcome.largest)
            print(
                f"| {name} | {variant.name} | {outcome.seconds:.1f} | {ideal:.1f} | {outcome.seconds / ideal:.2f} "
                f"| {outcome.requests} | {outcome.refused} | {outcome.most_in_flight} | {outcome.lost} "
                f"| {settled} | {largest} |",
                flush=True,
            )
            failed |= variant.adaptive and outcome.lost > 0
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
