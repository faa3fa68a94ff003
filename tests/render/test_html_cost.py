"""What a run cost, where people look (issue 31, item 3): the HTML report's Cost section (per side and model:
calls, tokens, dollars; the price table; the costliest case runs linked to their blocks) and `history`'s COST
column and `cost_usd` / `tokens` fields, from a stored run."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent_eval.compare.history_table import format_history
from agent_eval.compare.run_history import history
from agent_eval.render.console import summary_table_rows
from agent_eval.render.html import render_html
from agent_eval.results.aggregate import build_report
from agent_eval.results.model import RunReport
from agent_eval.results.pricing import JUDGE_TOKENS
from agent_eval.schema import AgentRun, EvalCase, EvalConfig, EvalStatus, ModelUsage, TokenUsage
from agent_eval.store import RunCreate, complete_run, get_engine, start_run
from tests.render.builders import metric, turn

AGENT_MODEL, JUDGE_MODEL = "house-agent", "house-judge"
PRICES = {
    AGENT_MODEL: {"input_per_mtok": 1.0, "output_per_mtok": 2.0},
    JUDGE_MODEL: {"input_per_mtok": 0.5, "output_per_mtok": 1.0},
}
START = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)


def _run(eval_id: str, tokens_in: int, tokens_out: int) -> tuple[EvalCase, AgentRun]:
    invocation = turn(f"question {eval_id}", "answer", [])
    usage = ModelUsage(calls=1, input_tokens=tokens_in, output_tokens=tokens_out)
    run = AgentRun(
        eval_set_id="home",
        eval_id=eval_id,
        invocations=[invocation],
        token_usage=TokenUsage(input_tokens=tokens_in, output_tokens=tokens_out, by_model={AGENT_MODEL: usage}),
    )
    return EvalCase(eval_id=eval_id, conversation=[invocation]), run


def costed_report(run_id: str = "c0" * 16) -> RunReport:
    """Three case runs; the agent's tokens 1,000/500 (cheap), 100,000/50,000 (dear), 10,000/5,000; each judged
    once with 2,000 in / 100 out."""
    runs = [_run("cheap", 1_000, 500), _run("dear", 100_000, 50_000), _run("middle", 10_000, 5_000)]
    judged = {JUDGE_TOKENS: {JUDGE_MODEL: {"calls": 1, "input_tokens": 2_000, "output_tokens": 100}}}
    results = [
        metric("final_response_match_v2", run.eval_id, 1.0, EvalStatus.PASSED, details=judged) for _, run in runs
    ]
    config = EvalConfig.model_validate({"criteria": {"final_response_match_v2": 0.5}, "pricing": PRICES})
    return build_report(
        run_id=run_id,
        runs=runs,
        metric_results=results,
        config=config,
        eval_set_ids=["home"],
        agent_reference="pkg:agent",
        agent_fingerprint="f",
        num_runs=1,
        started_at=START,
        completed_at=START,
    )


def test_the_summary_prices_agent_and_judges_from_the_configs_pricing() -> None:
    cost = costed_report().summary.cost
    assert cost is not None
    # agent: 111,000 in x $1 + 55,500 out x $2 per million = 0.111 + 0.111; judges: 6,000 x 0.5 + 300 x 1.0
    assert cost.agent_usd == (111_000 * 1.0 + 55_500 * 2.0) / 1e6
    assert cost.judge_usd == (6_000 * 0.5 + 300 * 1.0) / 1e6
    assert cost.unpriced == []


def test_the_html_cost_section_lists_each_model_and_links_the_costliest_case_runs() -> None:
    page = render_html(costed_report())
    section = re.search(r'<section class="card cost">(.*?)</section>', page, re.S)
    assert section is not None
    text = section.group(1)
    assert "total $0.2253" in text  # 0.222 + 0.0033
    assert "<td>agent</td><td>house-agent</td><td>3</td><td>111,000</td><td>?</td><td>55,500</td><td>?</td>" in text
    assert "<td>judges</td><td>house-judge</td><td>3</td><td>6,000</td><td>?</td><td>300</td><td>?</td>" in text
    links = re.findall(r'<a href="#(case-[^"]+)">home / (\w+)</a> #0: (\$[0-9.]+)', text)
    # dear: 100,000 x 1 + 50,000 x 2 + judge 2,000 x 0.5 + 100 x 1 = 0.2011; middle 0.0211; cheap 0.0031
    assert [(name, usd) for _, name, usd in links] == [("dear", "$0.2011"), ("middle", "$0.0211"), ("cheap", "$0.0031")]
    for anchor, _, _ in links:
        assert f'id="{anchor}"' in page  # each link lands on its case run's block


def test_history_gives_each_runs_cost_and_tokens_and_a_cost_column(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    engine = get_engine(url)
    report = costed_report()
    start_run(
        RunCreate(
            id=report.run_id,
            agent_reference=report.agent_reference,
            agent_fingerprint=report.agent_fingerprint,
            config=report.config,
            config_hash=report.config_hash,
            eval_set_ids=report.eval_set_ids,
            started_at=report.started_at,
        ),
        engine=engine,
    )
    complete_run(report, engine)

    frame = history(db_url=url)
    [row] = frame.to_dict("records")
    assert row["tokens"] == 111_000 + 55_500 + 6_000 + 300
    assert row["cost_usd"] == (111_000 * 1.0 + 55_500 * 2.0 + 6_000 * 0.5 + 300 * 1.0) / 1e6
    table = format_history(frame).splitlines()
    assert "COST" in table[0] and "$0.2253" in table[1]


def test_the_cost_section_gives_the_judges_per_criterion_and_a_column_per_case_run_linked_to_it() -> None:
    page = render_html(costed_report())
    section = re.search(r'<section class="card cost">(.*?)</section>', page, re.S)
    assert section is not None
    text = section.group(1)
    # the one judged criterion: 3 calls, 6,000 in x 0.5 + 300 out x 1.0 per million = $0.0033
    assert "<td>final_response_match_v2</td><td>3</td><td>6,000</td><td>300</td><td>$0.0033</td>" in text
    columns = re.findall(
        r'<a href="#(case-[^"]+)"><g><title>home / (\w+) #0: agent \$([0-9.]+), judges \$([0-9.]+)', text
    )
    # report order; the agent's part: cheap 1,000 + 1,000 = 0.0020, dear 0.2000, middle 0.0200; each judge 0.0011
    assert [(name, agent, judges) for _, name, agent, judges in columns] == [
        ("cheap", "0.0020", "0.0011"),
        ("dear", "0.2000", "0.0011"),
        ("middle", "0.0200", "0.0011"),
    ]
    heights = [float(h) for h in re.findall(r'height="([0-9.]+)" fill="#2563eb"', text)]
    assert heights[1] == round(170 * 0.2 / 0.2011, 1)  # the dearest column (agent + judges) fills the 170 px plot
    for anchor, *_ in columns:
        assert f'id="{anchor}"' in page


def test_no_cost_chart_when_a_case_runs_cost_is_unknown() -> None:
    report = costed_report()
    unpriced = report.model_copy(update={"config": {**report.config, "pricing": {}}})  # house-* are in no table
    assert "Cost per case run" not in render_html(unpriced)
    assert "Cost per case run" in render_html(report)


def test_the_prefect_table_artifact_gives_each_case_runs_tokens_and_cost() -> None:
    rows = summary_table_rows(costed_report())
    # dear: agent 100,000 + 50,000, judge 2,000 + 100 tokens; $0.2011 (see the Cost section's test)
    assert [(row["eval_id"], row["tokens"], row["cost_usd"]) for row in rows] == [
        ("cheap", 1_500 + 2_100, pytest.approx(0.0031)),
        ("dear", 150_000 + 2_100, pytest.approx(0.2011)),
        ("middle", 15_000 + 2_100, pytest.approx(0.0211)),
    ]
