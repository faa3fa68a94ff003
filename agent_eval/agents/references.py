"""The agent reference forms, in a module that imports nothing (the CLI's `--help` shows them)."""

__all__ = ["AGENT_REFERENCE_FORMS"]

AGENT_REFERENCE_FORMS = """\
adk-api+http://HOST:PORT/APP    app APP of an ADK api_server (`adk api_server`; adk-api+https:// too)
http://HOST/PATH                a JSON endpoint: POST {prompt, session_id, user_id, state} per turn (https too)
path/to/agent_folder            the folder's agent.py and its root_agent (or app), as `adk eval` finds it
path/to/file.py:ATTR            an attribute of a Python file
package.module:ATTR             an attribute of an importable module (the current folder is importable)
replay                          no agent: the cases' recorded responses are scored as they are"""
"""Every accepted `--agent` reference form, one per line (for the CLI help); an ATTR is an `Agent`, an ADK
agent or `App`, or a plain function `fn(message[, session])`."""
