"""The seven scenarios of `bench_vs_adk.py`, each returning its rows of the result table (see its docstring)."""

from __future__ import annotations

import json
import math
import shutil
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

from adk_race.bench import Bench, Row, median, spread, verdict
from adk_race.evalsets import judged_criteria
from adk_race.processes import Measured, kill_group, run_measured, server_peak_mib, settle
from adk_race.race_agent.agent import MODEL_CALLS_PER_CASE

__all__ = ["SCENARIOS"]

ADK_CONCURRENCY = 4
"""Cases `adk eval` runs at once (its own, fixed)."""


def _walls(runs: list[Measured]) -> list[float]:
    return [run.wall for run in runs]


def _speed_row(label: str, ours: list[Measured], theirs: list[Measured], goal: float | None) -> Row:
    """agent-eval vs adk eval wall medians; `goal` = the most agent-eval may take, as a fraction of ADK's."""
    speed_up = median(theirs) / median(ours)
    row = Row(label, spread(_walls(ours)), spread(_walls(theirs)), f"adk/ours {speed_up:.2f}")
    cpu_ours, cpu_theirs = (statistics.median(run.cpu for run in runs) for runs in (ours, theirs))
    row.notes.append(f"CPU (user + system) median: agent-eval {cpu_ours:.2f} s, adk eval {cpu_theirs:.2f} s")
    if goal is not None:
        row.goal, row.verdict = f"ours <= {goal:g} x adk", verdict(median(ours) <= goal * median(theirs))
    return row


def scenario_1(bench: Bench) -> list[Row]:
    """1 case, no latency, server up: with the warm process `agent-eval server start` starts beside it (the
    goal's row), and without it (`AGENT_EVAL_WARM=0`, every run imports everything itself)."""
    ours, theirs, backlog = bench.race("1", 1, bench.repeat)
    row = _speed_row("1: 1 case, server up", ours, theirs, 0.5)
    row.notes.append(f"server busy after ours: {spread(backlog)} (in no wall time)")
    warm_runs = sum(run.warm for run in ours)
    row.notes.append(f"{warm_runs} of {len(ours)} agent-eval runs went through the warm process")
    cold, cold_theirs, _ = bench.race("1-cold", 1, bench.repeat, warm=False)
    return [row, _speed_row("1: 1 case, server up, AGENT_EVAL_WARM=0", cold, cold_theirs, None)]


def _stop_left_server(bench: Bench, env: dict[str, str], home: Path) -> bool:
    """Stop a background server a first run left behind (`agent-eval server stop`, then its group); whether one was."""
    state = home / "prefect-server.json"
    if not state.is_file():
        return False
    pgid = int(json.loads(state.read_text(encoding="utf-8"))["pgid"])
    run_measured([str(bench.agent_eval), "server", "stop"], env, bench.folder, timeout=60)
    kill_group(pgid)
    return True


def scenario_2(bench: Bench) -> list[Row]:
    """1 case, first run on the machine: fresh homes, no server, `CI` unset and `CI=1`."""
    evalset, config = bench.eval_set(1)
    variants = {"CI unset": {}, "CI=1": {"CI": "1"}}
    ours: dict[str, list[Measured]] = {name: [] for name in variants}
    theirs: list[Measured] = []
    left_behind = 0
    for rep in range(bench.repeat):
        for name, extra in variants.items():
            home = bench.folder / "first" / f"{name.replace(' ', '_').replace('=', '')}_{rep}"
            env = bench.env(home, **extra)
            settle(bench.server)
            run = bench.ae(evalset, env, db=home / "store.db")
            bench.check_ae(run, 1, f"2 ({name})")
            left = _stop_left_server(bench, env, home)
            left_behind += left
            bench.log(f"2 {name}", "agent-eval", run, "(left a server running: stopped)" if left else "")
            ours[name].append(run)
        settle(bench.server)
        theirs.append(bench.adk_eval(evalset, config, bench.env()))
        bench.check_adk(theirs[-1], 1, "2")
        bench.log("2", "adk eval", theirs[-1])
    rows = [_speed_row(f"2: 1 case, first run, {name}", runs, theirs, 1.2) for name, runs in ours.items()]
    rows[0].notes += [
        f"{left_behind} of {bench.repeat} runs with CI unset left a background server (stopped by the script)",
        "CPU and peak RSS with CI unset leave out that server (detached); with CI=1 they include Prefect's "
        "temporary server (a child)",
    ]
    return rows


def scenario_3(bench: Bench) -> list[Row]:
    """33 cases, no latency, server up."""
    ours, theirs, backlog = bench.race("3", 33, bench.repeat)
    row = _speed_row("3: 33 cases, server up", ours, theirs, None)
    row.notes.append(f"server busy after ours: {spread(backlog)}")
    return [row]


def scenario_4(bench: Bench) -> list[Row]:
    """200 cases, 0.5 s per model call, agent-eval at 16 at once."""
    cases, latency, concurrency = 200, 0.5, 16
    ours, theirs, backlog = bench.race("4", cases, bench.long_repeat, "--max-concurrency", "16", latency="0.5")
    ideal = math.ceil(cases / concurrency) * MODEL_CALLS_PER_CASE * latency
    adk_ideal = math.ceil(cases / ADK_CONCURRENCY) * MODEL_CALLS_PER_CASE * latency
    speed = _speed_row("4: 200 cases, 0.5 s/call", ours, theirs, 1 / 3.5)
    speed.goal = ">= 3.5x faster"
    speed.notes += [
        f"agent-eval wall / ideal ({ideal:g} s = ceil(200/16) x 2 x 0.5): {median(ours) / ideal:.2f}",
        f"adk eval wall / its ideal ({adk_ideal:g} s at 4 at once): {median(theirs) / adk_ideal:.2f}",
        f"server busy after ours: {spread(backlog)}; server peak RSS so far {server_peak_mib(bench.server):.0f} MiB "
        "(a separate process, not in ours)",
    ]
    ours_rss, theirs_rss = [r.peak_mib for r in ours], [r.peak_mib for r in theirs]
    rss = Row("4: peak RSS", spread(ours_rss, "MiB"), spread(theirs_rss, "MiB"), "-", "ours <= adk")
    rss.ratio = f"adk/ours {statistics.median(theirs_rss) / statistics.median(ours_rss):.2f}"
    rss.verdict = verdict(statistics.median(ours_rss) <= statistics.median(theirs_rss))
    return [speed, rss]


def _floor(bench: Bench, kind: str, cases: int) -> Measured:
    assert bench.server is not None
    command = [sys.executable, str(bench.root / "benchmarks" / "adk_race" / "floors.py"), kind, str(cases)]
    env = bench.env(PREFECT_API_URL=bench.server.api_url, PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL="CRITICAL")
    run = run_measured(command, env, bench.folder)
    if run.returncode != 0:
        bench.problems.append(f"5: {kind} floor N={cases} exit {run.returncode}: {run.output.strip()[-300:]}")
    return run


def scenario_5(bench: Bench) -> list[Row]:
    """Per-case cost at 1,000 cases: agent-eval vs a bare Prefect flow (and the agent alone)."""
    big = 1000
    walls: dict[tuple[str, int], list[float]] = {}
    for kind in ("prefect", "agent"):  # untimed warm-ups
        settle(bench.server)
        _floor(bench, kind, 1)
    for _ in range(bench.repeat_1000):
        for cases in (1, big):
            settle(bench.server)
            run = bench.ae(bench.eval_set(cases)[0], bench.env())
            bench.check_ae(run, cases, "5")
            bench.log(f"5 N={cases}", "agent-eval", run)
            walls.setdefault(("agent-eval", cases), []).append(run.wall)
            for kind in ("prefect", "agent"):
                settle(bench.server)
                run = _floor(bench, kind, cases)
                bench.log(f"5 N={cases}", f"{kind} floor", run)
                walls.setdefault((kind, cases), []).append(run.wall)

    def per_case(kind: str) -> float:
        return (statistics.median(walls[kind, big]) - statistics.median(walls[kind, 1])) / (big - 1)

    ours, floor, agent = per_case("agent-eval"), per_case("prefect"), per_case("agent")
    row = Row(
        "5: per-case cost, 1000 cases",
        f"{1000 * ours:.1f} ms",
        f"{1000 * floor:.1f} ms (Prefect floor)",
        f"ours/floor {ours / floor:.2f}",
        "ours <= 1.3 x floor",
        verdict(ours <= 1.3 * floor),
    )
    row.notes += [
        f"{name} wall N=1: {spread(walls[name, 1])}, N=1000: {spread(walls[name, big])}"
        for name in ("agent-eval", "prefect", "agent")
    ]
    row.notes.append(f"the race agent alone (ADK InMemoryRunner, 8 at once): {1000 * agent:.1f} ms/case")
    return [row]


def scenario_6(bench: Bench) -> list[Row]:
    """`agent-eval --help` and a bad input, with ADK's equivalents beside them."""
    env, repeat = bench.env(), max(bench.repeat, 5)
    ae, adk = str(bench.agent_eval), str(bench.adk)
    missing = str(bench.folder / "nonexistent.json")
    helps = [run_measured([ae, "--help"], env, bench.folder) for _ in range(repeat)]
    adk_helps = [run_measured([adk, "eval", "--help"], env, bench.folder) for _ in range(repeat)]
    bad = [run_measured([ae, "run", "nonexistent.json"], env, bench.folder) for _ in range(repeat)]
    # ADK imports its whole evaluation stack before it looks at the file (10-20 s here): one run of it.
    adk_command = [adk, "eval", str(bench.agents_dir), missing]
    adk_bad = [run_measured(adk_command, env, bench.folder)]
    help_row = Row(
        "6: agent-eval --help",
        spread(_walls(helps)),
        spread(_walls(adk_helps)) + " (adk eval --help)",
        f"adk/ours {median(adk_helps) / median(helps):.2f}",
        "<= 0.5 s",
        verdict(median(helps) <= 0.5),
    )
    codes = sorted({run.returncode for run in bad})
    bad_row = Row(
        "6: run nonexistent.json",
        spread(_walls(bad)),
        spread(_walls(adk_bad)) + " (missing eval set)",
        f"adk/ours {median(adk_bad) / median(bad):.2f}",
        "exit 2, <= 1 s",
        verdict(codes == [2] and median(bad) <= 1),
    )
    first_line = bad[0].output.strip().splitlines()[:1]
    bad_row.notes.append(f"agent-eval exit codes {codes}: {first_line}; adk eval exit {adk_bad[0].returncode}")
    return [help_row, bad_row]


def scenario_7(bench: Bench) -> list[Row]:
    """33 cases judged by `final_response_match_v2` (5 samples), a fake judge answering in 1.5 s, cap 8 (set here:
    the default ceiling is 64; at 8 the adaptive limit starts at its ceiling, a fixed cap the ideal is computed for).
    """
    from adk_race.fake_judge import FAKE_API_KEY, start_fake_judge

    cases, samples, delay, cap = 33, 5, 1.5, 8
    ideal = cases * samples * delay / cap
    evalset, _ = bench.eval_set(cases, "judged", judged_criteria(samples))
    server, judge = start_fake_judge(delay)
    env = bench.env(
        GOOGLE_API_KEY=FAKE_API_KEY, AGENT_EVAL_GEMINI_BASE_URL=server.base_url, AGENT_EVAL_JUDGE_CONCURRENCY=str(cap)
    )
    runs, spans, counts = [], [], []
    try:
        for _ in range(bench.long_repeat):
            shutil.rmtree(bench.home / "cache" / "judge", ignore_errors=True)  # judge answers are cached
            judge.reset()
            settle(bench.server)
            runs.append(bench.ae(evalset, env))
            bench.check_ae(runs[-1], cases, "7")
            spans.append(judge.span)
            counts.append(judge.requests)
            bench.log("7", "agent-eval", runs[-1], f"scoring {spans[-1]:.1f} s, {counts[-1]} judge requests")
    finally:
        server.stop()
    if any(count != cases * samples for count in counts):
        bench.problems.append(f"7: judge requests per run {counts}, expected {cases * samples}")
    row = Row(
        "7: judged 33 x 5 samples",
        spread(spans) + " scoring",
        f"ideal {ideal:.1f} s",
        f"ours/ideal {statistics.median(spans) / ideal:.2f}",
        f"<= {1.3 * ideal:.1f} s",
        verdict(statistics.median(spans) <= 1.3 * ideal),
    )
    row.notes.append(f"whole run wall {spread(_walls(runs))}; judge requests per run {counts}")
    return [row]


SCENARIOS: dict[int, Callable[[Bench], list[Row]]] = {
    1: scenario_1,
    2: scenario_2,
    3: scenario_3,
    4: scenario_4,
    5: scenario_5,
    6: scenario_6,
    7: scenario_7,
}
