"""`agent_eval.settings`: every `AGENT_EVAL_*` variable as one typed `Settings`, read from the environment at each
call, a bad value one line (its secret hidden), and the README's `## Settings` table equal to the fields."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from uuid import UUID

import pytest
from pydantic import SecretStr

from agent_eval.cli import main
from agent_eval.errors import EvalInputError
from agent_eval.settings import Settings, settings

REPO = Path(__file__).resolve().parents[1]
WEBHOOK = "https://hooks.slack.com/services/T0/B0/XXXXSECRETWEBHOOK"
PASSWORD = "hunter2-db-password"


@pytest.fixture(autouse=True)
def no_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """No `AGENT_EVAL_*` variable set (the test session sets some): each test sets its own."""
    for name in Settings.model_fields:
        monkeypatch.delenv(Settings.variable(name), raising=False)


# ------------------------------------------------------------------------------------- the README's table
def _readme_rows() -> list[tuple[str, str, str]]:
    """(variable, default, meaning) of each row of the README's `## Settings` table, as written."""
    section = (REPO / "README.md").read_text(encoding="utf-8").split("\n## Settings\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `AGENT_EVAL_")]
    cells = [[cell.strip() for cell in row.strip().strip("|").split(" | ")] for row in rows]
    return [(variable.strip("`"), default, meaning) for variable, default, meaning in cells]


def _shown(default: object) -> str:
    """A default as the table writes it: `unset`, or the value in backticks (`60`, `true`, `~/.agent_eval`)."""
    if default is None:
        return "unset"
    if isinstance(default, bool):
        return f"`{str(default).lower()}`"
    if isinstance(default, float):
        return f"`{default:g}`"
    return f"`{default}`"


def test_the_readme_table_lists_every_setting_with_its_default_and_meaning() -> None:
    fields = [
        (Settings.variable(name), _shown(field.default), field.description)
        for name, field in Settings.model_fields.items()
    ]
    assert _readme_rows() == fields
    assert len(fields) == 22


def test_every_description_is_one_sentence() -> None:
    for name, field in Settings.model_fields.items():
        description = field.description or ""
        assert description.endswith(".") and "|" not in description, name
        assert ". " not in description.replace("e.g. ", ""), name


# ------------------------------------------------------------------------------------------- good values
VALID = [
    ("home", "/tmp/agent-eval-home", Path("/tmp/agent-eval-home")),
    ("db_url", "postgresql://app@db:5432/evals", "postgresql://app@db:5432/evals"),
    ("dask_address", "tcp://10.0.0.5:8786", "tcp://10.0.0.5:8786"),
    ("prefect_server", " Ephemeral ", "ephemeral"),
    ("warm", "off", False),
    ("warm_idle_minutes", "-1", -1.0),
    ("server_idle_minutes", "0.5", 0.5),
    ("registry_dir", "/tmp/agent-eval-registry", Path("/tmp/agent-eval-registry")),
    ("progress_interval", "0.25", 0.25),
    ("max_input_mb", "0.001", 0.001),
    ("agent_version", "2026-12-01", "2026-12-01"),
    ("keep_sessions", "YES", True),
    ("judge_backend", "OpenAI", "openai"),
    ("gemini_base_url", "http://127.0.0.1:9/", "http://127.0.0.1:9/"),
    ("judge_concurrency", " 3 ", 3),
    ("judge_retry_attempts", "100", 100),
    ("judge_retry_initial_delay", "0", 0.0),
    ("judge_retry_max_delay", "3600", 3600.0),
    ("shard_stale_seconds", "45", 45.0),
    ("alert_webhook", WEBHOOK, SecretStr(WEBHOOK)),
    ("labeller", "ada", "ada"),
    ("alert_block_id", "0b1c5e7a-2f4d-4c8e-9a6b-3d2e1f0a9b8c", UUID("0b1c5e7a-2f4d-4c8e-9a6b-3d2e1f0a9b8c")),
]


def test_every_field_has_a_valid_value_in_these_tests() -> None:
    assert [name for name, _, _ in VALID] == list(Settings.model_fields)


@pytest.mark.parametrize(("name", "value", "expected"), VALID, ids=[name for name, _, _ in VALID])
def test_a_valid_value_is_read_as_its_type(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, expected: object
) -> None:
    monkeypatch.setenv(Settings.variable(name), value)
    read = getattr(settings(), name)
    assert read == expected
    assert type(read) is type(expected)


def test_unset_empty_and_blank_variables_give_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/someone")
    defaults = settings()
    assert defaults.home == Path("/home/someone/.agent_eval")
    assert (defaults.judge_concurrency, defaults.warm, defaults.keep_sessions) == (64, True, False)
    assert (defaults.progress_interval, defaults.warm_idle_minutes, defaults.max_input_mb) == (10.0, 60.0, 25.0)
    assert (defaults.judge_backend, defaults.prefect_server, defaults.alert_webhook) == ("google", None, None)
    for variable, value in [("AGENT_EVAL_JUDGE_CONCURRENCY", ""), ("AGENT_EVAL_MAX_INPUT_MB", "   ")]:
        monkeypatch.setenv(variable, value)
    monkeypatch.setenv("AGENT_EVAL_AGENT_VERSION", " ")
    assert settings() == defaults


def test_each_call_reads_the_environment_as_it_is_now(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_EVAL_JUDGE_CONCURRENCY", "3")
    first = settings()
    assert settings() is first  # the same variables: the same (frozen) settings
    monkeypatch.setenv("AGENT_EVAL_JUDGE_CONCURRENCY", "5")
    assert settings().judge_concurrency == 5
    monkeypatch.setenv("AGENT_EVAL_JUDGE_CONCURRENCY", "abc")
    with pytest.raises(EvalInputError):
        settings()
    monkeypatch.setenv("HOME", "/home/elsewhere")
    monkeypatch.delenv("AGENT_EVAL_JUDGE_CONCURRENCY")
    assert (settings().judge_concurrency, settings().home) == (64, Path("/home/elsewhere/.agent_eval"))


# -------------------------------------------------------------------------------------------- bad values
BAD = [
    ("AGENT_EVAL_JUDGE_CONCURRENCY", "abc", "a whole number of at least 1"),
    ("AGENT_EVAL_JUDGE_CONCURRENCY", "0", "a whole number of at least 1"),
    ("AGENT_EVAL_JUDGE_RETRY_ATTEMPTS", "101", "a whole number from 1 to 100"),
    ("AGENT_EVAL_JUDGE_RETRY_MAX_DELAY", "nan", "a number of seconds from 0 to 3600"),
    ("AGENT_EVAL_PROGRESS_INTERVAL", "-1", "a number of seconds above 0"),
    ("AGENT_EVAL_MAX_INPUT_MB", "lots", "a number of megabytes above 0"),
    ("AGENT_EVAL_SHARD_STALE_SECONDS", "inf", "a number of seconds above 0"),
    ("AGENT_EVAL_WARM_IDLE_MINUTES", "soon", "a number of minutes"),
    ("AGENT_EVAL_WARM", "maybe", "one of 1, true, yes, on, 0, false, no, off"),
    ("AGENT_EVAL_KEEP_SESSIONS", "2", "one of 1, true, yes, on, 0, false, no, off"),
    ("AGENT_EVAL_PREFECT_SERVER", "Remote", "one of 'local', 'ephemeral'"),
    ("AGENT_EVAL_JUDGE_BACKEND", "anthropic", "one of 'google', 'openai'"),
    ("AGENT_EVAL_ALERT_BLOCK_ID", "my-block", "a Prefect block id (a UUID)"),
]


@pytest.mark.parametrize(("variable", "value", "allowed"), BAD, ids=[f"{name}={value}" for name, value, _ in BAD])
def test_a_bad_value_is_one_line_naming_the_variable_its_value_and_what_it_accepts(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, allowed: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(EvalInputError) as raised:
        settings()
    assert str(raised.value) == f"{variable}={value!r} is not valid: {allowed}"
    assert raised.value.__suppress_context__  # no pydantic report (it holds every value) under it


def test_the_webhook_never_appears_in_an_error_nor_in_the_settings_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_EVAL_DB_URL", f"postgresql://app:{PASSWORD}@db:5432/evals")
    monkeypatch.setenv("AGENT_EVAL_ALERT_WEBHOOK", WEBHOOK)
    current = settings()
    shown = f"{current!r} {current} {current.model_dump()}"
    assert "XXXXSECRETWEBHOOK" not in shown and PASSWORD not in shown
    assert current.alert_webhook is not None and current.alert_webhook.get_secret_value() == WEBHOOK

    not_a_url = "hooks.slack.com/services/T0/B0/XXXXSECRETWEBHOOK"
    monkeypatch.setenv("AGENT_EVAL_ALERT_WEBHOOK", not_a_url)
    with pytest.raises(EvalInputError) as raised:
        settings()
    assert str(raised.value) == "AGENT_EVAL_ALERT_WEBHOOK='***' is not valid: an http:// or https:// URL"


def test_a_stale_shard_window_must_exceed_the_heartbeat(monkeypatch: pytest.MonkeyPatch) -> None:
    from prefect.settings import get_current_settings

    from agent_eval.flows.shard import _stale_after

    period = get_current_settings().flows.heartbeat_frequency or 180
    monkeypatch.setenv("AGENT_EVAL_SHARD_STALE_SECONDS", f"{period}")
    with pytest.raises(EvalInputError) as raised:
        _stale_after()
    assert str(raised.value) == (
        f"AGENT_EVAL_SHARD_STALE_SECONDS='{period}' is not valid: a number of seconds above the {period} s heartbeat"
    )
    monkeypatch.setenv("AGENT_EVAL_SHARD_STALE_SECONDS", f"{period + 1}")
    assert _stale_after().total_seconds() == period + 1


def test_the_judge_retry_ranges_are_the_configs() -> None:
    from agent_eval.schema import JUDGE_RETRY_LIMITS, judge_retry_expected

    for name in JUDGE_RETRY_LIMITS:
        assert Settings.allowed(f"judge_retry_{name}") == judge_retry_expected(name)


# ---------------------------------------------------------------------------------------------- the CLI
@pytest.mark.parametrize(
    "bad",
    [
        (
            "AGENT_EVAL_JUDGE_CONCURRENCY",
            "abc",
            "AGENT_EVAL_JUDGE_CONCURRENCY='abc' is not valid: a whole number of at least 1",
        ),
        (
            "AGENT_EVAL_ALERT_WEBHOOK",
            "XXXXSECRETWEBHOOK",
            "AGENT_EVAL_ALERT_WEBHOOK='***' is not valid: an http:// or https:// URL",
        ),
    ],
    ids=["concurrency", "webhook"],
)
def test_run_with_a_bad_variable_exits_2_with_one_line_before_anything_runs(
    bad: tuple[str, str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    demo_dir: Path,
) -> None:
    variable, value, line = bad
    monkeypatch.setenv("CI", "1")  # no warm process, no local Prefect server
    monkeypatch.setenv("AGENT_EVAL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(variable, value)
    store = tmp_path / "store.db"

    code = main(["run", str(demo_dir), "--db-url", f"sqlite:///{store}"])

    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert captured.err == f"agent-eval: error: {line}\n"
    assert not store.exists() and not (tmp_path / "home").exists()  # nothing run, nothing written


def test_importing_the_settings_module_imports_neither_pydantic_nor_pydantic_settings() -> None:
    code = (
        "import sys, agent_eval.settings; agent_eval.settings.HOME_ENV; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'pydantic', 'pydantic_settings'}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True)
    assert done.stdout.strip() == "[]"
