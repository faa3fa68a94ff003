"""Database URLs are redacted one way (`secrets.redact_url_credentials`, SQLAlchemy's rendering without the
password), whether a config dump, a flow parameter, a store message or a session database message shows them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy.dialects

from agent_eval.io.recorded.sessions import redacted_url
from agent_eval.secrets import DATABASE_SCHEMES, redact_config, redact_url_credentials
from agent_eval.store.engine import shown_url

CASES = [
    ("postgresql://app:pw@db:5432/evals", "postgresql://app:***@db:5432/evals"),
    ("postgresql+asyncpg://alice:s%40cret@127.0.0.1:1/sessions", "postgresql+asyncpg://alice:***@127.0.0.1:1/sessions"),
    ("postgres://app:pw@db/evals", "postgres://app:***@db/evals"),
    ("mysql+pymysql://u:pw@h/d?charset=utf8mb4", "mysql+pymysql://u:***@h/d?charset=utf8mb4"),
    ("sqlite+pysqlcipher://:key@/tmp/x.db", "sqlite+pysqlcipher://:***@/tmp/x.db"),
    # a lone database user name is an account, shown as SQLAlchemy shows it
    ("postgresql://app@db/evals", "postgresql://app@db/evals"),
    # SQLAlchemy's query: keys sorted; a secret-named value hidden all the same
    (
        "postgresql://app:pw@db/evals?sslmode=require&password=hunter22",
        "postgresql://app:***@db/evals?password=***&sslmode=require",
    ),
    # an unquoted `@` in the password: the last `@` ends the user info, nothing of the password shows
    ("postgresql://app:p/w@d@db:5432/evals", "postgresql://app:***@db:5432/evals"),
    ("postgresql://app:p@w/x@db/evals", "postgresql://app:***@db/evals"),
    # no user info: an `@` in a SQLite path is part of the path (SQLAlchemy quotes it)
    ("sqlite:////tmp/a@b/store.db", "sqlite:////tmp/a%40b/store.db"),
    ("sqlite:////tmp/store.db", "sqlite:////tmp/store.db"),
    # does not parse (a port that is no number): today's rule
    ("postgresql://app:pw@db:port/evals", "postgresql://app:***@db:port/evals"),
    # no database scheme: today's rule, a lone user name (often a token) hidden
    ("notadb://tok@x", "notadb://***@x"),
    ("env:STORE_URL", "env:STORE_URL"),
]


@pytest.mark.parametrize(("url", "expected"), CASES)
def test_a_database_url_is_redacted_one_way_everywhere(url: str, expected: str) -> None:
    assert redact_url_credentials(url) == expected
    assert shown_url(url) == expected  # the store's messages
    assert redacted_url(url) == expected  # the session database's messages
    assert redact_url_credentials(expected) == expected  # twice changes nothing more


def test_a_database_url_inside_a_config_text_is_redacted_as_sqlalchemy_renders_it() -> None:
    config = {"notes": "copied from postgresql://app:hunter22@db:5432/evals?password=hunter22 last week"}

    assert redact_config(config) == {"notes": "copied from postgresql://app:***@db:5432/evals?password=*** last week"}


def test_every_dialect_sqlalchemy_ships_counts_as_a_database_scheme() -> None:
    assert set(sqlalchemy.dialects.__all__) <= DATABASE_SCHEMES


def test_a_web_url_is_redacted_without_importing_sqlalchemy(tmp_path: Path) -> None:
    code = (
        "import sys\nfrom agent_eval.secrets import redact_url_credentials as r\n"
        "print(r('https://ghp_token@github.com/o/r?key=abc'), 'sqlalchemy' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["https://***@github.com/o/r?key=***", "False"]
