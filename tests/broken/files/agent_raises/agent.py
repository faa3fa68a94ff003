"""An agent file that fails while it is imported: the reference must be rejected before anything runs."""

raise RuntimeError("agent setup failed: MODEL_API_KEY is not set")
