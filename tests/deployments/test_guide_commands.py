"""The deployments guide's commands, run as they are written (`bash -euo pipefail`, from the repository root)
while another socket holds port 4200: their server runs on a free port of its own, the nightly completes on it
and stores its 33 case results, and the guide's own `kill` line leaves no server or worker behind.

The first test is `e2e` (`pytest -m e2e`, about 30-60 s); the second, step 1 alone with its port taken, takes
seconds.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from sqlmodel import Session, select

from agent_eval.store import Run, get_engine
from tests.conftest import REPO_ROOT

GUIDE = REPO_ROOT / "deployments" / "README.md"
VENV_BIN = Path(sys.executable).parent


def guide_commands() -> str:
    """The first ```bash block after the guide's heading "## The commands"."""
    section = GUIDE.read_text(encoding="utf-8").split("\n## The commands", 1)[1]
    match = re.search(r"^```bash\n(.*?)^```", section, re.M | re.S)
    assert match, "no ```bash block after '## The commands' in deployments/README.md"
    return match.group(1)


@contextlib.contextmanager
def port_4200_held() -> Iterator[None]:
    """Port 4200 taken for the whole block: by a listening socket of ours if it is free, else by whoever has it."""
    with socket.socket() as sock:
        with contextlib.suppress(OSError):  # already taken: by another server, the case under test anyway
            sock.bind(("127.0.0.1", 4200))
            sock.listen()
        yield


def processes_under(prefect_home: Path) -> list[psutil.Process]:
    """The live processes whose environment has this PREFECT_HOME (the block's server, worker and flow runs)."""
    found = []
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if process.status() != psutil.STATUS_ZOMBIE and process.environ().get("PREFECT_HOME") == str(prefect_home):
                found.append(process)
    return found


def _wait_gone(prefect_home: Path, timeout: float) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout
    while (left := processes_under(prefect_home)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


def _stop(bash: subprocess.Popen[bytes], prefect_home: Path) -> None:
    """Whatever the block left: its process group, then any process of its PREFECT_HOME (SIGTERM, then SIGKILL)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(bash.pid, sig)
        for process in processes_under(prefect_home):
            with contextlib.suppress(psutil.Error):
                process.send_signal(sig)
        if not _wait_gone(prefect_home, timeout=10):
            break
    with contextlib.suppress(subprocess.TimeoutExpired):
        bash.wait(timeout=10)


@pytest.mark.e2e
def test_the_guides_commands_run_on_a_free_port_while_another_server_holds_4200(tmp_path: Path) -> None:
    script = tmp_path / "guide.sh"
    script.write_text(guide_commands() + 'echo "PORT=$PORT"\n', encoding="utf-8")
    prefect_home, logs = tmp_path / "prefect", tmp_path / "tmp"
    logs.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "AGENT_EVAL_"))}
    env |= {
        "PATH": f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",  # `prefect` and `python`: the venv's
        "HOME": str(tmp_path / "home"),
        "PREFECT_HOME": str(prefect_home),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "AGENT_EVAL_HOME": str(tmp_path / "ae"),
        "TMPDIR": str(logs),  # the block's `mktemp` logs
    }
    output = tmp_path / "output.log"
    with port_4200_held(), output.open("wb") as out:
        bash = subprocess.Popen(["bash", "-euo", "pipefail", str(script)], cwd=REPO_ROOT, env=env,
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)  # fmt: skip
        try:
            returncode = bash.wait(timeout=240)
            left_by_the_guide = _wait_gone(prefect_home, timeout=20)  # its `kill` line stopped the server, worker
        finally:
            _stop(bash, prefect_home)

    printed = output.read_text(encoding="utf-8", errors="replace")
    assert returncode == 0, printed[-4000:] + "".join(log.read_text(errors="replace")[-3000:] for log in logs.iterdir())
    [port] = re.findall(r"^PORT=(\d+)$", printed, re.M)
    assert int(port) != 4200
    assert "Completed" in printed
    with Session(get_engine(f"sqlite:///{tmp_path / 'ae' / 'agent_eval.db'}")) as session:
        run = session.exec(select(Run)).one()
        assert (run.status, run.total) == ("completed", 33)
    assert left_by_the_guide == []
    assert processes_under(prefect_home) == []


def test_the_guides_first_step_fails_loudly_when_its_port_is_taken(tmp_path: Path) -> None:
    """Step 1 with its port taken (as if by a race after it was chosen): the server exits, the step prints its log
    and ends the script non-zero; nothing after it runs against whatever holds the port."""
    step_1 = guide_commands().split("\n\n", 1)[0]
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        script = re.sub(r"^PORT=.*$", f"PORT={port}", step_1, count=1, flags=re.M) + "\necho step 2\n"
        env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
        env |= {"PATH": f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}", "TMPDIR": str(tmp_path)}
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=REPO_ROOT, env=env,
                              capture_output=True, text=True, timeout=60, check=False)  # fmt: skip

    assert done.returncode != 0
    assert f"Port {port} is already in use" in done.stdout
    assert "step 2" not in done.stdout
