"""The three additions `docs/architecture.md` shows a newcomer (a metric, an output format, an agent adapter):
each is a diff of at most two files, and its code works as written (run here against the package)."""

from __future__ import annotations

import asyncio
import functools
import re
import sys
import types
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from google.genai.types import Content, Part

from agent_eval.agents import references, resolve
from agent_eval.agents.base import AgentSession, AgentTurn, Preflighted
from agent_eval.agents.conversation import TurnAgent
from agent_eval.metrics import response
from agent_eval.metrics.registry import MetricRegistry, metric
from agent_eval.render.formats import OutputFormat
from agent_eval.results.model import RunReport
from agent_eval.schema import EvalConfig, Invocation
from tests.render.builders import sample_report

DOC = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"


def diffs() -> list[dict[str, str]]:
    """Each ```diff block of the page, as {file: the lines it adds}."""
    blocks = re.findall(r"```diff\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    found: list[dict[str, str]] = []
    for block in blocks:
        added: dict[str, list[str]] = {}
        for line in block.splitlines():
            if line.startswith("+++ b/"):
                current = added.setdefault(line.removeprefix("+++ b/"), [])
            elif line.startswith("+"):
                current.append(line[1:])
        found.append({file: "\n".join(lines) for file, lines in added.items()})
    return found


def test_each_addition_touches_at_most_two_files() -> None:
    assert [sorted(diff) for diff in diffs()] == [
        ["agent_eval/metrics/response.py"],
        ["agent_eval/render/cases_csv.py", "agent_eval/render/formats.py"],
        ["agent_eval/agents/a2a_agent.py", "agent_eval/agents/references.py"],
    ]


def test_the_metric_diff_registers_a_metric_that_scores_as_written() -> None:
    registry = MetricRegistry()
    namespace = {**vars(response), "metric": functools.partial(metric, registry=registry)}
    exec(diffs()[0]["agent_eval/metrics/response.py"], namespace)
    config = EvalConfig.model_validate({"criteria": {"response_within_words": {"threshold": 1.0, "max_words": 3}}})
    [(eval_metric, spec)] = registry.resolve(config)
    answers = [_invocation("one two three"), _invocation("one two three four")]

    result = spec.function(eval_metric, answers, None, None)

    assert [(r.score, r.explanation) for r in result.per_invocation_results] == [  # type: ignore[union-attr]
        (1.0, "3 words (at most 3)"),
        (0.0, "4 words (at most 3)"),
    ]


def test_the_output_format_diff_writes_the_file_it_declares(tmp_path: Path) -> None:
    diff = diffs()[1]
    namespace: dict[str, Any] = {"RunReport": RunReport, "Path": Path, "pd": pd}
    exec(diff["agent_eval/render/cases_csv.py"], namespace)
    line = diff["agent_eval/render/formats.py"].splitlines()[-1].strip().rstrip(",")
    declared = eval(line, {"OutputFormat": OutputFormat})
    report = sample_report()

    written = namespace["write"](report, tmp_path)

    assert [path.name for path in written] == list(declared.files) == ["cases.csv"]
    assert declared.write == "agent_eval.render.cases_csv:write"
    table = pd.read_csv(written[0])
    assert list(table["eval_id"]) == [case.eval_id for case in report.cases]


def test_the_adapter_diff_is_an_agent_resolved_by_its_reference_form(monkeypatch: pytest.MonkeyPatch) -> None:
    diff = diffs()[2]
    module = types.ModuleType("agent_eval.agents.a2a_agent")
    module.__dict__.update(
        TurnAgent=TurnAgent, AgentSession=AgentSession, AgentTurn=AgentTurn, hashlib=__import__("hashlib")
    )
    exec(diff["agent_eval/agents/a2a_agent.py"], module.__dict__)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    form_text = diff["agent_eval/agents/references.py"].strip().rstrip(",")
    form = eval(form_text, {"ReferenceForm": references.ReferenceForm})
    monkeypatch.setattr(resolve, "REFERENCE_FORMS", (*references.REFERENCE_FORMS, form))

    agent = resolve.resolve_agent("a2a+http://127.0.0.1:9/agent")

    assert type(agent).__name__ == "A2aAgent" and isinstance(agent, Preflighted)
    assert agent.reference == "a2a+http://127.0.0.1:9/agent"
    assert len(agent.fingerprint) == 16
    asyncio.run(agent.preflight())  # the sketch's check runs (it checks nothing yet)


def _invocation(text: str) -> Invocation:
    return Invocation(
        user_content=Content(role="user", parts=[Part(text="q")]),
        final_response=Content(role="model", parts=[Part(text=text)]),
    )
