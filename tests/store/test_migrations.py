"""Alembic migrations on SQLite and PostgreSQL: a first-release store upgraded in place, a new store equal to
the models, idempotent and reversible upgrades, migrations shipped inside the package."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import setuptools
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel

import agent_eval
from agent_eval.compare.run_history import history
from agent_eval.store import get_engine, get_run, load_report
from agent_eval.store.engine import new_engine, normalize_url
from agent_eval.store.migrate import MIGRATIONS_DIR, alembic_config, head_revision, upgrade
from tests.conftest import REPO_ROOT
from tests.store.builders import eval_set, make_report, save_report
from tests.store.legacy_schema import create_first_release_store

NEW_TABLES = {"eval_set_versions", "run_eval_sets"}


def _revision(engine: Engine) -> str | None:
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def _differences(engine: Engine) -> list[object]:
    with engine.connect() as connection:
        return list(compare_metadata(MigrationContext.configure(connection), SQLModel.metadata))


def _columns(engine: Engine, table: str) -> set[str]:
    return {column["name"] for column in inspect(engine).get_columns(table)}


def test_a_first_release_store_is_upgraded_in_place(store_url: str) -> None:
    raw = new_engine(normalize_url(store_url))
    with raw.begin() as connection:
        create_first_release_store(connection)
    raw.dispose()

    engine = get_engine(store_url)

    assert _revision(engine) == head_revision() == "0010"
    assert set(inspect(engine).get_table_names()) >= NEW_TABLES
    assert {"deployment_name", "git_commit", "updated_at", "tags"} <= _columns(engine, "runs")
    assert "final_session_state" in _columns(engine, "case_results")
    run = get_run("old-run", engine)
    assert (run.status, run.total, run.passed, run.tags, run.git_commit) == ("completed", 1, 1, [], None)
    assert run.started_at == datetime(2026, 1, 5, 10, tzinfo=UTC)
    report = load_report("old-run", engine)
    assert [(c.eval_id, c.status.name, [(m.metric_name, m.score) for m in c.metrics]) for c in report.cases] == [
        ("a", "PASSED", [("m", 0.75)])
    ]
    assert report.summary.avg_scores == {"m": 0.75}
    assert list(history(eval_set="set", db_url=store_url)["run_id"]) == ["old-run"]  # linked by the migration
    save_report(make_report("new-run", [eval_set()], {"m": {"a": 1.0}}), engine, eval_sets=[eval_set()])
    assert list(history(eval_set="set", db_url=store_url)["run_id"]) == ["new-run", "old-run"]


def test_a_new_store_is_exactly_the_models(store_url: str) -> None:
    engine = get_engine(store_url)

    assert _revision(engine) == "0010"
    assert _differences(engine) == []


def test_upgrading_is_idempotent_and_downgrading_keeps_the_first_release_data(store_url: str) -> None:
    engine = get_engine(store_url)
    save_report(make_report("r1", [eval_set()], {"m": {"a": 1.0, "b": 0.0}}), engine, eval_sets=[eval_set()])
    upgrade(engine)
    assert _revision(engine) == "0010"

    with engine.begin() as connection:
        command.downgrade(alembic_config(connection), "0001")
    assert not NEW_TABLES & set(inspect(engine).get_table_names())
    assert "tags" not in _columns(engine, "runs")

    upgrade(engine)
    assert _differences(engine) == []
    assert get_run("r1", engine).total == 3
    assert list(history(eval_set="set", db_url=store_url)["run_id"]) == ["r1"]


def test_the_migrations_ship_inside_the_package() -> None:
    package = Path(agent_eval.__file__).parent
    assert MIGRATIONS_DIR.is_relative_to(package)
    packages = setuptools.find_packages(str(REPO_ROOT), include=["agent_eval*"])
    assert {"agent_eval.store.migrations", "agent_eval.store.migrations.versions"} <= set(packages)
    script = ScriptDirectory.from_config(alembic_config())
    assert [r.revision for r in reversed(list(script.walk_revisions()))] == [
        "0001",
        "0002",
        "0003",
        "0004",
        "0005",
        "0006",
        "0007",
        "0008",
        "0009",
        "0010",
    ]
