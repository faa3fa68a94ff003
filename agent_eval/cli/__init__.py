"""The `agent-eval` command line: the parser, one function per command (each calls the public API only), the
`server` commands, and what the process does on SIGINT / SIGTERM.

Internal: the interface is the `agent-eval` command; this package's names may change between releases.
`main` is the console script's entry point (`agent_eval.cli:main`); `python -m agent_eval.cli` runs it too.
Modules: `main` (the commands), `parser` (every option and help text), `values` (option values), `recorded`
(recorded traffic's options and `import-sessions`), `server` (`agent-eval server`), `shutdown` (signals).
"""

from __future__ import annotations

from agent_eval.cli.main import main

__all__ = ["main"]
