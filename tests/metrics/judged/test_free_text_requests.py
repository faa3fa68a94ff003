"""Free-text judge requests (no response schema, no system instruction): what ADK-exact judging sends.

The request goes out as the bare user message; the answer comes back as its raw text for the metric to parse
(an empty answer too, as "": ADK finds no score in it, which is not a failed call); non-empty answers are
cached like parsed ones.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_eval.metrics.judged.base import JudgeRequest
from agent_eval.metrics.judged.cache import JudgeCache
from agent_eval.metrics.judged.client import GenaiJudge, OpenAIJudge
from tests.fakes.gemini_server import FakeGeminiServer, text_reply
from tests.fakes.openai_server import FakeOpenAIServer, chat_reply
from tests.metrics.judged.helpers import FAST, run

PROMPT = "Is the response valid? Answer with is_the_agent_response_valid."


def free_text(**fields: Any) -> JudgeRequest:
    return JudgeRequest(**{"model": "gemini-2.5-flash", "prompt": PROMPT, **fields})


def test_gemini_free_text_request_has_no_schema_nor_system_and_its_answer_is_cached(
    fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    fake_gemini.script(text_reply('"is_the_agent_response_valid": "valid"'))
    judge = GenaiJudge(fake_gemini.client, retry=FAST, cache=JudgeCache(tmp_path))

    first = run(judge.ask(free_text(config={"temperature": 0.5})))
    again = run(judge.ask(free_text(config={"temperature": 0.5})))

    (request,) = fake_gemini.requests
    assert request.body == {
        "contents": [{"parts": [{"text": PROMPT}], "role": "user"}],
        "generationConfig": {"temperature": 0.5},
    }
    assert (first.raw_text, first.parsed, first.error, first.usable) == (
        '"is_the_agent_response_valid": "valid"',
        None,
        None,
        True,
    )
    assert (again.raw_text, again.cached) == (first.raw_text, True)


def test_gemini_empty_free_text_answer_is_an_empty_answer_not_an_error(
    fake_gemini: FakeGeminiServer, tmp_path: Path
) -> None:
    blocked = {"promptFeedback": {"blockReason": "SAFETY"}, "candidates": []}
    fake_gemini.script(blocked, text_reply("fine"))
    judge = GenaiJudge(fake_gemini.client, retry=FAST, cache=JudgeCache(tmp_path))

    empty = run(judge.ask(free_text()))
    asked_again = run(judge.ask(free_text()))

    assert (empty.raw_text, empty.error, empty.usable) == ("", None, False)
    assert (asked_again.raw_text, asked_again.cached) == ("fine", False)  # an empty answer is never cached
    assert judge.stats.errors == 0


def test_openai_free_text_request_has_no_response_format(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script(chat_reply("Verdict: yes"), chat_reply(None))
    judge = OpenAIJudge(base_url=fake_openai.base_url, retry=FAST, cache=False)

    answer = run(judge.ask(free_text(model="openai:qwen3-8b")))
    empty = run(judge.ask(free_text(model="openai:qwen3-8b", sample_index=1)))

    body = fake_openai.requests[0].body
    assert body == {"model": "qwen3-8b", "messages": [{"role": "user", "content": PROMPT}]}
    assert (answer.raw_text, answer.error) == ("Verdict: yes", None)
    assert (empty.raw_text, empty.error) == ("", None)
