"""Plan: what an evaluation is asked to do (`request.EvalRequest`, the flow's parameters), the checked plan built
from it before anything runs (`eval_plan.prepare` → `EvalPlan`: eval sets × cases × run indexes, one scoring batch
per config × criterion), and plans built from a stored run (`stored`: rerun, rescore).

Internal: the public API is `agent_eval`'s; this package's names may change between releases.
"""
