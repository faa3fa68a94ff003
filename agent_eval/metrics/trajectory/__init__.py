"""The trajectory family: tool calls against the expected ones, by ADK's rule (`adk`), Vertex AI's (`vertex`),
ADK-Rust's (`rust`) and this project's optimal alignment (`tool_match`, engine in `matching`).

Internal: the public API is `agent_eval`'s; this package's names may change between releases."""
