"""What both ends of the warm process share: the messages, the socket's place, and the facts they compare.

Internal: the interface is the `agent-eval` command; this module's names may change between releases.

A request is a 4-byte length and JSON (`argv`, `cwd`, `env`, `path`, `code`), with the client's stdin, stdout
and stderr riding on its first bytes. Every later message, both ways, is one JSON line: `{"cold": reason}` and
`{"exit": code}` to the client, `{"signal": number}` to the child.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from hashlib import sha256
from pathlib import Path
from typing import Any

from agent_eval import settings as settings_package
from agent_eval.runtime.background import in_ci
from agent_eval.settings import home_dir, warm_allowed

__all__ = [
    "STDIO",
    "WARM_ENV",
    "code_fingerprint",
    "in_warm_child",
    "mark_warm_child",
    "messages",
    "receive_request",
    "send",
    "send_request",
    "settled_env",
    "socket_path",
    "warm_wanted",
]

WARM_ENV = settings_package.WARM_ENV
STDIO = (0, 1, 2)
_SETTLED_ENV_PREFIXES = ("PREFECT_", "OTEL_", "ADK_", "GOOGLE_GENAI_", "GOOGLE_CLOUD_", "PYTHON", "LANG", "LC_")
_HEADER = struct.Struct("!I")
_ROLE = {"warm_child": False}


def in_warm_child() -> bool:
    """Whether this process is a run forked by the warm process."""
    return _ROLE["warm_child"]


def mark_warm_child() -> None:
    """A forked child's first step: from now on this process is a run, not the warm process."""
    _ROLE["warm_child"] = True


def warm_wanted() -> bool:
    """Whether runs may use (and start) a warm process: not in CI, not with `AGENT_EVAL_WARM=0` (or `false`,
    `no`, `off`); a value that is no yes/no word runs the command in its own process, whose checks report it in
    one line. Read without pydantic: the client asks before anything is imported."""
    return warm_allowed() and not in_ci()


def code_fingerprint() -> list[Any]:
    """What the warm process's imports depend on: the venv, the newest agent-eval source and the installed
    packages' folder (pip changes its mtime on every install and uninstall)."""
    package = Path(__file__).resolve().parents[1]
    newest = max(path.stat().st_mtime_ns for path in package.rglob("*.py"))
    site = Path(sysconfig.get_paths()["purelib"])
    return [sys.prefix, newest, str(site), site.stat().st_mtime_ns if site.exists() else 0]


def settled_env(env: dict[str, str]) -> dict[str, str]:
    """The variables a module may read at import: a client whose values differ runs cold."""
    return {name: value for name, value in env.items() if name.startswith(_SETTLED_ENV_PREFIXES)}


def socket_path() -> Path:
    """Beside the state file when the path fits a Unix socket's 107 bytes, else in a private temporary folder
    named by the user and a digest of `$AGENT_EVAL_HOME`."""
    beside = home_dir() / "warm.sock"
    if len(str(beside)) < 100:
        return beside
    digest = sha256(str(home_dir().resolve()).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"agent-eval-{os.getuid()}" / f"{digest}.sock"


def send(connection: socket.socket, message: dict[str, Any]) -> None:
    """One message as a JSON line (answers, exit codes, passed-on signals)."""
    connection.sendall(json.dumps(message).encode() + b"\n")


def send_request(connection: socket.socket, request: dict[str, Any]) -> None:
    """The request: a 4-byte length, then JSON; the client's stdin, stdout and stderr ride on its first bytes."""
    data = json.dumps(request).encode()
    framed = _HEADER.pack(len(data)) + data
    sent = socket.send_fds(connection, [framed], list(STDIO))
    if sent < len(framed):  # sendall(b"") still calls send(): EPIPE once the warm process has answered and closed
        connection.sendall(framed[sent:])


def receive_request(connection: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """The request and its three descriptors, read exactly (what follows it belongs to the child).

    Raises:
        ValueError: not a whole request with its three descriptors.
    """
    chunk, fds, _, _ = socket.recv_fds(connection, _HEADER.size, len(STDIO))
    try:
        if len(fds) != len(STDIO) or len(chunk) < _HEADER.size:
            raise ValueError("a request without its three descriptors")
        (length,) = _HEADER.unpack(chunk)
        data = bytearray()
        while len(data) < length:
            more = connection.recv(length - len(data))
            if not more:
                raise ValueError("a truncated request")
            data += more
        return json.loads(bytes(data)), list(fds)
    except ValueError:
        for fd in fds:
            os.close(fd)
        raise


def messages(connection: socket.socket) -> Iterator[dict[str, Any]]:
    """JSON-line messages until the other end closes, resets the connection (a killed client whose socket held
    unread data) or sends something unreadable."""
    with connection.makefile("rb") as reader:
        while True:
            try:
                line = reader.readline()
                if not line:
                    return
                yield json.loads(line)
            except (OSError, ValueError):
                return
