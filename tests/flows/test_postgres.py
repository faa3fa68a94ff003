"""The whole flow with the store on PostgreSQL (the local server at 127.0.0.1:5432)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import Session, select

from agent_eval import evaluate
from agent_eval.store import CaseRecord, MetricRecord, Run, get_engine
from tests.store.conftest import postgres_url  # noqa: F401  (fixture)

pytestmark = [pytest.mark.flow, pytest.mark.postgres, pytest.mark.usefixtures("prefect_server")]


def test_demo_persists_to_postgres(demo_dir: Path, postgres_url: str) -> None:  # noqa: F811
    report = evaluate(demo_dir, db_url=postgres_url)

    with Session(get_engine(postgres_url)) as session:
        run = session.exec(select(Run)).one()
        assert (run.id, run.total, run.passed, run.failed) == (report.run_id, 33, 27, 6)
        assert len(session.exec(select(CaseRecord)).all()) == 33
        assert len(session.exec(select(MetricRecord)).all()) == 66
        failed = session.exec(select(CaseRecord.eval_id).where(CaseRecord.status == 2)).all()
        assert sorted(failed) == sorted(c.eval_id for c in report.failed_cases())
