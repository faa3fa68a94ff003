"""Secrets are never stored nor printed: settings hold references, and whatever leaves the process is redacted.

Internal: the public API is `agent_eval`'s; this module's names may change between releases.

A secret-bearing setting (the config's `regression.alert_webhook`) holds a *reference* to where the secret lives:

- `env:NAME` or `${NAME}`: the environment variable `NAME`, read when the secret is used;
- `prefect-secret:BLOCK`: the Prefect `Secret` block named `BLOCK`, loaded when the secret is used;
- a literal value (e.g. `https://hooks.slack.com/services/T0/B0/XXXX`), still accepted for compatibility: it is
  used in memory only, and stored and shown redacted (`https://hooks.slack.com/***`), so a run re-created from
  the store cannot use it (`resolve_secret` then says to give a reference).

The redaction rules (each function's docstring has the details):

- `redact_url`: `scheme://host[:port]` is kept; user info becomes `***@`, and any path, query or fragment `/***`.
- `redact_url_credentials`: only the password (or a lone user name, often a token) and secret-named query
  parameters are hidden; the path is kept (for store URLs and URLs inside a config's ordinary fields). A
  database URL is rendered by SQLAlchemy (`make_url(url).render_as_string(hide_password=True)`): the one
  redaction of database URLs, which the store's and the session database's messages use too.
- `redact_text`: in free text (log lines, error messages), every URL as `redact_url`, `Bearer` tokens,
  `name=value` pairs whose name says secret (`key`, `api_key`, `token`, `password`...), quoted `"api_key": "..."`
  pairs, well-known token shapes (Gemini `AIza...`, `sk-...`, Slack `xox?-...`, GitHub `ghp_...`), and the value of
  every secret-named environment variable or secret resolved by this process, wherever they appear.
- `redact_config`: in a config dump, the values of secret-named keys, webhook URLs and the credentials of every
  other URL; references are kept as they are (they are not secrets).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import PlainSerializer

__all__ = [
    "DATABASE_SCHEMES",
    "ENV_PREFIX",
    "PREFECT_SECRET_PREFIX",
    "REDACTED",
    "ConfigParameter",
    "SecretUnavailableError",
    "UrlParameter",
    "is_reference",
    "redact_config",
    "redact_text",
    "redact_url",
    "redact_url_credentials",
    "register_secret",
    "resolve_secret",
    "shown_reference",
]

REDACTED = "***"
ENV_PREFIX = "env:"
PREFECT_SECRET_PREFIX = "prefect-secret:"
DATABASE_SCHEMES = frozenset({"mssql", "mysql", "mariadb", "oracle", "postgresql", "postgres", "sqlite"})
"""The URL schemes (before any `+driver`) read as database URLs: the dialects SQLAlchemy ships, and `postgres`,
which the store takes for `postgresql`. Another scheme's URL (http, a third-party dialect) follows the general
rule of `redact_url_credentials`, and needs no SQLAlchemy import."""
_MIN_SECRET_LENGTH = 8
"""Shorter values (`true`, `1`) are not replaced verbatim in text: they would mangle everything."""

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BRACED_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SECRET_NAME_PARTS = ("apikey", "accesskey", "privatekey", "token", "secret", "password", "passwd", "credential")
_SECRET_NAMES = ("key", "auth", "authorization", "pwd", "sig", "signature")
_SECRET_ENV_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|WEBHOOK", re.IGNORECASE)

_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s<>\"'`|]+")
_URL_TRAILING = ".,;:!?)]}"
_BEARER = re.compile(r"\b(bearer)\s+[A-Za-z0-9\-._~+/]+=*", re.IGNORECASE)
_KEY_HEADER = re.compile(r"\b(x-goog-api-key|x-api-key|api-key)(\s*:\s*)[^\s,;]+", re.IGNORECASE)
_SECRET_WORD = r"[A-Za-z0-9_.\-]*(?:key|token|secret|password|passwd|pwd|signature|sig|credential|auth)"
_KEY_VALUE = re.compile(rf"\b({_SECRET_WORD})=[^\s&\"'<>,;)]+", re.IGNORECASE)
_QUOTED_PAIR = re.compile(
    r"([\"'])([\w\-]*(?:api_?key|token|secret|password|passwd)[\w\-]*)\1(\s*:\s*)([\"'])[^\"']*\4", re.IGNORECASE
)
_TOKEN_SHAPES = (  # group 1 is the prefix kept: it says what kind of token was there
    re.compile(r"\b(AIza)[0-9A-Za-z_\-]{20,}"),
    re.compile(r"\b(sk-)[A-Za-z0-9_\-]{16,}"),
    re.compile(r"\b(xox[abposr]-)[A-Za-z0-9\-]{10,}"),
    re.compile(r"\b(gh[pousr]_)[A-Za-z0-9]{20,}"),
)

_resolved: set[str] = set()
_resolved_lock = threading.Lock()


class SecretUnavailableError(ValueError):
    """A setting that gives no secret: an unset variable, a missing block, a redacted value."""


# ----------------------------------------------------------------------------------------------- references
def is_reference(value: str) -> bool:
    """Whether `value` names where a secret lives (`env:NAME`, `${NAME}`, `prefect-secret:BLOCK`)."""
    return _env_name(value) is not None or value.startswith(PREFECT_SECRET_PREFIX)


def shown_reference(value: str) -> str:
    """What may be stored or shown for a secret setting: a reference as it is, a literal redacted (`redact_url`)."""
    return value if is_reference(value) else redact_url(value)


def resolve_secret(value: str, *, field: str) -> str:
    """The secret a setting refers to, read now; also registered so that `redact_text` hides it from then on.

    Args:
        value: `env:NAME`, `${NAME}`, `prefect-secret:BLOCK`, or a literal secret (returned as it is).
        field: the setting's name, for the error message (e.g. `regression.alert_webhook`).

    Returns:
        The secret's value.

    Raises:
        SecretUnavailableError: the variable is unset or empty, the block cannot be loaded, or `value` is a
            redacted literal (what the store keeps of one).
    """
    env_name = _env_name(value)
    if env_name is not None:
        secret = os.environ.get(env_name, "")
        if not secret:
            raise SecretUnavailableError(f"{field}: the environment variable {env_name!r} it names is not set")
    elif value.startswith(PREFECT_SECRET_PREFIX):
        secret = _load_prefect_secret(value.removeprefix(PREFECT_SECRET_PREFIX), field)
    elif REDACTED in value:
        raise SecretUnavailableError(
            f"{field} is {value!r}, a redacted literal (a secret is never stored): give it as "
            f"{ENV_PREFIX}NAME or {PREFECT_SECRET_PREFIX}BLOCK"
        )
    else:
        secret = value
    register_secret(secret)
    return secret


def register_secret(value: str) -> None:
    """Make `redact_text` replace `value` wherever it appears, for the rest of this process."""
    if len(value) >= _MIN_SECRET_LENGTH:
        with _resolved_lock:
            _resolved.add(value)


def _env_name(value: str) -> str | None:
    """The variable an `env:NAME` or `${NAME}` reference names, else None."""
    if value.startswith(ENV_PREFIX) and _ENV_NAME.fullmatch(value.removeprefix(ENV_PREFIX)):
        return value.removeprefix(ENV_PREFIX)
    braced = _BRACED_ENV.fullmatch(value)
    return braced.group(1) if braced else None


def _load_prefect_secret(block_name: str, field: str) -> str:
    """The value of the Prefect `Secret` block `block_name` (as text), from the Prefect API in use."""
    from prefect.blocks.system import Secret

    try:
        block: Secret[Any] = Secret.load(block_name, _sync=True)  # type: ignore[call-arg,assignment]  # sync in a loop
    except Exception as error:
        raise SecretUnavailableError(
            f"{field}: the Prefect Secret block {block_name!r} could not be loaded "
            f"({type(error).__name__}: {redact_text(str(error))}); create it with Secret(value=...).save(name)"
        ) from None
    value = block.get()
    return value if isinstance(value, str) else str(value)


# ----------------------------------------------------------------------------------------------------- URLs
def redact_url(url: str) -> str:
    """`scheme://host[:port]`, with `***@` for any user info and `/***` for any path, query or fragment.

    A string without `://` is read as `host/path` (`hooks.slack.com/services/x` gives `hooks.slack.com/***`).
    Every `@` before the query counts as the end of the user info, so nothing of a password that holds `/` or `@`
    is ever shown (a path with `@` may then be taken for user info: more is hidden, never less).

    Examples:
        `https://hooks.slack.com/services/T0/B0/XXXX` → `https://hooks.slack.com/***`;
        `https://user:pw@host:8443/p?q=1` → `https://***@host:8443/***`; `http://127.0.0.1:8000` is unchanged.
    """
    scheme, userinfo, host, tail = _split_url(url)
    hidden_tail = f"/{REDACTED}" if tail not in ("", "/") else ""
    return scheme + (f"{REDACTED}@" if userinfo is not None else "") + host + hidden_tail


def redact_url_credentials(url: str) -> str:
    """The URL with its password (or a lone user name, often a token) and secret-named query values hidden.

    The path is kept. Examples: `https://ghp_abc@github.com/o/r` → `https://***@github.com/o/r`;
    `https://h/v1?key=AIza...&alt=json` → `https://h/v1?key=***&alt=json`.

    A database URL (its scheme, before any `+driver`, one of `DATABASE_SCHEMES`) is rendered by SQLAlchemy,
    `make_url(url).render_as_string(hide_password=True)`, whose mask is this module's `***` too:
    `postgresql://app:pw@db:5432/evals` → `postgresql://app:***@db:5432/evals`. There a lone user name is
    shown (`postgresql://app@db/evals`: an account, not a token), and the query is SQLAlchemy's (keys sorted,
    values quoted), its secret-named values hidden as above. A database URL that SQLAlchemy cannot parse, or
    with an `@` after its user info (an unquoted `@` in a password: where the password ends is a guess),
    follows the rule for other URLs, which takes the last `@` for the end of the user info.
    """
    database = _redact_database_url(url)
    if database is not None:
        return database
    scheme, userinfo, host, tail = _split_url(url)
    shown_user = ""
    if userinfo is not None:
        user, colon, _ = userinfo.partition(":")
        shown_user = f"{user}:{REDACTED}@" if colon and user else f"{REDACTED}@"
    path, question, query = tail.partition("?")
    return scheme + shown_user + host + path + question + _redact_query(query)


def _redact_database_url(url: str) -> str | None:
    """SQLAlchemy's rendering of `url` without its password (secret-named query values hidden), or None when
    `url` is no database URL, does not parse, or is ambiguous (see `redact_url_credentials`)."""
    scheme, separator, _ = url.partition("://")
    if not separator or scheme.split("+", 1)[0].lower() not in DATABASE_SCHEMES:
        return None
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
        rendered = parsed.render_as_string(hide_password=True)
    except (ArgumentError, ValueError):  # ValueError: a port that is no number
        return None
    has_user_info = parsed.username is not None or parsed.password is not None
    if has_user_info and "@" in f"{parsed.host or ''}/{parsed.database or ''}":
        return None
    before, question, query = rendered.partition("?")
    return before + question + _redact_query(query)


def _redact_query(query: str) -> str:
    """A URL's query (after `?`) with the values of secret-named parameters hidden."""
    return "&".join(_redact_query_pair(pair) for pair in query.split("&")) if query else query


def _split_url(url: str) -> tuple[str, str | None, str, str]:
    """(`scheme://` or "", the user info or None, `host[:port]`, the rest: path, query, fragment)."""
    scheme, separator, rest = url.partition("://")
    prefix = scheme + separator if separator else ""
    rest = rest if separator else url
    before_query = re.split(r"[?#]", rest, maxsplit=1)[0]
    userinfo: str | None = None
    if "@" in before_query:
        userinfo, _, _ = before_query.rpartition("@")
        rest = rest[len(userinfo) + 1 :]
    end = next((i for i, ch in enumerate(rest) if ch in "/?#"), len(rest))
    host, tail = rest[:end], rest[end:]
    return prefix, userinfo, host, tail


def _redact_query_pair(pair: str) -> str:
    name, equals, _ = pair.partition("=")
    return f"{name}={REDACTED}" if equals and _is_secret_name(name) else pair


# ------------------------------------------------------------------------------------------------------ text
def redact_text(text: str) -> str:
    """Free text (a log line, an error message) with every secret it may hold replaced (see the module doc).

    Examples: `Client error '404' for url 'https://hooks.slack.com/services/T/B/X'` →
    `Client error '404' for url 'https://hooks.slack.com/***'`; `Authorization: Bearer abc.def` →
    `Authorization: Bearer ***`; `api_key=AIzaSy...` → `api_key=***`.
    """
    text = _URL.sub(_redact_url_match, text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    text = _KEY_HEADER.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
    text = _KEY_VALUE.sub(lambda m: f"{m.group(1)}={REDACTED}", text)
    text = _QUOTED_PAIR.sub(_redact_quoted_pair, text)
    text = _redact_token_shapes(text)
    return _redact_known_values(text)


def _redact_url_match(match: re.Match[str]) -> str:
    url = match.group(0)
    stripped = url.rstrip(_URL_TRAILING)
    return redact_url(stripped) + url[len(stripped) :]


def _redact_quoted_pair(match: re.Match[str]) -> str:
    """`"api_key": "value"` (or with single quotes) with the value replaced."""
    name_quote, name, colon, value_quote = match.group(1, 2, 3, 4)
    return f"{name_quote}{name}{name_quote}{colon}{value_quote}{REDACTED}{value_quote}"


def _redact_token_shapes(text: str) -> str:
    for pattern in _TOKEN_SHAPES:
        text = pattern.sub(rf"\g<1>{REDACTED}", text)
    return text


def _redact_known_values(text: str) -> str:
    """Every secret this process resolved and every secret-named environment variable's value, verbatim."""
    with _resolved_lock:
        known = set(_resolved)
    known |= {
        value
        for name, value in os.environ.items()
        if _SECRET_ENV_NAME.search(name) and len(value) >= _MIN_SECRET_LENGTH and not is_reference(value)
    }
    for value in sorted(known, key=len, reverse=True):
        text = text.replace(value, REDACTED)
    return text


# ---------------------------------------------------------------------------------------------------- configs
def redact_config(data: dict[str, Any]) -> dict[str, Any]:
    """A copy of a config dump (an `EvalConfig`'s, snake_case or camelCase) fit to store and show.

    - a key whose name holds `webhook` (`regression.alert_webhook`): a literal URL as `redact_url`;
    - a key whose name says secret (`*api_key*`, `*token*`, `*secret*`, `*password*`, `*credential*`, `key`,
      `auth`...): every text value under it becomes `***` (numbers and booleans, e.g. `max_tokens`, are kept);
    - any other text: URLs' credentials hidden (`redact_url_credentials`, paths kept: a rubric or a prompt keeps
      its meaning) and well-known token shapes (`AIza...`, `sk-...`) replaced.

    References (`env:NAME`, `${NAME}`, `prefect-secret:BLOCK`) are kept everywhere. Redacting twice changes
    nothing more.
    """
    return {key: _redact_value(value, _rule_for(key, _plain_text)) for key, value in data.items()}


def _rule_for(key: object, inherited: Callable[[str], str]) -> Callable[[str], str]:
    """How the text under `key` is redacted: webhook, secret, or the rule of the enclosing key."""
    name = re.sub(r"[^a-z0-9]", "", str(key).lower())
    if "webhook" in name:
        return redact_url
    if _is_secret_name(str(key)):
        return lambda _: REDACTED
    return inherited


def _redact_value(value: Any, rule: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return value if is_reference(value) else rule(value)
    if isinstance(value, dict):
        return {key: _redact_value(item, _rule_for(key, rule)) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_redact_value(item, rule) for item in value]
    return value


def _plain_text(text: str) -> str:
    """An ordinary config text: only credentials inside it are hidden."""
    return _redact_known_values(_redact_token_shapes(_URL.sub(lambda m: redact_url_credentials(m.group(0)), text)))


def _is_secret_name(name: str) -> bool:
    normalized = re.sub(r"[^a-z0-9]", "", name.lower())
    return normalized in _SECRET_NAMES or any(part in normalized for part in _SECRET_NAME_PARTS)


def _config_parameter(config: str | dict[str, Any] | None) -> str | dict[str, Any] | None:
    return redact_config(config) if isinstance(config, dict) else config


def _url_parameter(url: str | None) -> str | None:
    return redact_url_credentials(url) if url else url


ConfigParameter = Annotated[str | dict[str, Any] | None, PlainSerializer(_config_parameter, when_used="json")]
"""A flow parameter holding a config (path or dict): its JSON, which Prefect stores, has the secrets redacted;
the flow itself gets the value as given."""
UrlParameter = Annotated[str | None, PlainSerializer(_url_parameter, when_used="json")]
"""A flow parameter holding a URL: its JSON, which Prefect stores, has no password."""
