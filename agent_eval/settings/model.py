"""`Settings`: every `AGENT_EVAL_*` environment variable as a typed field, with its default, its meaning and its
valid range. Read it through `agent_eval.settings.settings()`, which turns a bad value into one line.

Internal: the public API is `agent_eval`'s; this module's names may change between releases.

This module is imported on first use only (`agent_eval.settings` exports its names lazily): pydantic-settings
costs ~75 ms, which `agent-eval --help` and a mistyped file name do not pay. It imports nothing of agent-eval, so
that every layer may read the settings.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import NoneType, UnionType
from typing import Any, Literal, Union, get_args, get_origin
from uuid import UUID

import annotated_types
from pydantic import Field, SecretStr, ValidationError, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from agent_eval.settings.raw import DEFAULT_HOME, FALSE_WORDS, TRUE_WORDS, flag, home_folder

__all__ = [
    "DEFAULT_JUDGE_CONCURRENCY",
    "DEFAULT_PROGRESS_INTERVAL_SECONDS",
    "DEFAULT_SERVER_IDLE_MINUTES",
    "DEFAULT_WARM_IDLE_MINUTES",
    "ENV_PREFIX",
    "JUDGE_RETRY_LIMITS",
    "Settings",
    "invalid_setting_line",
]

ENV_PREFIX = "AGENT_EVAL_"
JUDGE_RETRY_LIMITS: dict[str, tuple[float, float]] = {
    "attempts": (1, 100),
    "initial_delay": (0, 3600),
    "max_delay": (0, 3600),
}
"""The valid range of each judge retry setting (config `judge.retry_<name>`, env `AGENT_EVAL_JUDGE_RETRY_<NAME>`):
attempts a whole number, delays in seconds."""
DEFAULT_JUDGE_CONCURRENCY = 64
DEFAULT_PROGRESS_INTERVAL_SECONDS = 10.0
DEFAULT_WARM_IDLE_MINUTES = 60.0
DEFAULT_SERVER_IDLE_MINUTES = 60.0
_BOOLEAN_WORDS = "one of " + ", ".join((*TRUE_WORDS, *FALSE_WORDS))
_HIDDEN = "***"  # agent_eval.secrets.REDACTED, which this module may not import (it sits beside it)
_ATTEMPTS, _INITIAL_DELAY, _MAX_DELAY = JUDGE_RETRY_LIMITS.values()


def _unit(unit: str) -> dict[str, Any]:
    """A number field's unit, named in the error for a bad value (`a number of seconds above 0`)."""
    return {"unit": unit}


class Settings(BaseSettings):
    """Every `AGENT_EVAL_*` environment variable (field `judge_concurrency`: `AGENT_EVAL_JUDGE_CONCURRENCY`).

    An empty (or blank) variable counts as unset; booleans take `1`/`true`/`yes`/`on` and `0`/`false`/`no`/`off`;
    choices ignore case. Secrets are never shown: `alert_webhook` is a `SecretStr`, `db_url` (which may hold a
    password) is left out of the repr and of dumps. The README's `## Settings` table lists the same fields
    (tests/test_settings.py keeps them equal).
    """

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, env_ignore_empty=True, extra="ignore", frozen=True)

    home: Path = Field(
        Path(DEFAULT_HOME),
        validate_default=True,
        description="agent-eval's own folder: the default SQLite store, the judge cache, the state and logs of "
        "the local Prefect server and of the warm process.",
    )
    db_url: str | None = Field(
        None,
        repr=False,
        exclude=True,
        description="The store's SQLAlchemy URL, e.g. `postgresql://user@host/db`; unset: the SQLite file "
        "`agent_eval.db` in the home folder.",
    )
    dask_address: str | None = Field(
        None,
        description="The Dask scheduler to invoke the agent on when a run names none (`--dask`), e.g. "
        "`tcp://10.0.0.5:8786`; unset: in this process.",
    )
    prefect_server: Literal["local", "ephemeral"] | None = Field(
        None,
        description="The Prefect server a run uses when `PREFECT_API_URL` names none: `local` (started once, "
        "then reused) or `ephemeral` (one per run); unset: `local`, or `ephemeral` when `CI` is set.",
    )
    warm: bool = Field(
        True,
        description="Whether runs may use (and start) the warm process that keeps agent-eval's imports "
        "loaded; never when `CI` is set.",
    )
    warm_idle_minutes: float = Field(
        DEFAULT_WARM_IDLE_MINUTES,
        allow_inf_nan=False,
        json_schema_extra=_unit("minutes"),
        description="Minutes without a request after which the warm process exits; 0 or less: never.",
    )
    server_idle_minutes: float = Field(
        DEFAULT_SERVER_IDLE_MINUTES,
        allow_inf_nan=False,
        json_schema_extra=_unit("minutes"),
        description="Minutes without an API or UI request and with no flow run in progress after which the local "
        "Prefect server stops itself; 0 or less: never.",
    )
    registry_dir: Path | None = Field(
        None,
        description="The folder of the machine-wide list of agent-eval's background processes (`server status "
        "--all`); unset: `$XDG_RUNTIME_DIR/agent-eval/processes`, else a private folder in the system's temporary "
        "directory.",
    )
    progress_interval: float = Field(
        DEFAULT_PROGRESS_INTERVAL_SECONDS,
        gt=0,
        allow_inf_nan=False,
        json_schema_extra=_unit("seconds"),
        description="Seconds between the status lines of a run whose output is not a terminal.",
    )
    max_input_mb: float = Field(
        25.0,
        gt=0,
        allow_inf_nan=False,
        json_schema_extra=_unit("megabytes"),
        description="The largest input file agent-eval reads, in megabytes.",
    )
    agent_version: str | None = Field(
        None,
        description="The version of a remote (HTTP) agent, part of its fingerprint: change it when the agent "
        "behind the URL changes.",
    )
    keep_sessions: bool = Field(
        False,
        description="Whether an ADK api_server keeps each case run's session (to open in `adk web`) instead of "
        "deleting it.",
    )
    judge_backend: Literal["google", "openai"] = Field(
        "google",
        description="Which backend answers a judge model without the `openai:` prefix: `google` (google-genai: "
        "the Gemini API or Vertex AI) or `openai` (the server at `OPENAI_BASE_URL`).",
    )
    gemini_base_url: str | None = Field(
        None,
        description="Where google-genai sends judge calls instead of Google's endpoint (a proxy, or a fake "
        "server in tests).",
    )
    judge_concurrency: int = Field(
        DEFAULT_JUDGE_CONCURRENCY,
        ge=1,
        description="The ceiling of the adaptive limit on judge calls in flight per event loop (it starts at 16, "
        "at most this, and follows the provider).",
    )
    judge_retry_attempts: int | None = Field(
        None,
        ge=_ATTEMPTS[0],
        le=_ATTEMPTS[1],
        description="Judge calls per request in all, the first included (1: no retry), unless the config's "
        "`judge` section sets them; unset: ADK's 7.",
    )
    judge_retry_initial_delay: float | None = Field(
        None,
        ge=_INITIAL_DELAY[0],
        le=_INITIAL_DELAY[1],
        allow_inf_nan=False,
        json_schema_extra=_unit("seconds"),
        description="Seconds before the first retry of a failed judge call, doubled at each retry, unless the "
        "config's `judge` section sets it; unset: ADK's 5.",
    )
    judge_retry_max_delay: float | None = Field(
        None,
        ge=_MAX_DELAY[0],
        le=_MAX_DELAY[1],
        allow_inf_nan=False,
        json_schema_extra=_unit("seconds"),
        description="The longest wait between two attempts of a judge call, in seconds, unless the config's "
        "`judge` section sets it; unset: ADK's 120.",
    )
    shard_stale_seconds: float | None = Field(
        None,
        gt=0,
        allow_inf_nan=False,
        json_schema_extra=_unit("seconds"),
        description="Seconds without a heartbeat after which a running shard counts as crashed, more than "
        "Prefect's flow heartbeat period; unset: 2.5 heartbeat periods.",
    )
    alert_webhook: SecretStr | None = Field(
        None,
        json_schema_extra={"allowed": "an http:// or https:// URL"},
        description="The webhook that regression and outage alerts are POSTed to when the config names none; "
        "a secret, never shown.",
    )
    labeller: str | None = Field(
        None,
        min_length=1,
        max_length=255,
        json_schema_extra={"allowed": "a name, 1 to 255 characters"},
        description="Who labels judged items (`agent-eval label`, `labels import`) when `--labeller` is not "
        "given; default: the login name.",
    )
    alert_block_id: UUID | None = Field(
        None,
        json_schema_extra={"allowed": "a Prefect block id (a UUID)"},
        description="The notification block that `deployments/automations.yaml` names, substituted by "
        "`envsubst` (agent-eval itself does not read it).",
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """The environment only: no `.env` file, no secrets folder."""
        return init_settings, env_settings

    @field_validator("*", mode="before")
    @classmethod
    def _trimmed(cls, value: Any, info: ValidationInfo) -> Any:
        """Surrounding blanks dropped, a blank value read as unset, choices in lower case."""
        if not isinstance(value, str):
            return value
        name = str(info.field_name)
        value = value.strip()
        if not value:
            return cls.model_fields[name].get_default(call_default_factory=True)
        return value.lower() if get_origin(_kind(name)) is Literal else value

    @field_validator("home", mode="before")
    @classmethod
    def _home_expanded(cls, home: Any) -> Path:
        return home_folder(str(home))

    @field_validator("warm", "keep_sessions", mode="before")
    @classmethod
    def _yes_or_no(cls, value: Any, info: ValidationInfo) -> Any:
        """The yes/no words of `agent_eval.settings.raw.flag`, no others (pydantic's own take `t`, `y`...)."""
        if not isinstance(value, str):
            return value
        read = flag(value, default=bool(cls.model_fields[str(info.field_name)].default))
        if read is None:
            raise ValueError("not a yes/no word")
        return read

    @field_validator("alert_webhook")
    @classmethod
    def _http_url(cls, webhook: SecretStr | None) -> SecretStr | None:
        if webhook is not None and not webhook.get_secret_value().startswith(("http://", "https://")):
            raise ValueError("not an http(s) URL")  # pydantic's error holds the value: it is never shown
        return webhook

    @classmethod
    def variable(cls, name: str) -> str:
        """The environment variable of field `name`, e.g. `AGENT_EVAL_JUDGE_CONCURRENCY`."""
        return ENV_PREFIX + name.upper()

    @classmethod
    def allowed(cls, name: str) -> str:
        """What field `name` accepts, from its type and constraints, e.g. `a whole number of at least 1`."""
        field = cls.model_fields[name]
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        if "allowed" in extra:
            return str(extra["allowed"])
        kind = _kind(name)
        if get_origin(kind) is Literal:
            return "one of " + ", ".join(repr(choice) for choice in get_args(kind))
        if kind is bool:
            return _BOOLEAN_WORDS
        if kind not in (int, float):
            return "a folder" if kind is Path else "any text"
        noun = "a whole number" if kind is int else "a number" + (f" of {extra['unit']}" if "unit" in extra else "")
        return noun + _bounds(field.metadata)

    @classmethod
    def is_secret(cls, name: str) -> bool:
        """Whether field `name` holds a secret, whose value is never shown."""
        return _kind(name) is SecretStr or cls.model_fields[name].repr is False


def invalid_setting_line(error: ValidationError) -> str:
    """One line for the first bad variable of `error` (raised by `Settings()`): the variable, its value as set
    (hidden if secret) and what it accepts, e.g. `AGENT_EVAL_JUDGE_CONCURRENCY='abc' is not valid: a whole number
    of at least 1`."""
    name = str(error.errors()[0]["loc"][0])
    variable = Settings.variable(name)
    given = next((value for key, value in os.environ.items() if key.upper() == variable), "")
    shown = _HIDDEN if Settings.is_secret(name) else given
    return f"{variable}={shown!r} is not valid: {Settings.allowed(name)}"


def _kind(name: str) -> Any:
    """Field `name`'s type without `None` (`int` for `int | None`)."""
    annotation = Settings.model_fields[name].annotation
    if get_origin(annotation) not in (Union, UnionType):
        return annotation
    kinds = [kind for kind in get_args(annotation) if kind is not NoneType]
    return kinds[0] if len(kinds) == 1 else annotation


def _bounds(constraints: list[Any]) -> str:
    """The range a number's constraints allow, as words: ` from 1 to 100`, ` of at least 1`, ` above 0`."""
    found = {type(constraint).__name__: constraint for constraint in constraints}
    low, high, above = found.get("Ge"), found.get("Le"), found.get("Gt")
    if isinstance(low, annotated_types.Ge) and isinstance(high, annotated_types.Le):
        return f" from {low.ge:g} to {high.le:g}"
    if isinstance(low, annotated_types.Ge):
        return f" of at least {low.ge:g}"
    if isinstance(above, annotated_types.Gt):
        return f" above {above.gt:g}"
    return ""
