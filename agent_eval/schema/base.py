"""The base of every ADK-shaped model, and the content hash that configs and caches are keyed by."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, alias_generators

__all__ = [
    "EvalBaseModel",
    "content_hash",
]


class EvalBaseModel(BaseModel):
    """Base of every ADK-shaped model: camelCase or snake_case in, snake_case out."""

    model_config = ConfigDict(
        alias_generator=alias_generators.to_camel,
        populate_by_name=True,
        extra="forbid",
        arbitrary_types_allowed=True,
        serialize_by_alias=False,
        loc_by_alias=False,  # errors name fields as files spell them on disk: snake_case
    )


def content_hash(value: BaseModel | Any) -> str:
    """SHA-256 of a model's (or a JSON value's) canonical JSON: equal content, equal hash."""
    data = value.model_dump(mode="json", exclude_none=True) if isinstance(value, BaseModel) else value
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
