"""The store's schema as the first release created it (`create_all`, no `alembic_version`), as raw DDL.

Only two things differ between the dialects: the timestamp type and the auto-increment id.
"""

from __future__ import annotations

from sqlalchemy import Connection

DDL = """
CREATE TABLE runs (
    flow_run_id VARCHAR, agent_reference VARCHAR NOT NULL, agent_fingerprint VARCHAR NOT NULL,
    config_hash VARCHAR NOT NULL, num_runs INTEGER NOT NULL, status VARCHAR NOT NULL,
    started_at {timestamp} NOT NULL, completed_at {timestamp}, total INTEGER NOT NULL, passed INTEGER NOT NULL,
    failed INTEGER NOT NULL, pass_rate FLOAT NOT NULL, id VARCHAR(64) NOT NULL, eval_set_ids JSON, config JSON,
    summary JSON, PRIMARY KEY (id)
);
CREATE INDEX ix_runs_agent_reference ON runs (agent_reference);
CREATE INDEX ix_runs_flow_run_id ON runs (flow_run_id);
CREATE INDEX ix_runs_status ON runs (status);
CREATE TABLE case_results (
    id {serial} NOT NULL, run_id VARCHAR(64) NOT NULL, eval_set_id VARCHAR NOT NULL, eval_id VARCHAR NOT NULL,
    run_index INTEGER NOT NULL, status INTEGER NOT NULL, failure INTEGER NOT NULL, error VARCHAR,
    latency_seconds FLOAT NOT NULL, attempts INTEGER NOT NULL, actual_invocations JSON, token_usage JSON,
    PRIMARY KEY (id), UNIQUE (run_id, eval_set_id, eval_id, run_index), FOREIGN KEY(run_id) REFERENCES runs (id)
);
CREATE INDEX ix_case_results_eval_id ON case_results (eval_id);
CREATE INDEX ix_case_results_eval_set_id ON case_results (eval_set_id);
CREATE INDEX ix_case_results_run_id ON case_results (run_id);
CREATE TABLE metric_results (
    id {serial} NOT NULL, run_id VARCHAR(64) NOT NULL, case_result_id INTEGER NOT NULL,
    metric_name VARCHAR NOT NULL, score FLOAT, status INTEGER NOT NULL, threshold FLOAT, explanation VARCHAR,
    error VARCHAR, per_invocation JSON, details JSON, PRIMARY KEY (id), FOREIGN KEY(run_id) REFERENCES runs (id),
    FOREIGN KEY(case_result_id) REFERENCES case_results (id)
);
CREATE INDEX ix_metric_results_case_result_id ON metric_results (case_result_id);
CREATE INDEX ix_metric_results_metric_name ON metric_results (metric_name);
CREATE INDEX ix_metric_results_run_id ON metric_results (run_id);
"""

ROWS = """
INSERT INTO runs (id, flow_run_id, agent_reference, agent_fingerprint, config_hash, num_runs, status, started_at,
    completed_at, total, passed, failed, pass_rate, eval_set_ids, config, summary)
VALUES ('old-run', NULL, 'pkg.mod:agent', 'abc123', 'cfg', 1, 'completed', '2026-01-05 10:00:00',
    '2026-01-05 10:00:02', 1, 1, 0, 1.0, '["set"]', '{}',
    '{"total": 1, "passed": 1, "failed": 0, "not_evaluated": 0, "pass_rate": 1.0, "avg_scores": {"m": 0.75},
      "agent_failures": 0, "mean_latency_seconds": 0.5}');
INSERT INTO case_results (run_id, eval_set_id, eval_id, run_index, status, failure, error, latency_seconds,
    attempts, actual_invocations, token_usage)
VALUES ('old-run', 'set', 'a', 0, 1, 0, NULL, 0.5, 1, '[]', NULL);
INSERT INTO metric_results (run_id, case_result_id, metric_name, score, status, threshold, explanation, error,
    per_invocation, details)
VALUES ('old-run', 1, 'm', 0.75, 1, 0.5, 'fine', NULL, '[]', '{}');
"""


def create_first_release_store(connection: Connection) -> None:
    """The first release's tables with one run, one case result and one metric result."""
    postgres = connection.dialect.name == "postgresql"
    ddl = DDL.format(
        timestamp="TIMESTAMP WITH TIME ZONE" if postgres else "DATETIME", serial="SERIAL" if postgres else "INTEGER"
    )
    if postgres:
        connection.exec_driver_sql("SET TIME ZONE 'UTC'")  # the timestamps below are UTC
    for statement in (ddl + ROWS).split(";"):
        if statement.strip():
            connection.exec_driver_sql(statement)  # raw: no parsing of ':' in the JSON and times
