"""Revision scripts, oldest first (`0001_first_release.py` is the schema of the first release)."""
