"""The processes agent-eval keeps for the user and the process it runs in: the local Prefect server
(`server`), background processes and their state files (`background`), the warm process (`warm`), the run's
live progress (`progress`), the program's own signal handler (`signals`) and whether a process lives
(`processes`).

Internal: the interface is the `agent-eval` command; this package's names may change between releases.
It imports no stage of the evaluation (only `agent_eval.errors` and `agent_eval.settings`), so every stage may
ask it whether a process lives or report its progress.
"""
