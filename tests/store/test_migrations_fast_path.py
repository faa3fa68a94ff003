"""The store's migration fast path: a database at the newest revision is opened without Alembic."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from agent_eval.store.engine import new_engine
from agent_eval.store.migrate import head_revision, is_current, newest_packaged_revision, upgrade


def test_revision_file_names_give_alembic_head() -> None:
    assert newest_packaged_revision() == head_revision() == "0010"


def test_a_new_database_is_not_current_until_migrated(tmp_path: Path) -> None:
    engine = new_engine(f"sqlite:///{tmp_path / 'store.db'}")
    assert not is_current(engine)
    upgrade(engine)
    assert is_current(engine)


def test_opening_a_current_store_does_not_import_alembic(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    upgrade(new_engine(url))
    heavy = "('alembic', 'prefect', 'nltk', 'scipy')"
    code = (
        f"import sys; from agent_eval.store.engine import check_store; check_store({url!r}); "
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
