"""A real local Prefect stack for end-to-end tests: `prefect server start`, a work pool, deployments from
deployments/prefect.yaml, a process worker; everything stopped by process group at the end."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import REPO_ROOT

POOL = "agent-eval-pool"
PREFECT = str(Path(sys.executable).with_name("prefect"))


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PrefectStack:
    """A Prefect server and worker in their own process groups, with an isolated PREFECT_HOME."""

    home: Path
    env: dict[str, str] = field(default_factory=dict)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @classmethod
    def start(cls, home: Path, extra_env: Mapping[str, str]) -> PrefectStack:
        """Start the server and wait for `/api/health` (at most 90 s)."""
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
        env |= {
            "PREFECT_HOME": str(home / "prefect"),
            "PREFECT_API_URL": f"http://127.0.0.1:{port}/api",
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_LOCAL_STORAGE_PATH": str(home / "prefect" / "storage"),
            **extra_env,
        }
        stack = cls(home=home, env=env)
        stack.spawn([PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)], "server.log")
        stack.wait_healthy(env["PREFECT_API_URL"] + "/health", timeout=90)
        return stack

    def spawn(
        self, command: list[str], log_name: str, extra_env: Mapping[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        """A background process in a new session (so its whole group can be stopped), logging to a file; with
        `extra_env` over this stack's environment (e.g. a worker's own HOME)."""
        log = (self.home / log_name).open("wb")
        env = {**self.env, **(extra_env or {})}
        process = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)  # fmt: skip
        self.processes.append(process)
        return process

    def run(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        """A `prefect` CLI command, from the repository root, in this stack's environment."""
        return subprocess.run([PREFECT, *args], cwd=REPO_ROOT, env=self.env, capture_output=True, text=True,
                              timeout=timeout, check=False)  # fmt: skip

    def wait_healthy(self, url: str, timeout: float) -> None:
        """Poll the server's health endpoint until it answers."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.5)
        raise TimeoutError(f"the Prefect server did not answer {url} within {timeout} s; see {self.home}/server.log")

    def stop(self) -> None:
        """Workers first (SIGINT, then SIGTERM), then the server; by process group, waiting for each."""
        for process in reversed(self.processes):
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
                if process.poll() is not None:
                    break
                os.killpg(process.pid, sig)
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    continue
