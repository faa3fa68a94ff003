"""Broken-input corpus: every malformed eval file, config or agent reference is rejected with exit code 2."""
