"""Reading and scoring recorded traces: reader throughput, peak memory against input size, and the whole run
against a replayed eval set of the same turns, on this machine.

    python benchmarks/bench_traces.py                  # 100,000 spans (12,500 turns), ~3 min
    python benchmarks/bench_traces.py --turns 2000     # a quick look

It writes an OTLP JSON lines file as the Collector's file exporter does (ADK 2.x spans with content: per turn a
root, an agent span, three model calls and two tool calls, 8 spans; 4 turns per session; batches of 50 spans,
children before parents), then measures:

| row | what | goal |
|---|---|---|
| reader | spans per second read and grouped into complete traces (`read_spans`, `group_traces`) | >= 20,000 |
| to cases | spans per second through `load_recorded` (read, group, map to ADK-shaped turns, join into cases) | - |
| memory | peak RSS of a process that loads N/4 spans, and one that loads N, into cases (note 2) | flat, < 300 MB |
| run memory | peak RSS of the `agent-eval run` process itself on N/4 spans and on N (note 3) | flat, < 300 MB |
| run memory, with a baseline | the same on N spans, into the store of an earlier run of N spans (note 4) | < 300 MB |
| run | `agent-eval run spans.jsonl` / `agent-eval run replay.evalset.json` (note 1) | <= 1.3x |

1. The same turns as an eval set of recorded cases, two deterministic criteria; best of `--repeat`.
2. `load_recorded`, then its cases `RECORDED_PART_TURNS` turns at a time, as a run reads them.
3. Its own `VmHWM`, not that of Prefect's temporary server (a child process).
4. What a scheduled `agent-eval/traces` run does each time: it is compared with the run before it.

Prints each figure with its goal; exit status 1 when a run fails.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

SPANS_PER_TURN = 8
TURNS_PER_SESSION = 4
BATCH = 50
SECOND = 1_000_000_000
CONFIG = {"criteria": {"tool_call_count_v1": {}, "token_usage_v1": {}}}


def main(argv: list[str] | None = None) -> int:
    """Write the input, run the three measurements, print the table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=12_500)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        spans = work / "spans.jsonl"
        write_spans(spans, args.turns)
        spans_count = args.turns * SPANS_PER_TURN
        print(f"input: {spans_count:,} spans, {args.turns:,} turns, {spans.stat().st_size / 1e6:.1f} MB")
        reader_rate, cases_rate = measure_reader(spans, spans_count)
        small, large = measure_memory(work, args.turns)
        ratio, run_peak = measure_runs(work, spans, args.repeat)
        quarter_run_peak = run_peak_of(work, work / "memory-4.jsonl")
        compared_run_peak = timed_run(work, spans, "recorded-0")[1]  # into the store of the first recorded run
    print()
    print(f"reader: {reader_rate:,.0f} spans/s (goal >= 20,000); to cases: {cases_rate:,.0f} spans/s")
    quarter = spans_count // 4
    print(f"memory: peak RSS {small:.0f} MB at {quarter:,} spans, {large:.0f} MB at {spans_count:,} (goal < 300 MB)")
    print(
        f"run memory: peak RSS {quarter_run_peak:.0f} MB at {quarter:,} spans, {run_peak:.0f} MB at {spans_count:,} "
        "(goal < 300 MB)"
    )
    print(f"run memory, with a baseline: peak RSS {compared_run_peak:.0f} MB at {spans_count:,} spans (goal < 300 MB)")
    print(f"run: recorded / replayed eval set = {ratio:.2f}x (goal <= 1.3x)")
    return 0


# ------------------------------------------------------------------------------------------------ the input
def write_spans(path: Path, turns: int, *, start_ns: int | None = None) -> None:
    """`turns` ADK 2.x turns with content, in batches of `BATCH` spans, children before parents."""
    start = start_ns if start_ns is not None else time.time_ns() - turns * SECOND
    batch: list[dict[str, Any]] = []
    with path.open("w", encoding="utf-8") as stream:
        for turn in range(turns):
            for span in turn_spans(turn, start + turn * SECOND):
                batch.append(span)
                if len(batch) == BATCH:
                    stream.write(request_line(batch) + "\n")
                    batch = []
        if batch:
            stream.write(request_line(batch) + "\n")


def request_line(spans: list[dict[str, Any]]) -> str:
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": "bench"}}]}
    return json.dumps({"resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": {}, "spans": spans}]}]})


def turn_spans(turn: int, start: int) -> list[dict[str, Any]]:
    """One turn's 8 spans in end order: model, tool, model, tool, model, agent, root (+ the merged tool span)."""
    trace = f"{turn + 1:032x}"
    session = f"session-{turn // TURNS_PER_SESSION}"
    question = [{"role": "user", "parts": [{"type": "text", "content": f"What is the weather in city {turn}?"}]}]
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": f"It is sunny in city {turn}."}]}]

    def span(number: int, parent: int | None, name: str, offset: int, **attributes: Any) -> dict[str, Any]:
        body: dict[str, Any] = {
            "traceId": trace,
            "spanId": f"{turn + 1:08x}{number:08x}",
            "name": name,
            "kind": 1,
            "startTimeUnixNano": str(start + offset * 1_000_000),
            "endTimeUnixNano": str(start + (offset + 1) * 1_000_000),
            "attributes": [{"key": k, "value": _value(v)} for k, v in attributes.items()],
            "status": {},
        }
        if parent is not None:
            body["parentSpanId"] = f"{turn + 1:08x}{parent:08x}"
        return body

    def model(number: int, offset: int, output: list[Any]) -> dict[str, Any]:
        return span(
            number, 2, "generate_content gemini", offset,
            **{"gen_ai.operation.name": "generate_content", "gen_ai.agent.name": "bench_agent",
               "gen_ai.conversation.id": session, "gen_ai.usage.input_tokens": 100 + number,
               "gen_ai.usage.output_tokens": 10, "gen_ai.input.messages": json.dumps(question),
               "gen_ai.output.messages": json.dumps(output)},
        )  # fmt: skip

    def tool(number: int, offset: int, city: int) -> dict[str, Any]:
        return span(
            number, 2, "execute_tool get_weather", offset,
            **{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
               "gen_ai.tool.call.id": f"adk-{turn}-{number}", "gen_ai.tool.call.arguments": json.dumps({"city": city}),
               "gen_ai.tool.call.result": json.dumps({"sky": "sunny"})},
        )  # fmt: skip

    call = [{"role": "assistant", "parts": [{"type": "tool_call", "name": "get_weather", "arguments": {"city": 1}}]}]
    return [
        model(3, 1, call),
        tool(4, 2, turn),
        model(5, 3, call),
        tool(6, 4, turn + 1),
        model(7, 5, answer),
        span(
            8,
            2,
            "execute_tool (merged)",
            6,
            **{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "(merged tools)"},
        ),
        span(
            2,
            1,
            "invoke_agent bench_agent",
            0,
            **{
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "bench_agent",
                "gen_ai.conversation.id": session,
            },
        ),
        span(1, None, "invoke_workflow bench_agent", 0, **{"gen_ai.conversation.id": session}),
    ]


def _value(value: Any) -> dict[str, Any]:
    return {"intValue": str(value)} if isinstance(value, int) else {"stringValue": str(value)}


# ---------------------------------------------------------------------------------------------- measurements
def measure_reader(spans: Path, count: int) -> tuple[float, float]:
    """Spans per second read and grouped into traces, and through `load_recorded`; best of 2, in this process."""
    from agent_eval.io.recorded import RecordedSource, load_recorded
    from agent_eval.io.recorded.otlp import read_spans
    from agent_eval.io.recorded.traces import group_traces

    best_read = best_load = float("inf")
    for _ in range(2):
        began = time.perf_counter()
        traces = sum(1 for _ in group_traces(read_spans([spans], _ignore), _ignore))
        best_read = min(best_read, time.perf_counter() - began)
        began = time.perf_counter()
        loaded = load_recorded(RecordedSource(paths=[str(spans)]))
        best_load = min(best_load, time.perf_counter() - began)
    assert traces == loaded.turns and loaded.turns * SPANS_PER_TURN == count, (traces, loaded.turns, count)
    return count / best_read, count / best_load


def _ignore(_: object) -> None:
    """Nothing is skipped in the generated input."""


# The child's own peak: VmHWM of /proc/self/status (ru_maxrss would carry the parent's peak over the fork).
_PEAK = """
import re, sys
from agent_eval.io.recorded import RecordedSource, load_recorded
from agent_eval.plan.eval_plan import RECORDED_PART_TURNS
loaded = load_recorded(RecordedSource(paths=[sys.argv[1]]))
cases = sum(len(part.eval_cases) for part in loaded.eval_sets(RECORDED_PART_TURNS))
status = open("/proc/self/status", encoding="ascii").read()
print(loaded.turns, re.search(r"VmHWM:\\s+(\\d+) kB", status).group(1))
"""

# `agent-eval run` in this process, printing its own peak at exit (Prefect's temporary server is a child).
_RUN_PEAK = """
import atexit, re, sys
def peak():
    status = open("/proc/self/status", encoding="ascii").read()
    print("VmHWM", re.search(r"VmHWM:\\s+(\\d+) kB", status).group(1), file=sys.stderr)
atexit.register(peak)
from agent_eval.cli import main
raise SystemExit(main(sys.argv[1:]))
"""


def measure_memory(work: Path, turns: int) -> tuple[float, float]:
    """Peak RSS (MB) of a fresh process loading a quarter of the spans, and one loading all of them."""
    peaks = []
    for share in (4, 1):
        path = work / f"memory-{share}.jsonl"
        write_spans(path, turns // share)
        done = subprocess.run([sys.executable, "-c", _PEAK, str(path)], capture_output=True, text=True, check=True)
        peaks.append(int(done.stdout.split()[1]) / 1024)
    return peaks[0], peaks[1]


def measure_runs(work: Path, spans: Path, repeat: int) -> tuple[float, float]:
    """Best wall time of `agent-eval run` on the spans over that on the same turns as a replayed eval set, and
    the highest peak RSS (MB) of the runs on the spans."""
    from agent_eval.io.recorded import RecordedSource, load_recorded

    replay = work / "replay.evalset.json"
    eval_set = load_recorded(RecordedSource(paths=[str(spans)], eval_set_id="spans")).eval_set
    replay.write_text(eval_set.model_dump_json(exclude_none=True), encoding="utf-8")
    del eval_set
    times: dict[str, float] = {}
    peak = 0.0
    for label, path in (("recorded", spans), ("replayed", replay)):
        for attempt in range(repeat):
            elapsed, run_peak = timed_run(work, path, f"{label}-{attempt}")
            times[label] = min(times.get(label, float("inf")), elapsed)
            peak = max(peak, run_peak) if label == "recorded" else peak
            print(f"  {label} run {attempt + 1}: {elapsed:.1f} s, peak RSS {run_peak:.0f} MB")
    return times["recorded"] / times["replayed"], peak


def run_peak_of(work: Path, spans: Path) -> float:
    """The peak RSS (MB) of one `agent-eval run` on `spans`."""
    return timed_run(work, spans, "quarter")[1]


def timed_run(work: Path, path: Path, name: str) -> tuple[float, float]:
    """One `agent-eval run` of `path` with `CONFIG` into a new store: its wall time and its own peak RSS (MB)."""
    config = work / "config.json"
    config.write_text(json.dumps(CONFIG), encoding="utf-8")
    env = {**os.environ, "AGENT_EVAL_PREFECT_SERVER": "ephemeral", "AGENT_EVAL_MAX_INPUT_MB": "1000"}
    env["AGENT_EVAL_WARM"] = "0"  # the run in this process, not in a warm process's child
    env["AGENT_EVAL_DB_URL"] = f"sqlite:///{work / f'{name}.db'}"
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _RUN_PEAK, "run", str(path), "--config", str(config), "-q"],
        capture_output=True, text=True, env=env, cwd=REPO_ROOT, check=False,
    )  # fmt: skip
    elapsed = time.perf_counter() - began
    if done.returncode not in (0, 1):
        raise SystemExit(f"{name} run failed ({done.returncode}): {done.stderr[-2000:]}")
    peak = next(line.split()[1] for line in reversed(done.stderr.splitlines()) if line.startswith("VmHWM "))
    return elapsed, int(peak) / 1024


if __name__ == "__main__":
    raise SystemExit(main())
