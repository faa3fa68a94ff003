"""Helpers of `benchmarks/bench_vs_adk.py` (agent-eval against ADK's own `adk eval`).

- `race_agent/`: the ADK agent folder both tools evaluate (imports only google-adk: it runs in ADK's venv too).
- `evalsets`: generated ADK eval sets and `test_config.json` files.
- `processes`: whole-process runs with wall time and peak RSS, Prefect servers, the ADK venv.
- `floors`: the baselines of scenario 5 (a bare Prefect flow of no-op tasks; the race agent alone).
- `fake_judge`: the 1.5 s fake Gemini judge of scenario 7 (over the project's tests/fakes/gemini_server.py).
"""
