"""The trajectory family: tool calls against the expected ones, by ADK's rule (`adk`), Vertex AI's (`vertex`),
ADK-Rust's (`rust`) and this project's optimal alignment (`tool_match`, engine in `matching`)."""
