"""Judges you can prove: human labels of judged items, the judges' agreement with them, re-checks and drift.

Internal: the public API is `agent_eval`'s; this package's names may change between releases.

- `labels_io`: labels from and to CSV or JSONL files (`agent-eval labels import/export`);
- `agreement`: per judged metric and judge identity, agreement with the labels (`agent-eval judges`);
- `page`: the local labelling page (`agent-eval label RUN`).
"""
