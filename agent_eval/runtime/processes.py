"""Questions about processes, answered by psutil on Linux, macOS and Windows alike: whether one lives (one rule
for the run history, the clean-up of recorded input spills and the stop sequences of background processes),
its command line, whether it listens on a port, its descendants, the members of a process group.

Internal: the public API is `agent_eval`'s; this module's names may change between releases.

psutil is imported on first use: `import agent_eval` and `agent-eval --help` do not pay its import (~25 ms).
"""

from __future__ import annotations

import os

__all__ = ["command_line", "descendants", "group_members", "listens_on", "process_alive"]


def process_alive(pid: int) -> bool:
    """Whether `pid` runs and is not a zombie (a zombie has exited: gone for all purposes; its parent reaps it).
    Another user's process counts as alive (psutil's `AccessDenied`); no pid below 1 is a process."""
    import psutil

    if pid < 1:
        return False
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:  # and its subclass ZombieProcess (macOS answers so for a zombie)
        return False
    except psutil.AccessDenied:
        return True  # someone else's process, alive


def command_line(pid: int) -> list[str] | None:
    """`pid`'s arguments, the program first; None when they cannot be read (no such process any more, or one
    the system will not show us: `NoSuchProcess`, `AccessDenied`). A zombie's is `[]`."""
    import psutil

    try:
        return psutil.Process(pid).cmdline()
    except psutil.ZombieProcess:  # it has exited: no command any more (as Linux's empty cmdline says)
        return []
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def listens_on(pid: int, port: int) -> bool:
    """Whether `pid` holds a TCP socket (IPv4 or IPv6) listening on `port`. False when it does not, is gone
    (`NoSuchProcess`) or is not ours to look into (`AccessDenied`)."""
    import psutil

    try:
        connections = psutil.Process(pid).net_connections(kind="inet")
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False
    return any(c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port for c in connections)


def descendants(pid: int | None = None) -> list[int]:
    """Every descendant of `pid` (default: this process), each after its parent (a zombie may be among them:
    signalling it is harmless), none when `pid` is gone. A pid reused by a process younger than
    its recorded parent is left out (psutil's `children(recursive=True)`). None either when `pid` is not
    ours to look into (`AccessDenied`)."""
    import psutil

    try:
        return [child.pid for child in psutil.Process(pid or os.getpid()).children(recursive=True)]
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return []


def group_members(pgid: int) -> list[int]:
    """The pids of the processes in process group `pgid` (POSIX)."""
    import psutil

    members = []
    for pid in psutil.pids():
        try:
            if os.getpgid(pid) == pgid:
                members.append(pid)
        except OSError:  # gone meanwhile, or hidden
            continue
    return members
