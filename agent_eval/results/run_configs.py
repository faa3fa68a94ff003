"""Which config scored which eval set of a run, as the store keeps it (`runs.config`), and whether two runs
measured an eval set alike.

Internal: the public API is `agent_eval`'s; this module's names may change between releases.

A run whose eval sets all used one config stores that config, as every release did. A run whose eval sets
used different configs (each eval file scored with the `test_config.json` beside it) stores
`{"per_eval_set": {eval_set_id: config}, "config_files": {eval_set_id: file or None}}`. Every reader goes
through `configs_by_eval_set`, which understands both shapes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from agent_eval.schema import EvalConfig, content_hash, scoring_fingerprint

__all__ = [
    "CONFIG_FILES",
    "PER_EVAL_SET",
    "configs_by_eval_set",
    "criterion_keys",
    "describe_configs",
    "describe_judge",
    "identity_key",
    "judge_differences",
    "scoring_fingerprints",
    "stored_config",
    "stored_config_hash",
]

PER_EVAL_SET = "per_eval_set"
CONFIG_FILES = "config_files"


def stored_config(configs: Mapping[str, EvalConfig], files: Mapping[str, str | None]) -> dict[str, Any]:
    """`runs.config` for a run whose eval set `eval_set_id` was scored with `configs[eval_set_id]`.

    Args:
        configs: per eval set id, its config (in the run's order).
        files: per eval set id, the file its config came from (None: given inline, or ADK's defaults).

    Returns:
        The config itself when every eval set used the same one, else the per-eval-set shape.
    """
    dumped = {eval_set_id: config.model_dump(mode="json", exclude_none=True) for eval_set_id, config in configs.items()}
    distinct = {content_hash(config) for config in dumped.values()}
    if len(distinct) <= 1:
        return next(iter(dumped.values()), EvalConfig().model_dump(mode="json", exclude_none=True))
    return {PER_EVAL_SET: dumped, CONFIG_FILES: {eval_set_id: files.get(eval_set_id) for eval_set_id in dumped}}


def stored_config_hash(configs: Mapping[str, EvalConfig]) -> str:
    """`runs.config_hash`: the config's `fingerprint()` when there is one config, else the hash of each eval
    set's fingerprint."""
    fingerprints = {eval_set_id: config.fingerprint() for eval_set_id, config in configs.items()}
    if len(set(fingerprints.values())) <= 1:
        return next(iter(fingerprints.values()), EvalConfig().fingerprint())
    return content_hash(fingerprints)


def configs_by_eval_set(config: Mapping[str, Any], eval_set_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Per eval set id, the config (as JSON) that scored it in a run with this `runs.config`.

    An eval set the per-eval-set shape does not name gets an empty config (ADK's default criteria).
    """
    per_eval_set = config.get(PER_EVAL_SET)
    if isinstance(per_eval_set, Mapping):
        return {eval_set_id: dict(per_eval_set.get(eval_set_id) or {}) for eval_set_id in eval_set_ids}
    return {eval_set_id: dict(config) for eval_set_id in eval_set_ids}


def scoring_fingerprints(config: Mapping[str, Any], eval_set_ids: Sequence[str]) -> dict[str, str]:
    """Per eval set id, the scoring fingerprint of its config (what it measured; regression settings aside)."""
    return {
        eval_set_id: scoring_fingerprint(one) for eval_set_id, one in configs_by_eval_set(config, eval_set_ids).items()
    }


def criterion_keys(config: Mapping[str, Any]) -> dict[str, str]:
    """Per criterion of a config (as JSON), a hash of how it is measured, its threshold aside: its options,
    its custom metric's code and the user simulator. Equal keys: the two scores measure the same thing (a
    threshold decides pass or fail, never the score)."""
    criteria = config.get("criteria")
    if not isinstance(criteria, Mapping):
        criteria = EvalConfig().model_dump(mode="json", exclude_none=True)["criteria"]
    customs = config.get("custom_metrics") or {}
    simulator = config.get("user_simulator_config")
    keys = {}
    for name, criterion in criteria.items():
        options = {k: v for k, v in criterion.items() if k != "threshold"} if isinstance(criterion, Mapping) else {}
        measured = {"criteria": {name: options}, "custom_metrics": {name: customs.get(name)}}
        keys[name] = scoring_fingerprint({**measured, "user_simulator_config": simulator})
    return keys


def describe_configs(config: Mapping[str, Any], eval_set_ids: Sequence[str]) -> str:
    """Which config scored which eval set of a run with this `runs.config`, on one line.

    Eval sets scored with different configs: each with its config's file, e.g. `set20 ← mt/test_config.json;
    set40 ← ADK defaults`. One config for all: `all eval sets ← ADK defaults` or `all eval sets ← one config
    (its criteria)`, since such a run stores no file name.
    """
    if not isinstance(config.get(PER_EVAL_SET), Mapping):
        return f"all eval sets ← {_config_source(config, None, 'one config')}"
    files = config.get(CONFIG_FILES) or {}
    return "; ".join(
        f"{eval_set_id} ← {_config_source(one, files.get(eval_set_id), 'inline config')}"
        for eval_set_id, one in configs_by_eval_set(config, eval_set_ids).items()
    )


def _config_source(config: Mapping[str, Any], file: str | None, unnamed: str) -> str:
    """The config's file, else `ADK defaults` for ADK's default criteria alone, else `unnamed (its criteria)`."""
    if file:
        return str(file)
    defaults = EvalConfig().model_dump(mode="json", exclude_none=True)["criteria"]
    criteria = config.get("criteria", defaults)
    if set(config) <= {"criteria"} and criteria == defaults:
        return "ADK defaults"
    names = ", ".join(sorted(criteria)) if isinstance(criteria, Mapping) else ""
    return f"{unnamed} ({names or 'no criteria'})"


def judge_differences(
    now: Mapping[str, Any] | None, before: Mapping[str, Any] | None, eval_set_ids: Sequence[str]
) -> list[str]:
    """How the judges of two runs (their `runs.judges`) differ on the given eval sets, one text per judged
    criterion, e.g. `final_response_match_v2: mode agent-eval (was adk-exact)`; empty when they are alike.

    A run stored before judge identities were recorded (`None`) has an unknown judge: it is taken as alike, so
    that upgrading loses no baseline (its scoring fingerprint still has to match).
    """
    if now is None or before is None:
        return []
    differences = []
    for eval_set_id in eval_set_ids:
        ours, theirs = now.get(eval_set_id) or {}, before.get(eval_set_id) or {}
        for name in sorted(set(ours) | set(theirs)):
            if ours.get(name) != theirs.get(name):
                differences.append(f"{name}: {_identity_change(ours.get(name), theirs.get(name))}")
    return list(dict.fromkeys(differences))


def _identity_change(now: Mapping[str, Any] | None, before: Mapping[str, Any] | None) -> str:
    if now is None or before is None:
        return "judged only in one of the runs"
    keys = ("model", "mode", "prompts", "samples", "config", "examples", "profile")
    changed = [key for key in keys if now.get(key) != before.get(key)]
    return ", ".join(f"{key} {now.get(key)} (was {before.get(key)})" for key in changed)


def identity_key(identity: Mapping[str, Any]) -> str:
    """A short stable hash (12 hex characters) of a judge identity as stored (`runs.judges` holds them as JSON,
    `agent_eval.metrics.judged.identity.JudgeIdentity.stored`)."""
    text = json.dumps(dict(identity), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def describe_judge(identity: Mapping[str, Any]) -> str:
    """A stored judge identity in words: `gemini-2.5-flash, adk-exact (google-adk 1.2.0), 5 samples`, then its
    profile or examples."""
    samples = identity.get("samples")
    text = f"{identity.get('model')}, {identity.get('mode')} ({identity.get('prompts')}), {samples} sample"
    text += "" if samples == 1 else "s"
    if identity.get("profile"):
        return f"{text}, profile {identity['profile']}"
    return f"{text}, {identity['examples']}" if identity.get("examples") else text
