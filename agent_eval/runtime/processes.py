"""Whether a process lives: one rule for the run history (a run whose process died), the clean-up of recorded
input spills, and the stop sequences of background processes.

Internal: the public API is `agent_eval`'s; this module's names may change between releases.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = ["process_alive"]


def process_alive(pid: int) -> bool:
    """Whether `pid` runs and is not a zombie (a zombie has exited: gone for all purposes; its parent reaps it).
    Another user's process counts as alive."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process, alive
    with contextlib.suppress(OSError, IndexError):  # no /proc: the signal test above is all there is
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return True
