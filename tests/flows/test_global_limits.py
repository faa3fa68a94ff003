"""Global limits named in the config (`limits`): concurrency and rate limits on agent invocations and judge calls,
held through the real flow against the test server's Prefect global concurrency limits."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
from sqlmodel import Session, select

from agent_eval import evaluate
from agent_eval.agents import AgentSession, AgentTurn
from agent_eval.errors import EvalInputError
from agent_eval.metrics.judged.voting import set_judge_factory
from agent_eval.plan.eval_plan import EvalRequest, LimitOrigin, prepare
from agent_eval.schema import EvalConfig, LimitsConfig
from agent_eval.store import Run, get_engine
from tests.fakes.gemini_server import FakeGeminiServer
from tests.fakes.judges import SafetyServer
from tests.flows.helpers import write_echo_set

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_server")]

AGENT = "tests.flows.test_global_limits:timed_agent"
STARTS: list[float] = []
IN_FLIGHT: list[str] = []
PEAKS: list[int] = []


async def timed_agent(message: str, session: AgentSession) -> AgentTurn:
    """Answers like the echo agent after 0.2 s, recording when each call started and how many overlapped."""
    STARTS.append(time.monotonic())
    IN_FLIGHT.append(message)
    PEAKS.append(len(IN_FLIGHT))
    await asyncio.sleep(0.2)
    IN_FLIGHT.remove(message)
    return AgentTurn(response=f"answer: {message}")


@pytest.fixture(autouse=True)
def _fresh_records() -> None:
    STARTS.clear()
    PEAKS.clear()


def _limit(slots: int, decay_per_second: float | None = None) -> str:
    name = f"agent-eval-test-{uuid.uuid4().hex[:8]}"

    async def create() -> None:
        async with get_client() as client:
            decay = {"slot_decay_per_second": decay_per_second} if decay_per_second else {}
            await client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=name, limit=slots, **decay))

    asyncio.run(create())
    return name


def _echo_set_with(folder: Path, cases: int, config: dict[str, Any]) -> Path:
    path, _ = write_echo_set(folder, [f"c{i}" for i in range(cases)])
    (folder / "test_config.json").write_text(json.dumps(config), encoding="utf-8")
    return path


def test_a_limit_the_config_names_holds_every_invocation_to_its_slots(tmp_path: Path, sqlite_url: str) -> None:
    path = _echo_set_with(tmp_path, 4, {"criteria": {"response_match_score": 0.8}})
    evaluate([str(path)], agent=AGENT, db_url=sqlite_url, max_concurrency=4)
    assert max(PEAKS) == 4  # without a limit, all four at once

    PEAKS.clear()
    limit = _limit(1)
    path = _echo_set_with(tmp_path, 4, {"criteria": {"response_match_score": 0.8}, "limits": {"invocations": [limit]}})
    report = evaluate([str(path)], agent=AGENT, db_url=sqlite_url, max_concurrency=4)

    assert len(PEAKS) == 4 and max(PEAKS) == 1
    assert report.summary.passed == 4
    assert report.config["limits"] == {"invocations": [limit], "judge_calls": []}


def test_a_rate_limit_spaces_the_invocations_by_its_decay(tmp_path: Path, sqlite_url: str) -> None:
    """A rate limit of 1 slot decaying at 2 per second lets one invocation start every 0.5 s: 4 invocations
    that could all start at once span at least 1.5 s (the bound below leaves 0.3 s for timer slack)."""
    limit = _limit(1, decay_per_second=2.0)
    path = _echo_set_with(tmp_path, 4, {"criteria": {"response_match_score": 0.8}, "limits": {"invocations": [limit]}})

    report = evaluate([str(path)], agent=AGENT, db_url=sqlite_url, max_concurrency=4)

    assert report.summary.passed == 4
    assert len(STARTS) == 4
    assert max(STARTS) - min(STARTS) >= 1.2, f"4 starts spanned {max(STARTS) - min(STARTS):.2f} s"


@pytest.fixture
def fake_judge(
    fake_gemini: FakeGeminiServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[SafetyServer]:
    """The real judge client aimed at the fake Gemini server, which answers after 0.2 s and counts the requests
    it holds at once; an empty judge cache; a judge cap of 8."""
    for name in ("GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE", "AGENT_EVAL_JUDGE_BACKEND"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AGENT_EVAL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GOOGLE_API_KEY", "fake-gemini-key")
    monkeypatch.setenv("AGENT_EVAL_GEMINI_BASE_URL", fake_gemini.base_url)
    monkeypatch.setenv("AGENT_EVAL_JUDGE_CONCURRENCY", "8")
    server = SafetyServer(lambda _case: 0.2)
    fake_gemini.respond_with(server)
    previous = set_judge_factory(None)
    yield server
    set_judge_factory(previous)


def _case_names(count: int) -> list[str]:
    return [f"case-{i:02d} says" for i in range(count)]  # SafetyServer finds the case number in the prompt


def test_a_judge_call_limit_holds_every_judge_request_across_the_criterion(
    tmp_path: Path, sqlite_url: str, fake_judge: SafetyServer, fake_gemini: FakeGeminiServer
) -> None:
    safety = {"safety_v1": {"threshold": 0.5, "judge_model_options": {"num_samples": 2}}}
    free, capped = tmp_path / "free", tmp_path / "capped"
    free.mkdir(), capped.mkdir()
    path, _ = write_echo_set(free, _case_names(4))
    (free / "test_config.json").write_text(json.dumps({"criteria": safety}), encoding="utf-8")
    evaluate([str(path)], agent=AGENT, db_url=sqlite_url, max_concurrency=4)
    assert fake_judge.most == 4  # without a limit, the four case runs are judged at once

    fake_judge.most = 0
    limit = _limit(1)
    path, _ = write_echo_set(capped, _case_names(4))
    config = {"criteria": safety, "limits": {"judge_calls": [limit]}}
    (capped / "test_config.json").write_text(json.dumps(config), encoding="utf-8")
    report = evaluate([str(path)], agent=AGENT, db_url=sqlite_url, max_concurrency=4)

    assert fake_judge.most == 1
    assert len(fake_gemini.generate_requests()) == 2 * 4 * 2  # two runs, four case runs, two samples
    assert [r.metrics[0].score for r in sorted(report.cases, key=lambda r: r.eval_id)] == [1.0, 0.0, 1.0, 0.0]
    assert max(PEAKS) == 4  # a judge limit does not hold the invocations


def test_a_limit_missing_on_the_server_names_the_config_file_and_field_and_stores_nothing(
    tmp_path: Path, sqlite_url: str
) -> None:
    config = {"criteria": {"response_match_score": 0.8}, "limits": {"judge_calls": ["no-such-limit"]}}
    path = _echo_set_with(tmp_path, 2, config)

    with pytest.raises(EvalInputError, match="no Prefect global concurrency limit 'no-such-limit'") as raised:
        evaluate([str(path)], agent=AGENT, db_url=sqlite_url)

    assert (raised.value.field, raised.value.file) == ("limits.judge_calls", str(tmp_path / "test_config.json"))
    assert "--slot-decay-per-second" in str(raised.value)
    assert STARTS == []
    with Session(get_engine(sqlite_url)) as session:
        assert session.exec(select(Run)).all() == []


def test_the_plan_names_each_limit_once_with_where_it_was_named(tmp_path: Path) -> None:
    config = {"criteria": {"response_match_score": 0.8}, "limits": {"invocations": ["api", "agent"]}}
    path = _echo_set_with(tmp_path, 1, config)
    plan = prepare(EvalRequest(paths=[str(path)], agent=AGENT, concurrency_limits=["agent"]))
    config_file = str(tmp_path / "test_config.json")

    assert plan.limit_names("invocations") == {
        "agent": LimitOrigin(None, "concurrency_limits"),
        "api": LimitOrigin(config_file, "limits.invocations"),
    }
    assert plan.limit_names("judge_calls") == {}


def test_limits_are_no_part_of_what_a_config_measures() -> None:
    plain = EvalConfig.model_validate({"criteria": {"response_match_score": 0.8}})
    limited = EvalConfig.model_validate(
        {"criteria": {"response_match_score": 0.8}, "limits": {"judge_calls": ["gemini-rpm"]}}
    )

    assert limited.scoring_fingerprint() == plain.scoring_fingerprint()
    assert limited.fingerprint() != plain.fingerprint()
    with pytest.raises(ValueError, match="a limit name must not be empty"):
        LimitsConfig(invocations=[" "])
