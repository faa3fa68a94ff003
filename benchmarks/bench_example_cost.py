"""What the bundled example costs with its judged config, and how close `--estimate` came (issue 31).

The run: `agent_eval.evaluate` on examples/home_automation (all its cases, the bundled demo agent) with
examples/home_automation/test_config_judged.json (four judged criteria on gemini-2.5-flash, 3 samples each),
`--num-runs` runs per case (default 1), the judges answered by the fake Gemini server of the tests
(`tests/fakes/gemini_server.py` with `tests/flows/judge_scripts.JudgeRouter`, through the real google-genai
client). There is no real Gemini here, so each fake answer reports tokens as a real one would be counted,
estimated at `CHARS_PER_TOKEN` characters per token: input = the system instruction and the prompt, output = the
answer's text. Prices: genai-prices' table for gemini-2.5-flash.

What is printed: the judged run's tokens and cost (summary lines), then the estimate for the same run from the
store (`agent_eval.estimate`), then the actual cost of that same run made again with the judge cache emptied
(a cached judge answer costs nothing; the estimate assumes none is cached).
The demo agent is plain Python and calls no model: its cost is not part of the figures.

Usage (from the repository root):
    python benchmarks/bench_example_cost.py [--num-runs 1]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.fakes.gemini_server import CREDENTIAL_VARIABLES, FAKE_API_KEY, FakeGeminiServer  # noqa: E402
from tests.flows.judge_scripts import JudgeRouter  # noqa: E402

EXAMPLE = REPO / "examples" / "home_automation"
CHARS_PER_TOKEN = 4
AGENT_EVAL_MODE = ("final_response_match_v2", "rubric_based_final_response_quality_v1", "hallucinations_v1")


def counted(router: JudgeRouter) -> Any:
    """The router's answers, each reporting the tokens its request and text would have cost (module docstring)."""

    def answer(body: Any) -> Any:
        reply = router(body)
        if not isinstance(reply, dict) or "candidates" not in reply:
            return reply
        asked = json.dumps([body.get("systemInstruction"), body.get("contents")])
        said = "".join(part.get("text", "") for part in reply["candidates"][0]["content"]["parts"])
        prompt, output = len(asked) // CHARS_PER_TOKEN, max(1, len(said) // CHARS_PER_TOKEN)
        usage = {"promptTokenCount": prompt, "candidatesTokenCount": output, "totalTokenCount": prompt + output}
        return {**reply, "usageMetadata": usage, "modelVersion": "gemini-2.5-flash"}

    return answer


def judged_config() -> dict[str, Any]:
    config: dict[str, Any] = json.loads((EXAMPLE / "test_config_judged.json").read_text(encoding="utf-8"))
    for name in AGENT_EVAL_MODE:  # the router answers agent-eval's structured prompts
        config["criteria"][name]["judge_mode"] = "agent-eval"
    return config


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--num-runs", type=int, default=1, help="runs per case (default 1)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-example-cost-") as folder, FakeGeminiServer() as fake:
        for name in CREDENTIAL_VARIABLES:
            os.environ.pop(name, None)
        os.environ |= {"GOOGLE_API_KEY": FAKE_API_KEY, "AGENT_EVAL_GEMINI_BASE_URL": fake.base_url}
        os.environ["AGENT_EVAL_HOME"] = str(Path(folder) / "home")
        os.environ |= {"PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "WARNING", "PREFECT_LOGGING_TO_API_ENABLED": "false"}
        fake.respond_with(counted(JudgeRouter()))
        try:
            measure(Path(folder), args.num_runs, fake)
        finally:
            from agent_eval.runtime.server import stop_local_server

            stop_local_server()  # the local server the runs started lives in the temporary home
    return 0


def measure(folder: Path, num_runs: int, fake: FakeGeminiServer) -> None:
    """The judged run, the estimate of it, and the same run again with the judge cache emptied, printed."""
    from agent_eval import estimate, evaluate
    from agent_eval.render.console import cost_lines, token_lines
    from agent_eval.render.estimate import estimate_lines

    db_url = f"sqlite:///{folder / 'store.db'}"
    config = judged_config()
    first = evaluate(EXAMPLE, config=config, num_runs=num_runs, db_url=db_url)
    print(f"The bundled example, {first.summary.total} case runs, judged ({len(fake.requests)} judge calls):")
    print("\n".join(token_lines(first.summary.agent_tokens, first.summary.judge_tokens)))
    print("\n".join(cost_lines(first.summary.cost, first.summary.total)))
    print("\nThe estimate for the same run, from the store:")
    print("\n".join(estimate_lines(estimate(EXAMPLE, config=config, num_runs=num_runs, db_url=db_url))))
    shutil.rmtree(folder / "home" / "cache" / "judge", ignore_errors=True)  # every judge call made again
    second = evaluate(EXAMPLE, config=config, num_runs=num_runs, db_url=db_url)
    print("\nThe same run again, its judge cache emptied first (what the estimate projected):")
    print("\n".join(cost_lines(second.summary.cost, second.summary.total)))


if __name__ == "__main__":
    sys.exit(main())
