"""A run's tokens by model (issue 31, item 1) through the real flow: a GenaiAgent and an LLM judge, both the real
google-genai client over HTTP to the fake Gemini server. The run's summary has the agent's and the judges' calls
and tokens per model, the store and `show` give them back, the console prints them; a second evaluation that
reuses the answers (and finds the judge's answers cached) costs no tokens at all.

The agent is defined at import time with no client: it builds `genai.Client()` from the environment when a case
runs, so the fixture points GOOGLE_GEMINI_BASE_URL at the fake server first.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agent_eval import evaluate, rescore
from agent_eval.agents.genai_agent import GenaiAgent
from agent_eval.cli import main
from agent_eval.schema import ModelUsage, TokenUsage
from agent_eval.store import get_engine, load_report
from tests.fakes.gemini_server import CREDENTIAL_VARIABLES, FAKE_API_KEY, FakeGeminiServer, call_reply, text_reply

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_server", "quiet_cli_env")]

AGENT = "tests.flows.test_run_tokens:agent"
INSTRUCTION = "You take notes."
AGENT_VERSION = "agent-model-001"
JUDGE_VERSION = "judge-model-002"


def note(text: str) -> str:
    """Write a note."""
    return f"noted {text}"


agent = GenaiAgent(model="agent-model", instruction=INSTRUCTION, tools=[note])


def versioned(reply: dict[str, Any], version: str, **usage: int) -> dict[str, Any]:
    reply["modelVersion"] = version
    reply["usageMetadata"].update(usage)
    return reply


class Models:
    """Plays the agent's model (a `note` call, then a text with 3 thinking tokens) and safety_v1's judge; counts
    the calls of each."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Any:
        is_agent = INSTRUCTION in json.dumps(body.get("systemInstruction"))
        with self._lock:
            self.calls["agent" if is_agent else "judge"] += 1
        if not is_agent:
            verdict = json.dumps({"verdict": "safe", "rationale": "harmless"})
            return versioned(text_reply(verdict, prompt_tokens=100, output_tokens=7), JUDGE_VERSION)
        contents = body["contents"]
        if len(contents) == 1:
            message = contents[0]["parts"][0]["text"]
            return versioned(call_reply(("note", {"text": message}), prompt_tokens=40, output_tokens=6), AGENT_VERSION)
        return versioned(text_reply("Noted.", prompt_tokens=55, output_tokens=4), AGENT_VERSION, thoughtsTokenCount=3)


@pytest.fixture
def models(fake_gemini: FakeGeminiServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Models:
    """The fake server answering as `Models`; the agent's and the judge's clients pointed at it; a fresh judge
    cache."""
    for name in CREDENTIAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GOOGLE_API_KEY", FAKE_API_KEY)
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake_gemini.base_url)  # the agent's client
    monkeypatch.setenv("AGENT_EVAL_GEMINI_BASE_URL", fake_gemini.base_url)  # the judge's client
    monkeypatch.setenv("AGENT_EVAL_HOME", str(tmp_path / "home"))
    played = Models()
    fake_gemini.respond_with(played)
    return played


def write_eval_set(folder: Path) -> Path:
    """Two one-turn cases (fresh messages: no answer cached by another test), safety_v1 with 2 samples and a
    deterministic criterion."""
    token = uuid.uuid4().hex[:8]
    cases = [
        {
            "eval_id": name,
            "conversation": [
                {
                    "user_content": {"role": "user", "parts": [{"text": f"{name} {token}"}]},
                    "final_response": {"role": "model", "parts": [{"text": "Noted."}]},
                }
            ],
        }
        for name in ("milk", "eggs")
    ]
    path = folder / "notes.evalset.json"
    path.write_text(json.dumps({"eval_set_id": f"notes_{token}", "eval_cases": cases}), "utf-8")
    config = {
        "criteria": {
            "safety_v1": {
                "threshold": 0.5,
                "judge_model_options": {"judge_model": "gemini-2.5-flash", "num_samples": 2},
            },
            "response_match_score": 0.5,
        }
    }
    (folder / "test_config.json").write_text(json.dumps(config), "utf-8")
    return path


# 2 case runs x (a call: 40 in / 6 out, then a text: 55 in / 4 out / 3 thinking)
AGENT_TOKENS = {AGENT_VERSION: ModelUsage(calls=4, input_tokens=190, output_tokens=20, thinking_tokens=6)}
# 2 case runs x 1 turn x 2 samples, 100 in / 7 out each
JUDGE_TOKENS = {JUDGE_VERSION: ModelUsage(calls=4, input_tokens=400, output_tokens=28)}
TOKEN_LINES = [
    f"Tokens, agent: {AGENT_VERSION} 4 calls, 190 in / 20 out / 6 thinking",
    f"Tokens, judges: {JUDGE_VERSION} 4 calls, 400 in / 28 out",
]


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(list(argv))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err, captured.err
    return code, captured.out


def test_a_runs_agent_and_judge_tokens_are_summed_stored_shown_and_not_paid_again_on_reuse(
    models: Models, tmp_path: Path, sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    eval_file = write_eval_set(tmp_path)
    out_dir = tmp_path / "out"

    code, out = cli(
        capsys, "run", str(eval_file), "--agent", AGENT, "--db-url", sqlite_url, "-q", "--output-dir", str(out_dir)
    )

    assert code == 0, out
    assert models.calls == {"agent": 4, "judge": 4}
    assert [line for line in out.splitlines() if line.startswith("Tokens, ")] == TOKEN_LINES
    run_id = out.split()[2]  # "agent-eval run <id>  eval sets: ..."

    # the store: the summary and each case run's tokens
    stored = load_report(run_id, get_engine(sqlite_url))
    assert (stored.summary.agent_tokens, stored.summary.judge_tokens) == (AGENT_TOKENS, JUDGE_TOKENS)
    per_case = {case.eval_id: case.agent_run.token_usage for case in stored.cases}
    by_model = {AGENT_VERSION: ModelUsage(calls=2, input_tokens=95, output_tokens=10, thinking_tokens=3)}
    assert per_case == {  # GenaiAgent's totals: prompt in, candidates out (thoughts only per model)
        name: TokenUsage(input_tokens=95, output_tokens=10, total_tokens=105, by_model=by_model)
        for name in ("milk", "eggs")
    }
    safety = {
        case.eval_id: m.details["judge_tokens"]
        for case in stored.cases
        for m in case.metrics
        if m.metric_name == "safety_v1"
    }
    assert safety == {
        name: {JUDGE_VERSION: {"calls": 2, "input_tokens": 200, "output_tokens": 14}} for name in ("milk", "eggs")
    }
    assert all(
        "judge_tokens" not in m.details for case in stored.cases for m in case.metrics if m.metric_name != "safety_v1"
    )

    # `show --json`, `show` and report.json
    code, shown = cli(capsys, "show", run_id, "--json", "--db-url", sqlite_url)
    assert code == 0
    document = json.loads(shown)
    expected_json = (
        {
            AGENT_VERSION: {
                "calls": 4,
                "input_tokens": 190,
                "output_tokens": 20,
                "cached_input_tokens": None,
                "thinking_tokens": 6,
            }
        },
        {
            JUDGE_VERSION: {
                "calls": 4,
                "input_tokens": 400,
                "output_tokens": 28,
                "cached_input_tokens": None,
                "thinking_tokens": None,
            }
        },
    )
    assert (document["summary"]["agent_tokens"], document["summary"]["judge_tokens"]) == expected_json
    code, text = cli(capsys, "show", run_id, "--db-url", sqlite_url)
    assert [line for line in text.splitlines() if line.startswith("Tokens, ")] == TOKEN_LINES
    report_json = json.loads((out_dir / "report.json").read_text("utf-8"))
    assert (report_json["summary"]["agent_tokens"], report_json["summary"]["judge_tokens"]) == expected_json
    case_usage = report_json["cases"][0]["agent_run"]["token_usage"]["by_model"]
    assert case_usage == {
        AGENT_VERSION: {
            "calls": 2,
            "input_tokens": 95,
            "output_tokens": 10,
            "cached_input_tokens": None,
            "thinking_tokens": 3,
        }
    }

    # a second evaluation reusing the answers: no agent call, every judge answer from the judge cache
    again = evaluate(eval_file, agent=AGENT, db_url=sqlite_url, reuse_max_age_hours=1)

    assert models.calls == {"agent": 4, "judge": 4}
    assert again.summary.cached_case_runs == 2
    assert (again.summary.agent_tokens, again.summary.judge_tokens) == ({}, {})
    assert again.summary.judge.get("cache_hits") == 4 and not again.summary.judge.get("calls")
    reloaded = load_report(again.run_id, get_engine(sqlite_url))
    assert (reloaded.summary.agent_tokens, reloaded.summary.judge_tokens) == ({}, {})
    # the reused case runs keep the tokens their answers cost then
    assert [case.agent_run.token_usage.by_model for case in reloaded.cases if case.agent_run.token_usage] == [
        {AGENT_VERSION: ModelUsage(calls=2, input_tokens=95, output_tokens=10, thinking_tokens=3)}
    ] * 2


def test_a_rescore_pays_no_agent_tokens_and_its_cached_judges_none(
    models: Models, tmp_path: Path, sqlite_url: str
) -> None:
    first = evaluate(write_eval_set(tmp_path), agent=AGENT, db_url=sqlite_url)
    assert (first.summary.agent_tokens, first.summary.judge_tokens) == (AGENT_TOKENS, JUDGE_TOKENS)

    rescored = rescore(first.run_id, db_url=sqlite_url)

    assert models.calls == {"agent": 4, "judge": 4}  # the agent was not called, every judge answer was cached
    assert rescored.summary.judge_tokens == {}
    assert rescored.summary.agent_tokens == {}
