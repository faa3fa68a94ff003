"""Judge profiles in configs: a criterion's `judge_profile` turned into the examples its judge is sent.

A criterion may name a stored profile (`agent-eval judges align METRIC --profile NAME` makes them):
`"judge_profile": "strict"` takes the newest kept version, `"strict@3"` that version (kept or not, so a stored
run can be scored again exactly). Before anything runs the plan replaces the name by `name@version` and adds the
profile's examples as the criterion's `judge_examples`: the run's stored config holds them whole, its scoring
fingerprint and judge identity change with the version, and a rerun or rescore sends the same examples.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Engine

from agent_eval.errors import EvalInputError
from agent_eval.schema import BaseCriterion, EvalConfig
from agent_eval.store.engine import get_engine
from agent_eval.store.labels import judge_profile

__all__ = ["parse_profile_name", "uses_profiles", "with_profiles"]

_OPTION = "judge_profile"


def uses_profiles(config: EvalConfig) -> bool:
    """Whether a criterion of the config names a judge profile."""
    return any(_named(criterion) is not None for criterion in config.criteria.values())


def parse_profile_name(value: str) -> tuple[str, int | None]:
    """`name` → (name, None); `name@3` → (name, 3).

    Raises:
        ValueError: an empty name, or a version that is not a whole number of at least 1.
    """
    name, _, version = value.partition("@")
    if not name.strip():
        raise ValueError(f"{value!r} names no profile")
    if not version:
        return name.strip(), None
    if not version.isdigit() or int(version) < 1:
        raise ValueError(f"{value!r}: the version after '@' is a whole number of at least 1")
    return name.strip(), int(version)


def with_profiles(config: EvalConfig, db_url: str | None, file: str | None = None) -> EvalConfig:
    """The config with each named profile resolved from the store `db_url` (module docstring).

    Raises:
        EvalInputError: a bad name, no such (kept) profile, or a profile made for another metric; naming the
            file and the field.
    """
    engine = get_engine(db_url)
    criteria = dict(config.criteria)
    for metric, criterion in config.criteria.items():
        named = _named(criterion)
        if named is not None:
            criteria[metric] = _resolved(metric, criterion, named, engine, file)
    return config.model_copy(update={"criteria": criteria})


def _named(criterion: BaseCriterion) -> str | None:
    extra = criterion.model_extra or {}
    value = extra.get(_OPTION, extra.get("judgeProfile"))
    return str(value) if value is not None else None


def _resolved(metric: str, criterion: BaseCriterion, named: str, engine: Engine, file: str | None) -> BaseCriterion:
    field = f"criteria.{metric}.{_OPTION}"
    try:
        name, version = parse_profile_name(named)
    except ValueError as error:
        raise EvalInputError(str(error), file=file, field=field) from None
    profile = judge_profile(name, engine, version=version)
    if profile is None:
        which = f"version {version} of judge profile {name!r}" if version else f"kept judge profile {name!r}"
        hint = f"`agent-eval judges align {metric} --profile {name}` makes one"
        raise EvalInputError(f"no {which} in the store; {hint}", file=file, field=field)
    if profile.metric_name != metric:
        raise EvalInputError(
            f"judge profile {name!r} was made for {profile.metric_name}, not {metric}", file=file, field=field
        )
    options: dict[str, Any] = criterion.model_dump(by_alias=False, exclude_none=True)
    options.pop("judgeProfile", None)
    options.update({_OPTION: f"{profile.name}@{profile.version}", "judge_examples": list(profile.examples)})
    return BaseCriterion.model_validate(options)
