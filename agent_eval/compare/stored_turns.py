"""The seconds of every stored turn of a run, read by the database without loading its invocations.

A baseline is read for a comparison without its case runs' invocations (`load_report(details=False)`), and a
run evaluated in parts holds summaries only: the per-turn latency (`agent_eval.compare.efficiency`) comes from
here instead. The database walks each case run's stored invocations (`case_results.actual_invocations`, a JSON
list) and returns only each turn's `duration`: SQLite's `json_each`, PostgreSQL's `json_array_elements`; a turn
without a duration (untimed) is left out.

Internal: the public API is `agent_eval`'s; this module's names may change between releases.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.engine import Engine

from agent_eval.compare.efficiency import CaseRunKey

__all__ = ["stored_turn_seconds"]

_SQLITE = text(
    "SELECT c.eval_set_id, c.eval_id, c.run_index, json_extract(t.value, '$.duration') "
    "FROM case_results AS c, json_each(CASE WHEN json_type(c.actual_invocations) = 'array' "
    "THEN c.actual_invocations ELSE '[]' END) AS t "
    "WHERE c.run_id = :run_id AND t.type = 'object' ORDER BY c.id, t.key"
)
_POSTGRES = text(
    "SELECT c.eval_set_id, c.eval_id, c.run_index, t.value ->> 'duration' "
    "FROM case_results AS c CROSS JOIN LATERAL json_array_elements(CASE WHEN json_typeof(c.actual_invocations) "
    "= 'array' THEN c.actual_invocations ELSE '[]'::json END) WITH ORDINALITY AS t(value, n) "
    "WHERE c.run_id = :run_id AND json_typeof(t.value) = 'object' ORDER BY c.id, t.n"
)


def stored_turn_seconds(run_id: str, engine: Engine) -> dict[CaseRunKey, list[float]]:
    """Each stored case run of the run with its timed turns' seconds, in turn order.

    Args:
        run_id: the stored run.
        engine: its store (SQLite or PostgreSQL).

    Returns:
        `{(eval_set_id, eval_id, run_index): [seconds, ...]}`; a case run without a timed turn maps to `[]` or is
        missing (no turn stored), an unknown run gives `{}`.
    """
    query = _POSTGRES if engine.dialect.name == "postgresql" else _SQLITE
    seconds: dict[CaseRunKey, list[float]] = {}
    with engine.connect() as connection:
        for eval_set_id, eval_id, run_index, duration in connection.execute(query, {"run_id": run_id}):
            turns = seconds.setdefault((eval_set_id, eval_id, run_index), [])
            if duration is not None:
                turns.append(float(duration))
    return seconds
