"""The results model every stage shares, and its pure companions: the model (`model`: `MetricResult`,
`CaseResult`, `RunReport`), aggregation into a report (`aggregate`), run statistics (`stats`), the outage rule
(`outage`), tool calls as plain values (`tool_calls`) and the configs a stored run was scored with
(`run_configs`). It imports no stage: metrics build its results, the store saves them, renderers read them.

Internal: the public API is `agent_eval`'s; this package's names may change between releases.
`from agent_eval.results import RunReport` keeps working; `from agent_eval import RunReport` is the public path.
"""

from __future__ import annotations

from agent_eval.results.model import CacheSource as CacheSource
from agent_eval.results.model import CaseResult as CaseResult
from agent_eval.results.model import InvocationScore as InvocationScore
from agent_eval.results.model import JsonFormat as JsonFormat
from agent_eval.results.model import MetricResult as MetricResult
from agent_eval.results.model import RunReport as RunReport
from agent_eval.results.model import RunSummary as RunSummary
