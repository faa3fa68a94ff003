"""Criterion options are checked up front: an unknown key fails when the config is resolved, for every metric.

One rule (`agent_eval.metrics.registry`): a metric accepts `threshold`, ADK's common
`include_intermediate_responses_in_final`, and the keys it declares (its options model's fields and aliases, or
its `option_keys`); ADK custom metrics named in `custom_metrics` accept any key. The message is one line: the
config file, `criteria.<metric>.<key>`, the unknown key, a close match and the accepted keys.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from google.genai.types import Content, Part
from pydantic import Field

from agent_eval.errors import EvalInputError
from agent_eval.metrics.common import CriterionOptions
from agent_eval.metrics.custom import CustomMetric, invocation_metric, register_custom_metric
from agent_eval.metrics.registry import REGISTRY, MetricRegistry, MetricSpec, metric
from agent_eval.metrics.scoring import score_case_run
from agent_eval.schema import (
    AgentRun,
    EvalCase,
    EvalConfig,
    EvalMetric,
    EvaluationResult,
    Invocation,
    MetricInfo,
    content_text,
)

CONFIG_FILE = "agent/test_config.json"
REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = "tests.metrics.custom_examples"


def resolve(
    criteria: dict[str, Any], registry: MetricRegistry = REGISTRY, **config: Any
) -> list[tuple[EvalMetric, MetricSpec]]:
    """Resolve a config of `criteria` (and other `config` keys) as read from `CONFIG_FILE`."""
    return registry.resolve(EvalConfig.model_validate({"criteria": criteria, **config}), config_file=CONFIG_FILE)


def rejection(criteria: dict[str, Any], registry: MetricRegistry = REGISTRY) -> str:
    """The one-line error of resolving `criteria`."""
    with pytest.raises(EvalInputError) as raised:
        resolve(criteria, registry)
    line = str(raised.value)
    assert "\n" not in line
    return line


# ---------------------------------------------------------------------------------- the named cases
@pytest.mark.parametrize(
    ("criteria", "line"),
    [
        pytest.param(
            {"response_similarity": {"threshold": 0.5, "algoritm": "levenshtein"}},
            f"{CONFIG_FILE}: field 'criteria.response_similarity.algoritm': unknown option 'algoritm' "
            "(did you mean 'algorithm'?); accepted options: algorithm, ignore_case, ignore_punctuation, "
            "include_intermediate_responses_in_final, normalize, threshold",
            id="response_similarity-algoritm",
        ),
        pytest.param(
            {"tool_trajectory_score": {"threshold": 1.0, "strict_arg": True}},
            f"{CONFIG_FILE}: field 'criteria.tool_trajectory_score.strict_arg': unknown option 'strict_arg' "
            "(did you mean 'strict_args'?); accepted options: include_intermediate_responses_in_final, "
            "strict_args, strict_order, threshold",
            id="tool_trajectory_score-strict_arg",
        ),
        pytest.param(
            {"trajectory_precision": {"threshold": 0.5, "match_type": "ANY_ORDER"}},
            f"{CONFIG_FILE}: field 'criteria.trajectory_precision.match_type': unknown option 'match_type'; "
            "accepted options: include_intermediate_responses_in_final, threshold",
            id="trajectory_precision-no-options",
        ),
        pytest.param(
            {"response_match_score": {"threshold": 0.8, "treshold": 0.5}},
            f"{CONFIG_FILE}: field 'criteria.response_match_score.treshold': unknown option 'treshold' "
            "(did you mean 'threshold'?); accepted options: include_intermediate_responses_in_final, threshold",
            id="response_match_score-treshold",
        ),
        pytest.param(
            {"tool_trajectory_avg_score": {"threshold": 1.0, "matchTyp": "IN_ORDER"}},
            f"{CONFIG_FILE}: field 'criteria.tool_trajectory_avg_score.matchTyp': unknown option 'matchTyp' "
            "(did you mean 'matchType'?); accepted options: ignore_args, include_intermediate_responses_in_final, "
            "match_type, threshold",
            id="tool_trajectory_avg_score-camel-case-typo",
        ),
        pytest.param(
            {"trajectory_single_tool_use": {"threshold": 1.0, "toolName": "get_weather", "tool": "x"}},
            f"{CONFIG_FILE}: field 'criteria.trajectory_single_tool_use.tool': unknown option 'tool' (did you mean "
            "'tool_name'?); accepted options: include_intermediate_responses_in_final, threshold, tool_name",
            id="trajectory_single_tool_use",
        ),
        pytest.param(
            {"final_response_match_v2": {"threshold": 0.5, "judge_model_options": {"num_sample": 3}}},
            f"{CONFIG_FILE}: field 'criteria.final_response_match_v2.judge_model_options.num_sample': unknown "
            "option 'num_sample' (did you mean 'num_samples'?); accepted options: judge_model, judge_model_config, "
            "num_samples, parallelism_limit",
            id="nested-judge_model_options",
        ),
    ],
)
def test_an_unknown_option_fails_in_one_line_with_a_close_match(criteria: dict[str, Any], line: str) -> None:
    assert rejection(criteria) == line


def test_a_judged_metric_names_its_options_model_fields() -> None:
    line = rejection({"hallucinations_v1": {"threshold": 0.5, "evaluate_intermediate_responses": True}})
    assert line.startswith(
        f"{CONFIG_FILE}: field 'criteria.hallucinations_v1.evaluate_intermediate_responses': unknown option "
        "'evaluate_intermediate_responses' (did you mean 'evaluate_intermediate_nl_responses'?); accepted options: "
    )
    accepted = set(line.rpartition("accepted options: ")[2].split(", "))
    assert accepted >= {"threshold", "judge_model_options", "evaluate_intermediate_nl_responses"}


def test_the_first_unknown_option_is_named_even_with_a_correct_one_beside_it() -> None:
    line = rejection({"response_similarity": {"threshold": 0.5, "algorithm": "exact", "ignorecase": False}})
    assert "field 'criteria.response_similarity.ignorecase': unknown option 'ignorecase' (did you mean " in line


# ------------------------------------------------------------------------------------- ADK's keys kept
ADK_CONFIG: dict[str, Any] = {
    "tool_trajectory_avg_score": {"threshold": 1.0, "matchType": "in-order", "ignore_args": True},
    "response_match_score": {"threshold": 0.8, "includeIntermediateResponsesInFinal": True},
    "final_response_match_v2": {
        "threshold": 0.5,
        "judgeModelOptions": {"judgeModel": "gemini-2.5-flash", "numSamples": 3},
        "include_intermediate_responses_in_final": True,
    },
    "hallucinations_v1": {"threshold": 0.5, "evaluateIntermediateNlResponses": True},
    "rubric_based_final_response_quality_v1": {
        "threshold": 0.5,
        "rubrics": [{"rubric_id": "r1", "rubric_content": {"text_property": "Polite."}}],
    },
    "per_turn_user_simulator_quality_v1": {"threshold": 0.5, "stopSignal": "</done>"},
    "tool_trajectory_score": {"threshold": 1.0, "strictOrder": False, "strict_args": True},
    "response_similarity": {"threshold": 0.5, "algorithm": "rouge_l", "ignoreCase": False, "normalize": True},
    "trajectory_single_tool_use": {"threshold": 1.0, "tool_name": "get_weather"},
    "tool_trajectory_match": {"threshold": 0.8, "order": "in_order", "args": {"mode": "subset"}},
}


def test_every_metric_declares_the_options_it_accepts() -> None:
    accepted = {name: REGISTRY.get(name).accepted_options or frozenset() for name in ADK_CONFIG}
    assert accepted["tool_trajectory_avg_score"] == {
        "threshold",
        "include_intermediate_responses_in_final",
        "match_type",
        "ignore_args",
    }
    assert accepted["response_match_score"] == {"threshold", "include_intermediate_responses_in_final"}
    assert accepted["hallucinations_v1"] >= {  # the options model's fields, whatever it adds
        "threshold",
        "include_intermediate_responses_in_final",
        "judge_model_options",
        "evaluate_intermediate_nl_responses",
    }
    assert accepted["tool_trajectory_score"] == {
        "threshold",
        "include_intermediate_responses_in_final",
        "strict_order",
        "strict_args",
    }
    resolve(ADK_CONFIG)  # snake, camel and ADK's BaseCriterion keys all resolve


def test_adk_custom_metrics_accept_any_option_because_adk_passes_the_criterion_through() -> None:
    custom = {"my_metric": {"code_config": {"name": f"{EXAMPLE}.share_of_short_responses"}}}
    criterion = {"threshold": 0.5, "max_words": 3, "anything": [1]}
    [(_, spec)] = resolve({"my_metric": criterion}, custom_metrics=custom)
    assert spec.accepted_options is None


# ---------------------------------------------------------------------------------- bad values still fail
@pytest.mark.parametrize(
    ("criteria", "field", "message"),
    [
        ({"response_similarity": {"threshold": 0.5, "algorithm": 3}}, "algorithm", "unknown algorithm 3"),
        ({"tool_trajectory_score": {"threshold": 1, "strict_args": "yes"}}, "strict_args", "true or false"),
        ({"tool_trajectory_avg_score": {"threshold": 1, "ignoreArgs": "maybe"}}, "ignore_args", "boolean"),
        ({"trajectory_single_tool_use": {"threshold": 1, "tool_name": ""}}, "tool_name", "non-empty string"),
    ],
)
def test_a_known_option_with_a_bad_value_still_fails(criteria: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(EvalInputError) as raised:
        resolve(criteria)
    [name] = criteria
    assert raised.value.field == f"criteria.{name}.{field}"
    assert message in raised.value.message
    assert "unknown option" not in raised.value.message


# ------------------------------------------------------------------------------------------ custom metrics
def words(invocation: Invocation) -> int:
    return len(content_text(invocation.final_response).split())


def custom_registry() -> MetricRegistry:
    """A registry with one metric of each declaration style (a test-local registry: the built-ins stay as they are)."""
    registry = MetricRegistry()

    @invocation_metric("within_words", description="At most max_words words.", registry=registry)
    def within_words(actual: Invocation, expected: Invocation | None, *, max_words: int = 50) -> float:
        return float(words(actual) <= max_words)

    class Budget(CriterionOptions):
        max_words: int = Field(default=50, ge=1)

    @invocation_metric("within_budget", description="Model-declared.", options=Budget, registry=registry)
    def within_budget(actual: Invocation, expected: Invocation | None, **options: Any) -> float:
        return float(words(actual) <= options["max_words"])

    @invocation_metric("keyed", description="Key-declared.", option_keys={"limit"}, registry=registry)
    def keyed(actual: Invocation, expected: Invocation | None, **options: Any) -> float:
        return 1.0

    register_custom_metric(CustomMetric("row_metric", lambda row: {"row_metric": 1.0}), registry=registry)
    return registry


@pytest.mark.parametrize(
    ("criteria", "line"),
    [
        pytest.param(
            {"within_words": {"threshold": 1.0, "max_word": 3}},
            f"{CONFIG_FILE}: field 'criteria.within_words.max_word': unknown option 'max_word' (did you mean "
            "'max_words'?); accepted options: include_intermediate_responses_in_final, max_words, threshold",
            id="signature-declared",
        ),
        pytest.param(
            {"within_budget": {"threshold": 1.0, "maxWord": 3}},
            f"{CONFIG_FILE}: field 'criteria.within_budget.maxWord': unknown option 'maxWord' (did you mean "
            "'maxWords'?); accepted options: include_intermediate_responses_in_final, max_words, threshold",
            id="model-declared",
        ),
        pytest.param(
            {"keyed": {"threshold": 1.0, "limits": 3}},
            f"{CONFIG_FILE}: field 'criteria.keyed.limits': unknown option 'limits' (did you mean 'limit'?); "
            "accepted options: include_intermediate_responses_in_final, limit, threshold",
            id="keys-declared",
        ),
        pytest.param(
            {"row_metric": {"threshold": 0.5, "reference_column": "answer"}},
            f"{CONFIG_FILE}: field 'criteria.row_metric.reference_column': unknown option 'reference_column'; "
            "accepted options: include_intermediate_responses_in_final, threshold",
            id="vertex-custom-metric",
        ),
    ],
)
def test_custom_metrics_reject_unknown_options_up_front(criteria: dict[str, Any], line: str) -> None:
    assert rejection(criteria, custom_registry()) == line


def test_declared_custom_options_resolve_and_a_model_checks_their_values() -> None:
    registry = custom_registry()
    resolve({"within_words": {"threshold": 1.0, "maxWords": 3}, "keyed": {"threshold": 1, "limit": 2}}, registry)
    with pytest.raises(EvalInputError) as raised:
        resolve({"within_budget": {"threshold": 1.0, "max_words": 0}}, registry)
    assert raised.value.field == "criteria.within_budget.max_words"


def test_custom_metrics_get_their_declared_options_in_snake_case() -> None:
    registry = custom_registry()
    criteria = {
        "within_words": {"threshold": 1.0, "maxWords": 2, "include_intermediate_responses_in_final": True},
        "within_budget": {"threshold": 1.0, "maxWords": 3},
    }
    pairs = resolve(criteria, registry)
    reply = Invocation(
        user_content=Content(role="user", parts=[Part(text="Hi")]),
        final_response=Content(role="model", parts=[Part(text="one two three")]),
    )
    case = EvalCase(eval_id="c", conversation=[reply])
    run = AgentRun(eval_set_id="s", eval_id="c", invocations=[reply])
    scores = [asyncio.run(score_case_run(spec, eval_metric, case, run)).score for eval_metric, spec in pairs]
    assert scores == [0.0, 1.0]  # 3 words: over a budget of 2 (camelCase key), within one of 3 (model field)


def test_a_kwargs_function_must_declare_its_options() -> None:
    with pytest.raises(TypeError, match=r"takes \*\*kwargs: declare its options"):

        @invocation_metric("loose", description="Takes anything.", registry=MetricRegistry())
        def loose(actual: Invocation, expected: Invocation | None, **options: Any) -> float:
            return 1.0

    with pytest.raises(TypeError, match=r"declares options \['limit'\] that the function does not take"):

        @invocation_metric("mismatch", description="Keys it ignores.", option_keys={"limit"}, registry=MetricRegistry())
        def mismatch(actual: Invocation, expected: Invocation | None) -> float:
            return 1.0


def test_an_options_parser_without_declared_keys_is_a_programming_error() -> None:
    def parse(eval_metric: EvalMetric) -> object:
        return eval_metric.option("limit")

    def score(*args: object) -> EvaluationResult:
        return EvaluationResult()

    with pytest.raises(ValueError, match="an options parser function needs its option_keys declared"):
        MetricSpec(name="p", function=score, info=MetricInfo(metric_name="p"), options=parse)

    registry = MetricRegistry()
    metric("p", description="Parsed.", options=parse, option_keys={"limit"}, registry=registry)(score)
    assert registry.get("p").accepted_options == frozenset(
        {"threshold", "include_intermediate_responses_in_final", "limit"}
    )


# -------------------------------------------------------------------------------------------- the CLI
def test_cli_run_with_a_misspelled_option_exits_2_in_one_line_and_stores_nothing(tmp_path: Path) -> None:
    agent_dir = tmp_path / "home_automation"
    shutil.copytree(REPO_ROOT / "examples" / "home_automation", agent_dir)
    config = agent_dir / "test_config.json"
    criteria: dict[str, Any] = {
        "tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "EXACT"},
        "response_similarity": {"threshold": 0.5, "algoritm": "levenshtein"},
    }
    config.write_text(json.dumps({"criteria": criteria}), encoding="utf-8")
    store = tmp_path / "store.db"

    done = subprocess.run(
        [sys.executable, "-m", "agent_eval.cli", "run", str(agent_dir), "--db-url", f"sqlite:///{store}"],
        check=False,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"agent-eval: error: {config}: field 'criteria.response_similarity.algoritm': unknown option 'algoritm' "
        "(did you mean 'algorithm'?); accepted options: algorithm, ignore_case, ignore_punctuation, "
        "include_intermediate_responses_in_final, normalize, threshold"
    ]
    assert _stored_runs(store) == 0


def _stored_runs(store: Path) -> int:
    """The runs in the SQLite store (0 when the file was never created)."""
    if not store.exists():
        return 0
    with sqlite3.connect(store) as connection:
        tables = {row[0] for row in connection.execute("select name from sqlite_master where type = 'table'")}
        return int(connection.execute("select count(*) from runs").fetchone()[0]) if "runs" in tables else 0
