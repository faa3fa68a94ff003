"""Close-match suggestions for misspelled keys: one rule for config options and eval files.

`close_match` is the rule (difflib on the snake_case spelling, cutoff 0.6, answered in the key's own style);
`validation_input_error` applies it to a pydantic error of an eval file: an unknown key is named with the
closest allowed key at the same place, and a required key that is missing names the close sibling that was
written instead. The allowed keys are read from the model at the error's location.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import AliasChoices, BaseModel, ValidationError, alias_generators
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from agent_eval.errors import EvalInputError, from_validation_error

__all__ = ["close_match", "misspelled_key_message", "model_key_spellings", "validation_input_error"]

CUTOFF = 0.6
"""How alike a key and an allowed name must be (difflib's ratio) to be suggested."""


class _Unresolved(Exception):
    """The error's location leads to no model (a union member without a name, a custom type)."""


def close_match(key: str, accepted: Iterable[str], *, camel: bool | None = None) -> str | None:
    """The accepted name closest to `key`, or None when none is close enough.

    The match is made on the snake_case spelling of `key` against the snake_case `accepted` names (difflib,
    cutoff 0.6). The answer is camelCase when `camel` is true; when `camel` is None, when `key` itself is
    camelCase (no `_`, an upper-case letter).
    """
    snake = alias_generators.to_snake(key).lower()
    close = difflib.get_close_matches(snake, sorted(set(accepted)), n=1, cutoff=CUTOFF)
    if not close:
        return None
    if camel is None:
        camel = _is_camel(key)
    return alias_generators.to_camel(close[0]) if camel else close[0]


def validation_input_error(
    error: ValidationError,
    model: type[BaseModel],
    *,
    file: str | Path | None,
    data: object,
    case: str | None = None,
) -> EvalInputError:
    """`from_validation_error` for an eval file validated as `model` from `data`, with the misspelled-key
    message (`misspelled_key_message`) when pydantic's first error is an unknown or a missing key."""
    found = from_validation_error(error, file=file, data=data, case=case)
    message = misspelled_key_message(error.errors(), model, data)
    if message is None:
        return found
    return EvalInputError(message, file=found.file, case=found.case, field=found.field)


def misspelled_key_message(errors: Sequence[ErrorDetails], model: type[BaseModel], data: object) -> str | None:
    """The message for the first error when it is an unknown key or a missing one, with the close match; None
    for other errors, or when the location leads to no model (`data`: the value `model` was validated from).

    - `extra_forbidden`: `unknown key 'tool_calls' (did you mean 'tool_uses'?)`, or without a close match
      `unknown key 'x'; accepted keys: a, b`.
    - `missing`, when a key written beside it is closest to the missing one:
      `is required but missing: 'user_contents' was written (did you mean 'user_content'?)`.

    The allowed keys are the fields of the model at the error's place; at a union of models (intermediate data)
    those of every member that reported the same error there. A field already written there is not suggested
    (a leftover `eval_case` beside `eval_cases` is only unknown). Suggestions follow the file's spelling:
    camelCase when the key, or else the keys beside it, are camelCase.
    """
    first = errors[0] if errors else None
    if first is None or first["type"] not in ("extra_forbidden", "missing") or not first["loc"]:
        return None
    try:
        place = _place(model, data, first["loc"][:-1])
    except _Unresolved:
        return None
    owners = [place.owner, *_other_members(errors, first, place, model, data)]
    names = frozenset(name for owner in owners for name in owner.model_fields)
    key = str(first["loc"][-1])
    siblings = [str(sibling) for sibling in place.written] if isinstance(place.written, dict) else []
    if first["type"] == "extra_forbidden":
        return _unknown_key_message(key, names, siblings, _written_fields(owners, siblings))
    known = {spelling for owner in owners for spelling in model_key_spellings(owner)}
    return _missing_key_message(key, names, siblings, known)


class _Place(NamedTuple):
    """Where a key is: the model that holds it, the object written there, and its path (no union tags)."""

    owner: type[BaseModel]
    written: object
    path: tuple[int | str, ...]


def _other_members(
    errors: Sequence[ErrorDetails], first: ErrorDetails, place: _Place, model: type[BaseModel], data: object
) -> list[type[BaseModel]]:
    """The other union members that reported the first error (same kind, same key) at the same place."""
    members = []
    for detail in errors[1:]:
        if detail["type"] != first["type"] or detail["loc"][-1:] != first["loc"][-1:]:
            continue
        try:
            other = _place(model, data, detail["loc"][:-1])
        except _Unresolved:
            continue
        if other.path == place.path and other.owner is not place.owner:
            members.append(other.owner)
    return members


def _unknown_key_message(key: str, names: frozenset[str], siblings: list[str], written: set[str]) -> str:
    camel = _file_is_camel(key, siblings)
    suggestion = close_match(key, names - written, camel=camel)
    if suggestion is not None:
        return f"unknown key {key!r} (did you mean {suggestion!r}?)"
    shown = sorted(alias_generators.to_camel(name) if camel else name for name in names)
    return f"unknown key {key!r}; accepted keys: {', '.join(shown) or 'none'}"


def _written_fields(owners: list[type[BaseModel]], siblings: list[str]) -> set[str]:
    """The fields that a key written at the place sets (in any spelling): never suggested for another key."""
    return {
        name
        for owner in owners
        for name, info in owner.model_fields.items()
        if name in siblings or _field_spellings(info) & set(siblings)
    }


def _missing_key_message(field: str, names: frozenset[str], siblings: list[str], known: set[str]) -> str | None:
    for written in (sibling for sibling in siblings if sibling not in known):
        camel = _file_is_camel(written, siblings)
        suggestion = close_match(written, names, camel=camel)
        if suggestion is not None and suggestion == (alias_generators.to_camel(field) if camel else field):
            return f"is required but missing: {written!r} was written (did you mean {suggestion!r}?)"
    return None


def _place(model: type[BaseModel], data: object, location: Sequence[int | str]) -> _Place:
    """The place pydantic's `location` (a `loc` without its last part, the key) leads to inside `model` and
    `data`. A union member named in the location (`IntermediateData`) is the model taken; list, tuple and dict
    items are followed.

    Raises:
        _Unresolved: the location leads to no model (a union member without a name, a custom type).
    """
    annotation: Any = model
    path: list[int | str] = []
    for part in location:
        annotation, is_tag = _step(annotation, part)
        if not is_tag:
            data = _item(data, part)
            path.append(part)
    annotation = _without_none(annotation)
    if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
        raise _Unresolved(location)
    return _Place(annotation, data, tuple(path))


def _step(annotation: Any, part: int | str) -> tuple[Any, bool]:
    """The annotation one step into `annotation` along `part`; True when `part` named a union member."""
    annotation = _without_none(annotation)
    origin = typing.get_origin(annotation)
    arguments = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        named = [member for member in arguments if getattr(member, "__name__", None) == part]
        if not named:
            raise _Unresolved(part)
        return named[0], True
    if isinstance(annotation, type) and issubclass(annotation, BaseModel) and isinstance(part, str):
        return _field_annotation(annotation, part), False
    if origin in (list, set, frozenset) and isinstance(part, int) and arguments:
        return arguments[0], False
    if origin is tuple and isinstance(part, int) and arguments:
        return arguments[0 if arguments[-1] is Ellipsis else min(part, len(arguments) - 1)], False
    if origin is dict and len(arguments) == 2:
        return arguments[1], False
    raise _Unresolved(part)


def _field_annotation(model: type[BaseModel], part: str) -> Any:
    for name, info in model.model_fields.items():
        if part == name or part in _field_spellings(info):
            return info.annotation
    raise _Unresolved(part)


def _without_none(annotation: Any) -> Any:
    """`X` for `X | None` and `Annotated[X, ...]`; other annotations unchanged."""
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = [member for member in typing.get_args(annotation) if member is not type(None)]
        if len(members) == 1:
            return _without_none(members[0])
    return annotation


def _item(data: object, part: int | str) -> object:
    """`data[part]`; a field named in snake_case is also found under its camelCase spelling."""
    if isinstance(data, dict):
        return data.get(part, data.get(alias_generators.to_camel(part)) if isinstance(part, str) else None)
    if isinstance(data, list | tuple) and isinstance(part, int) and 0 <= part < len(data):
        return data[part]
    return None


def model_key_spellings(model: type[BaseModel]) -> frozenset[str]:
    """Every key that sets a field of `model`: its names, aliases (camelCase ones included) and alias choices."""
    spellings: set[str] = set(model.model_fields)
    for info in model.model_fields.values():
        spellings.update(_field_spellings(info))
    return frozenset(spellings)


def _field_spellings(info: FieldInfo) -> set[str]:
    spellings = {info.alias} if info.alias else set()
    if isinstance(info.validation_alias, str):
        spellings.add(info.validation_alias)
    elif isinstance(info.validation_alias, AliasChoices):
        spellings.update(choice for choice in info.validation_alias.choices if isinstance(choice, str))
    return spellings


def _is_camel(key: str) -> bool:
    return "_" not in key and key != key.lower()


def _file_is_camel(key: str, siblings: list[str]) -> bool:
    """Whether to answer in camelCase: the key's own style, or for a one-word key the style of the keys
    beside it."""
    if "_" in key or _is_camel(key):
        return _is_camel(key)
    return any(_is_camel(sibling) for sibling in siblings)
