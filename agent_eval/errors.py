"""Errors for user mistakes: one line naming the file, the case and the field.

Internal: the public API is `agent_eval`'s; this module's names may change between releases."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_FAILED",
    "EXIT_INFRASTRUCTURE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_REGRESSION",
    "EvalInputError",
    "InfrastructureError",
    "from_validation_error",
]


class EvalInputError(ValueError):
    """Bad input (eval set, config, agent reference): reported in one line, exit code 2, nothing run."""

    def __init__(
        self,
        message: str,
        *,
        file: str | Path | None = None,
        case: str | None = None,
        field: str | None = None,
    ) -> None:
        self.file = str(file) if file is not None else None
        self.case = case
        self.field = field
        self.message = message
        super().__init__(self.one_line())

    def one_line(self) -> str:
        """`FILE: case 'ID': field 'F': message`, leaving out the parts that are unknown."""
        parts = []
        if self.file:
            parts.append(self.file)
        if self.case is not None:
            parts.append(f"case {self.case!r}")
        if self.field:
            parts.append(f"field {self.field!r}")
        parts.append(self.message)
        return ": ".join(parts)


def from_validation_error(
    error: ValidationError,
    *,
    file: str | Path | None,
    data: object = None,
    case: str | None = None,
    case_key: str = "eval_cases",
) -> EvalInputError:
    """Turn pydantic's first error into an `EvalInputError` naming the case (by its id) and the field.

    The case is `case` when given, else read from the error's location inside `data[case_key]`.
    """
    first = error.errors()[0]
    location = [str(part) for part in first["loc"] if not _is_union_tag(part)]
    found = _case_id(location, data, case_key)
    if found is not None:
        location = location[2:]
    case = case if case is not None else found
    field = ".".join(location) or None
    return EvalInputError(_describe(first), file=file, case=case, field=field)


def _is_union_tag(part: object) -> bool:
    """pydantic names the union member it tried (`IntermediateData`, `function-after[...]`): not a field."""
    return isinstance(part, str) and (part[:1].isupper() or "[" in part)


def _case_id(location: list[str], data: object, case_key: str) -> str | None:
    camel = "evalCases" if case_key == "eval_cases" else case_key
    if len(location) < 2 or location[0] not in (case_key, camel) or not location[1].isdigit():
        return None
    index = int(location[1])
    cases = data.get(location[0]) if isinstance(data, dict) else None
    if isinstance(cases, list) and index < len(cases) and isinstance(cases[index], dict):
        eval_id = cases[index].get("eval_id", cases[index].get("evalId"))
        if isinstance(eval_id, str):
            return eval_id
    return f"#{index}"


def _describe(detail: object) -> str:
    assert isinstance(detail, dict)
    message = str(detail.get("msg", "invalid value"))
    if detail.get("type") == "missing":
        return "is required but missing"
    if "input" in detail and detail.get("type") not in ("value_error",):
        shown = repr(detail["input"])
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        return f"{message[0].lower()}{message[1:]} (got {shown})"
    return message.removeprefix("Value error, ")


class InfrastructureError(RuntimeError):
    """A service the run needs could not be reached (the store, the agent's server, the judge): one line,
    exit code `EXIT_INFRASTRUCTURE`, never a regression and never a baseline."""


EXIT_OK = 0
"""Every case passed (`run`, `rerun`, `rescore`), or the command did what it was asked."""
EXIT_FAILED = 1
"""A case failed, or a criterion could score no case run at all."""
EXIT_BAD_INPUT = 2
"""Usage, input or config error: a bad eval file, option, agent reference, store URL or run id; nothing ran."""
EXIT_REGRESSION = 3
"""The run regressed against its baseline."""
EXIT_INFRASTRUCTURE = 4
"""The store, the agent's server, the judge or the Dask scheduler could not be reached; the run (if any) is
stored `errored`."""
EXIT_BUDGET = 5
"""The run's budget was reached: it is stored `stopped`, the case runs it did not start not evaluated."""
EXIT_INTERRUPTED = 130
"""Stopped by SIGINT or SIGTERM; the run is stored `cancelled`."""
