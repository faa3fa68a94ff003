"""The processes agent-eval keeps for the user and the process it runs in: the local Prefect server (`server`
starts it, `prefect_server` is its process, which stops itself when idle), background processes and their
state files (`background`), the machine-wide list of them whatever their home (`registry`), the warm process
(`warm`), the run's live progress (`progress`), the program's own signal handler (`signals`) and whether a
process lives (`processes`).

Internal: the interface is the `agent-eval` command; this package's names may change between releases.
It imports no stage of the evaluation (only `agent_eval.errors` and `agent_eval.settings`), so every stage may
ask it whether a process lives or report its progress.
"""
