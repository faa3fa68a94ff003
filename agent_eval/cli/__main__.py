"""`python -m agent_eval.cli`: the `agent-eval` command."""

import sys

from agent_eval.cli.main import main

sys.exit(main())
