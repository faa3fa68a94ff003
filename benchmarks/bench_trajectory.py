"""Benchmark of `tool_trajectory_match` against ADK's `tool_trajectory_avg_score` on the same trajectories.

The data: `--cases` (default 20,000) seeded random reference trajectories of 1-20 calls over six tools, each
with an actual trajectory made from it by 0-3 perturbations (swap two neighbours, drop a call, add an extra
call, repeat a call as a retry, change one argument). FunctionCall and Invocation objects are built before
any timing.

What is measured, in cases per second (best of `--repeat` runs), for each order mode:
- engine: `Matcher.align` on plain `(name, args)` tuples, the optimal alignment (weighted LCS for `in_order`,
  maximum-weight bipartite matching for `any_order`) with precision, recall and F1;
- metric: the registered `tool_trajectory_match` on Invocation objects (call extraction, alignment,
  explanations, details, the EvaluationResult);
- baseline: ADK's verdict `trajectory_matches` on the same FunctionCall lists, and ADK's metric
  `tool_trajectory_avg_score` on the same Invocation objects, measured in the same run; the ratios are
  ours / baseline (above 1 = faster).
It also checks that the binary verdict (`satisfied`) equals ADK's on every case, as it must without argument
rules, and exits 1 if any differs.

Usage (from the repository root):
    python benchmarks/bench_trajectory.py [--cases 20000] [--seed 7] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from collections.abc import Callable
from typing import Any

from google.genai.types import Content, FunctionCall, Part

from agent_eval.metrics.trajectory.adk import MatchType, tool_trajectory_avg_score, trajectory_matches
from agent_eval.metrics.trajectory.matching import Matcher, parse_options
from agent_eval.metrics.trajectory.tool_match import as_calls, tool_trajectory_match
from agent_eval.schema import EvalConfig, EvalMetric, IntermediateData, Invocation

ROOMS = ["Bedroom", "Kitchen", "Living room", "Office", "Garage"]
TOOLS: dict[str, Callable[[random.Random], dict[str, Any]]] = {
    "get_weather": lambda r: {"city": r.choice(["Paris", "Oslo", "Lima", "Pune"])},
    "set_temperature": lambda r: {"location": r.choice(ROOMS), "temperature": r.randint(16, 26)},
    "get_device_info": lambda r: {"device_id": f"device_{r.randint(1, 9)}"},
    "set_light": lambda r: {"location": r.choice(ROOMS), "on": r.random() < 0.5},
    "search": lambda r: {"query": r.choice(["lamps", "heaters", "fans"]), "limit": r.choice([5, 10])},
    "transfer_to_agent": lambda r: {"agent_name": r.choice(["helper", "billing"])},
}
Case = tuple[list[FunctionCall], list[FunctionCall]]


def random_call(rng: random.Random) -> FunctionCall:
    name = rng.choice(list(TOOLS))
    return FunctionCall(name=name, args=TOOLS[name](rng))


def perturb(rng: random.Random, calls: list[FunctionCall]) -> list[FunctionCall]:
    """One random change: swap neighbours, drop, extra call, retry, or a changed argument."""
    calls = list(calls)
    i = rng.randrange(len(calls))
    kind = rng.choice(["swap", "drop", "extra", "retry", "args"])
    if kind == "swap" and len(calls) > 1:
        j = min(i + 1, len(calls) - 1) if i + 1 < len(calls) else i - 1
        calls[i], calls[j] = calls[j], calls[i]
    elif kind == "drop" and len(calls) > 1:
        calls.pop(i)
    elif kind == "extra":
        calls.insert(i, random_call(rng))
    elif kind == "retry":
        calls.insert(i, calls[i])
    elif kind == "args":
        name = calls[i].name or ""
        calls[i] = FunctionCall(name=name, args=TOOLS[name](rng))
    return calls


def make_cases(count: int, seed: int) -> list[Case]:
    """`(expected, actual)` FunctionCall lists."""
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        expected = [random_call(rng) for _ in range(rng.randint(1, 20))]
        actual = expected
        for _ in range(rng.randint(0, 3)):
            actual = perturb(rng, actual)
        cases.append((expected, actual))
    return cases


def invocation(calls: list[FunctionCall]) -> Invocation:
    content = Content(role="user", parts=[Part(text="hi")])
    return Invocation(user_content=content, intermediate_data=IntermediateData(tool_uses=calls))


def criterion(name: str, **options: Any) -> EvalMetric:
    config = EvalConfig.model_validate({"criteria": {name: {"threshold": 1.0, **options}}})
    return config.eval_metrics()[0]


def rate(run: Callable[[], object], count: int, repeat: int) -> float:
    """Cases per second, best of `repeat` runs."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return count / best


def bench_mode(cases: list[Case], order: str, repeat: int) -> tuple[list[float], int]:
    """Cases per second four ways (engine, ADK verdict, metric, ADK metric) and the agreement count."""
    match_type = MatchType[order.upper()]
    matcher = Matcher(parse_options({"order": order}, field="bench"))
    plain = [(as_calls(e), as_calls(a)) for e, a in cases]
    invocations = [([invocation(a)], [invocation(e)]) for e, a in cases]
    ours = criterion("tool_trajectory_match", order=order)
    adk = criterion("tool_trajectory_avg_score", match_type=order.upper())
    gc.collect()
    gc.freeze()  # the data lives through every run: keep the collector from rescanning it while timing
    runs: list[Callable[[], object]] = [
        lambda: [matcher.align(e, a) for e, a in plain],
        lambda: [trajectory_matches(a, e, match_type) for e, a in cases],
        lambda: [tool_trajectory_match(ours, a, e, None) for a, e in invocations],
        lambda: [tool_trajectory_avg_score(adk, a, e, None) for a, e in invocations],
    ]
    rates = [rate(run, len(cases), repeat) for run in runs]
    verdicts = [matcher.align(e, a).satisfied for e, a in plain]
    agree = sum(v == trajectory_matches(a, e, match_type) for v, (e, a) in zip(verdicts, cases, strict=True))
    return rates, agree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cases", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    cases = make_cases(args.cases, args.seed)
    calls = sum(len(e) + len(a) for e, a in cases)
    print(f"{len(cases):,} cases, {calls:,} calls (expected + actual), seed {args.seed}, best of {args.repeat}")
    print("cases/s   |  engine  ADK verdict  ratio |  metric  ADK metric  ratio | binary = ADK verdict")
    disagreements = 0
    for order in ("exact", "in_order", "any_order"):
        (engine, verdict, ours, theirs), agree = bench_mode(cases, order, args.repeat)
        disagreements += len(cases) - agree
        print(
            f"{order:<9} | {engine:>7,.0f} {verdict:>12,.0f} {engine / verdict:>6.2f} | {ours:>7,.0f} "
            f"{theirs:>11,.0f} {ours / theirs:>6.2f} | {agree:,}/{len(cases):,}"
        )
    sys.exit(1 if disagreements else 0)


if __name__ == "__main__":
    main()
