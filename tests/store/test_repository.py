"""The store on SQLite and PostgreSQL: one transaction per run, every row and value read back."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlmodel import Session, col, select

from agent_eval.results.aggregate import build_report
from agent_eval.results.model import InvocationScore, MetricResult, RunReport
from agent_eval.schema import AgentRun, EvalCase, EvalConfig, EvalStatus, Invocation, TokenUsage
from agent_eval.store import CaseRecord, MetricRecord, Run, get_engine, list_runs, load_case_records
from agent_eval.store.engine import normalize_url
from tests.store.builders import save_report


def _invocation(text: str) -> Invocation:
    return Invocation.model_validate(
        {
            "invocation_id": "t1",
            "user_content": {"role": "user", "parts": [{"text": text}]},
            "final_response": {"role": "model", "parts": [{"text": f"echo {text} — ünïcödé ✓"}]},
            "intermediate_data": {"tool_uses": [{"name": "lookup", "args": {"q": text, "n": 2.5}}]},
        }
    )


def _report(run_id: str = "run-1") -> RunReport:
    runs = [
        AgentRun(
            eval_set_id="set",
            eval_id="ok",
            invocations=[_invocation("a")],
            latency_seconds=0.25,
            token_usage=TokenUsage(input_tokens=3, output_tokens=4, total_tokens=7),
        ),
        AgentRun(eval_set_id="set", eval_id="bad", error="ValueError: nope", latency_seconds=0.5),
    ]
    metrics = [
        MetricResult(
            metric_name="m",
            eval_set_id="set",
            eval_id="ok",
            score=0.75,
            status=EvalStatus.PASSED,
            threshold=0.5,
            per_invocation=[InvocationScore(score=0.75, status=EvalStatus.PASSED)],
            details={"alignment": [[0, 0]]},
        ),
        MetricResult(
            metric_name="m", eval_set_id="set", eval_id="bad", threshold=0.5, explanation="not scored: the agent failed"
        ),
    ]
    now = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
    return build_report(
        run_id=run_id,
        runs=[(EvalCase(eval_id=run.eval_id, conversation=[_invocation("a")]), run) for run in runs],
        metric_results=metrics,
        config=EvalConfig(),
        eval_set_ids=["set"],
        agent_reference="pkg.mod:agent",
        agent_fingerprint="abc123",
        num_runs=1,
        started_at=now,
        completed_at=now,
    )


def test_save_report_writes_every_row_and_value(store_url: str) -> None:
    engine = get_engine(store_url)

    save_report(_report(), engine)

    with Session(engine) as session:
        run = session.get(Run, "run-1")
        assert run is not None
        assert (run.status, run.total, run.passed, run.failed, run.pass_rate) == ("completed", 2, 1, 1, 0.5)
        assert run.eval_set_ids == ["set"]
        assert run.config["criteria"]["response_match_score"] == {"threshold": 0.8}
        assert run.summary["avg_scores"] == {"m": 0.75}
        assert run.started_at.replace(tzinfo=UTC) == datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
        metrics = session.exec(select(MetricRecord).order_by(col(MetricRecord.id))).all()
        assert [(m.score, m.status, m.threshold) for m in metrics] == [(0.75, 1, 0.5), (None, 3, 0.5)]
        assert metrics[0].details == {"alignment": [[0, 0]]}
        assert metrics[0].per_invocation == [{"score": 0.75, "status": 1, "explanation": None, "rubric_scores": None}]
    cases = load_case_records("run-1", engine)
    assert [(c.eval_id, c.status, c.failure, c.error) for c in cases] == [
        ("ok", 1, 0, None),
        ("bad", 2, 1, "ValueError: nope"),
    ]
    invocation = cases[0].actual_invocations[0]
    assert invocation["final_response"]["parts"][0]["text"] == "echo a — ünïcödé ✓"
    assert invocation["intermediate_data"]["tool_uses"][0]["args"] == {"q": "a", "n": 2.5}
    assert cases[0].token_usage == {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7}
    assert Invocation.model_validate(invocation) == _report().cases[0].agent_run.invocations[0]


def test_a_failing_write_leaves_nothing_behind(store_url: str) -> None:
    engine = get_engine(store_url)
    save_report(_report("run-1"), engine)

    with pytest.raises(Exception, match=r"(?i)unique|duplicate"):
        save_report(_report("run-1"), engine)  # same run id: the whole second write is rolled back

    with Session(engine) as session:
        assert len(session.exec(select(Run)).all()) == 1
        assert len(session.exec(select(CaseRecord)).all()) == 2
        assert len(session.exec(select(MetricRecord)).all()) == 2


def test_list_runs_newest_first(store_url: str) -> None:
    engine = get_engine(store_url)
    older, newer = _report("older"), _report("newer")
    newer = newer.model_copy(update={"started_at": datetime(2026, 12, 3, tzinfo=UTC)})
    save_report(older, engine)
    save_report(newer, engine)

    assert [run.id for run in list_runs(engine)] == ["newer", "older"]
    assert [run.id for run in list_runs(engine, limit=1)] == ["newer"]


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql://u@h/db", "postgresql+psycopg://u@h/db"),
        ("postgres://u@h/db", "postgresql+psycopg://u@h/db"),
        ("postgresql+psycopg://u@h/db", "postgresql+psycopg://u@h/db"),
        ("sqlite:///x.db", "sqlite:///x.db"),
    ],
)
def test_normalize_url_uses_psycopg3(url: str, expected: str) -> None:
    assert normalize_url(url) == expected
