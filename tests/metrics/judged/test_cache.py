"""The persisted judge cache: re-asking costs no call, keys follow the content, only parsed answers are kept."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from agent_eval.metrics.judged.cache import JudgeCache, cache_key
from agent_eval.metrics.judged.client import GenaiJudge
from agent_eval.metrics.judged.policy import JudgeStats
from tests.fakes.gemini_server import FakeGeminiServer, error_reply, text_reply
from tests.metrics.judged.helpers import FAST, Verdict, make_request, run, verdict_json


def judge_for(server: FakeGeminiServer, **options: Any) -> GenaiJudge:
    return GenaiJudge(server.client, **{"retry": FAST, **options})


def test_same_request_twice_makes_one_call_and_the_second_is_cached(fake_gemini: FakeGeminiServer) -> None:
    fake_gemini.script(text_reply(verdict_json()))
    judge = judge_for(fake_gemini)

    first = run(judge.ask(make_request()))
    second = run(judge.ask(make_request()))

    assert len(fake_gemini.requests) == 1
    assert not first.cached and second.cached
    assert second.parsed == first.parsed == Verdict(label="valid", rationale="same meaning")
    assert second.raw_text == first.raw_text
    assert judge.stats.as_dict() == {
        "samples": 2,
        "calls": 1,
        "cache_hits": 1,
        "retries": 0,
        "errors": 0,
        "rate_limited": 0,
        "lost": 0,
        "concurrency": 16,
        "concurrency_max": 1,
    }


def test_each_sample_index_is_its_own_call(fake_gemini: FakeGeminiServer) -> None:
    fake_gemini.script(text_reply(verdict_json("valid")), text_reply(verdict_json("invalid")))
    judge = judge_for(fake_gemini)

    first = run(judge.ask(make_request(sample_index=0)))
    second = run(judge.ask(make_request(sample_index=1)))

    assert len(fake_gemini.requests) == 2
    assert (first.cached, second.cached) == (False, False)
    assert [s.parsed.label for s in (first, second) if isinstance(s.parsed, Verdict)] == ["valid", "invalid"]


def test_cache_survives_a_new_judge_and_a_new_event_loop(fake_gemini: FakeGeminiServer, tmp_path: Path) -> None:
    fake_gemini.script(text_reply(verdict_json()))
    run(judge_for(fake_gemini).ask(make_request()))

    again = run(judge_for(fake_gemini).ask(make_request()))

    assert again.cached and again.parsed == Verdict(label="valid", rationale="same meaning")
    assert len(fake_gemini.requests) == 1
    stored = list((tmp_path / "home" / "cache" / "judge").glob("*/*.json"))
    assert len(stored) == 1 and json.loads(stored[0].read_text())["text"] == verdict_json()


def test_failed_calls_and_unparseable_answers_are_never_cached(fake_gemini: FakeGeminiServer) -> None:
    fake_gemini.script(error_reply(400), text_reply("not json"), text_reply(verdict_json()))
    judge = judge_for(fake_gemini)

    samples = [run(judge.ask(make_request())) for _ in range(4)]

    assert [s.error is None for s in samples] == [False, False, True, True]
    assert [s.cached for s in samples] == [False, False, False, True]
    assert len(fake_gemini.requests) == 3


@pytest.mark.parametrize(
    "change",
    [
        {"model": "gemini-2.5-pro"},
        {"system": "Be strict."},
        {"prompt": "Is 'Lyon' the capital of France?"},
        {"config": {"temperature": 0.5}},
        {"sample_index": 3},
    ],
)
def test_key_changes_with_every_part_of_the_request(change: dict[str, Any]) -> None:
    assert cache_key("gemini", make_request(**change)) != cache_key("gemini", make_request())


def test_key_changes_with_the_backend_and_the_schema() -> None:
    class Other(BaseModel):
        label: str

    assert cache_key("vertex", make_request()) != cache_key("gemini", make_request())
    assert cache_key("gemini", make_request(response_schema=Other)) != cache_key("gemini", make_request())
    assert cache_key("gemini", make_request()) == cache_key("gemini", make_request())


def test_cache_can_be_disabled(fake_gemini: FakeGeminiServer) -> None:
    fake_gemini.script(text_reply(verdict_json()), text_reply(verdict_json()))
    judge = judge_for(fake_gemini, cache=False)

    samples = [run(judge.ask(make_request())) for _ in range(2)]

    assert len(fake_gemini.requests) == 2 and not any(s.cached for s in samples)


def test_unreadable_entry_is_a_miss(fake_gemini: FakeGeminiServer, tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path / "cache")
    judge = judge_for(fake_gemini, cache=cache)
    cache.path(cache_key(judge.backend.identity, make_request())).parent.mkdir(parents=True)
    cache.path(cache_key(judge.backend.identity, make_request())).write_text("{truncated")
    fake_gemini.script(text_reply(verdict_json()))

    sample = run(judge.ask(make_request()))

    assert sample.usable and not sample.cached and len(fake_gemini.requests) == 1
    assert run(judge.ask(make_request())).cached


def test_a_cache_that_cannot_be_written_does_not_lose_the_answer(
    fake_gemini: FakeGeminiServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    fake_gemini.script(text_reply(verdict_json()))

    sample = run(judge_for(fake_gemini, cache=JudgeCache(blocker)).ask(make_request()))

    assert sample.usable and "judge cache: could not write" in caplog.text


def test_concurrent_writers_of_one_key_leave_one_whole_entry(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)
    key = cache_key("gemini", make_request())
    text = verdict_json(rationale="x" * 50_000)
    threads = [threading.Thread(target=cache.put, args=(key, text)) for _ in range(16)]
    reads: list[str | None] = []
    reader = threading.Thread(target=lambda: reads.extend(cache.get(key) for _ in range(200)))

    for thread in [*threads, reader]:
        thread.start()
    for thread in [*threads, reader]:
        thread.join()

    assert cache.get(key) == text
    assert {read for read in reads} <= {None, text}  # never half an entry
    assert [p.name for p in cache.path(key).parent.iterdir()] == [f"{key}.json"]  # no temporary files left


def test_stats_can_be_shared_across_judges(fake_gemini: FakeGeminiServer) -> None:
    stats = JudgeStats()
    fake_gemini.script(text_reply(verdict_json()))

    run(judge_for(fake_gemini, stats=stats).ask(make_request()))
    run(judge_for(fake_gemini, stats=stats).ask(make_request()))

    assert stats.as_dict() == {
        "samples": 2,
        "calls": 1,
        "cache_hits": 1,
        "retries": 0,
        "errors": 0,
        "rate_limited": 0,
        "lost": 0,
        "concurrency": 16,
        "concurrency_max": 1,
    }
