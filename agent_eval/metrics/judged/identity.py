"""The identity of the judge that scores a criterion: what must be equal for two judged scores to be alike.

A judge identity is the judge model, the judge mode actually used (`judged.mode`: a missing `judge_mode` resolves
to ADK's evaluators where google-adk is installed and to agent-eval's prompts where it is not), the prompts'
version, the generation config, the number of samples, and the examples the judge is shown (`judge_examples`, a
judge profile's version). It is stored as JSON without its unset fields (`JudgeIdentity.stored`).

The prompts' version is, for `adk-exact`, the installed google-adk's version (its evaluators write the prompts);
for `agent-eval`, a hash of the source of `judged.prompts` (instructions and request builders), so any change to
a prompt is a new identity without anyone bumping a number (an edited comment is one too: a harmless split,
never a false match).

Two runs whose judged criteria were scored by different identities are not compared
(`agent_eval.store.queries.choose_baseline`), and a label's agreement is measured per identity.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from agent_eval.metrics.judged import prompts
from agent_eval.metrics.judged.base import JudgeExample
from agent_eval.metrics.judged.mode import ADK_EXACT, AGENT_EVAL, AdkJudgedOptions, JudgedOptions, judge_mode_for
from agent_eval.metrics.registry import MetricSpec, parse_options
from agent_eval.results.run_configs import describe_judge, identity_key
from agent_eval.schema import EvalMetric

__all__ = ["JudgeIdentity", "judge_identity", "prompts_version"]


class JudgeIdentity(BaseModel):
    """Who judged a criterion: model, mode, prompts' version, generation config and samples."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    mode: str
    prompts: str
    samples: int
    config: dict[str, Any] | None = None
    examples: str | None = None
    """A hash of the criterion's `judge_examples` (None: no examples)."""
    profile: str | None = None
    """The judge profile the examples came from, `name@version`."""

    @property
    def key(self) -> str:
        """A short stable hash of the identity as stored (`identity_key`)."""
        return identity_key(self.stored())

    def describe(self) -> str:
        """E.g. `gemini-2.5-flash, adk-exact (google-adk 1.2.0), 5 samples`, then the profile or examples."""
        return describe_judge(self.stored())

    def stored(self) -> dict[str, Any]:
        """The identity as `runs.judges` keeps it: JSON, unset fields left out."""
        return self.model_dump(mode="json", exclude_none=True)


def judge_identity(eval_metric: EvalMetric, spec: MetricSpec) -> JudgeIdentity | None:
    """The identity of the judge that scores `eval_metric` here and now; None for a metric with no LLM judge
    (its options are not `JudgedOptions`: deterministic metrics and custom metrics)."""
    if spec.options is None:
        return None
    options = parse_options(spec.options, eval_metric)
    if not isinstance(options, JudgedOptions):
        return None
    mode = judge_mode_for(spec.name, options.judge_mode) if isinstance(options, AdkJudgedOptions) else AGENT_EVAL
    model_options = options.judge_model_options
    return JudgeIdentity(
        model=model_options.judge_model,
        mode=mode,
        prompts=prompts_version(mode),
        samples=model_options.num_samples,
        config=model_options.judge_model_config,
        examples=_examples_digest(options.judge_examples),
        profile=options.judge_profile,
    )


def _examples_digest(examples: Sequence[JudgeExample]) -> str | None:
    if not examples:
        return None
    text = json.dumps([example.model_dump(mode="json") for example in examples], sort_keys=True)
    noun = "example" if len(examples) == 1 else "examples"
    return f"{len(examples)} {noun} {hashlib.sha256(text.encode()).hexdigest()[:12]}"


def prompts_version(mode: str) -> str:
    """The version of the prompts a judge mode sends (module docstring)."""
    return _adk_version() if mode == ADK_EXACT else _agent_eval_prompts()


@cache
def _adk_version() -> str:
    try:
        return f"google-adk {version('google-adk')}"
    except PackageNotFoundError:
        return "google-adk (not installed)"


@cache
def _agent_eval_prompts() -> str:
    digest = hashlib.sha256(Path(prompts.__file__).read_bytes()).hexdigest()[:12]
    return f"prompts {digest}"
