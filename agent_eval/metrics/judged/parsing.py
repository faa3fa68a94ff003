"""Reading a judge's answer into the request's response schema, leniently but never by guessing a verdict.

Structured output makes the answer JSON in almost every case; models behind OpenAI-compatible servers in
`json_object` mode sometimes wrap it in a Markdown code fence or a short preamble (or a reasoning block).
The answer is tried as it is, then the content of its first code fence, then the text from its first `{` to
its last `}`; the first candidate that validates wins. None validating is an error sample that keeps the
raw text: never a silent 0 or 1.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ValidationError

from agent_eval.metrics.judged.base import JudgeSample

__all__ = ["parse_answer"]

_CODE_FENCE = re.compile(r"```[A-Za-z]*\s*\n?(.*?)```", re.DOTALL)


def parse_answer(text: str, schema: type[BaseModel] | None) -> JudgeSample:
    """A sample with `parsed` set, or with `error="unparseable: ..."`; `raw_text` is `text` either way.

    Without a schema (a free-text request) the text is the answer as it is, even empty: the metric parses it.
    """
    if schema is None:
        return JudgeSample(raw_text=text)
    if not text.strip():
        return JudgeSample(raw_text=text, error="unparseable: empty answer")
    first_error: ValidationError | None = None
    for candidate in _candidates(text):
        try:
            return JudgeSample(parsed=schema.model_validate_json(candidate), raw_text=text)
        except ValidationError as error:
            first_error = first_error or error
    return JudgeSample(raw_text=text, error=f"unparseable: {_describe(first_error, schema)}")


def _candidates(text: str) -> list[str]:
    found = [text.strip()]
    fenced = _CODE_FENCE.search(text)
    if fenced:
        found.append(fenced.group(1).strip())
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        found.append(text[start : end + 1])
    return list(dict.fromkeys(found))


def _describe(error: ValidationError | None, schema: type[BaseModel]) -> str:
    if error is None:
        return f"no {schema.__name__} in the answer"
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    detail = f"{where}: {first['msg']}" if where else first["msg"]
    return f"not a {schema.__name__} ({detail})"
