"""Revision scripts, oldest first (`0001_first_release.py` is the schema of the first release).

Internal: the public API is `agent_eval`'s; this package's names may change between releases."""
