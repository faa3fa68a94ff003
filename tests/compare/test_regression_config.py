"""The `regression` section's cost and latency settings: defaults, spellings, one-line errors for bad values, and
the rules the comparison takes from them."""

from __future__ import annotations

from typing import Any

import pytest

from agent_eval.compare.efficiency import EfficiencyRules
from agent_eval.errors import EvalInputError
from agent_eval.io.loading import config_from_data
from agent_eval.schema import RegressionConfig

RELATIVE_RISE = "must be a relative rise of 0 or more, e.g. 0.25 for +25%"


def test_defaults_report_a_quarter_more_cost_and_half_again_the_latency_without_failing() -> None:
    assert EfficiencyRules.of(RegressionConfig()) == EfficiencyRules(
        cost_tolerance=0.25, latency_tolerance=0.5, fail_on_cost_regression=False, fail_on_latency_regression=False
    )


def test_settings_read_snake_or_camel_case_and_are_no_part_of_what_a_run_measures() -> None:
    plain = config_from_data({"criteria": {"response_match_score": 0.8}}, "a.json")
    section = {"costTolerance": 0, "latency_tolerance": 2, "fail_on_cost_regression": True}
    config = config_from_data({"criteria": {"response_match_score": 0.8}, "regression": section}, "b.json")

    assert config.regression is not None
    assert EfficiencyRules.of(config.regression) == EfficiencyRules(0.0, 2.0, True, False)
    assert config.scoring_fingerprint() == plain.scoring_fingerprint()


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"cost_tolerance": -0.1}, f"field 'regression.cost_tolerance': {RELATIVE_RISE}, got -0.1"),
        ({"latencyTolerance": "0.5"}, f"field 'regression.latency_tolerance': {RELATIVE_RISE}, got '0.5'"),
        ({"latency_tolerance": True}, f"field 'regression.latency_tolerance': {RELATIVE_RISE}, got True"),
        (
            {"fail_on_cost_regression": "sometimes"},
            "field 'regression.fail_on_cost_regression': input should be a valid boolean, unable to interpret input "
            "(got 'sometimes')",
        ),
        (
            {"cost_tolerence": 0.3},
            "field 'regression.cost_tolerence': unknown key 'cost_tolerence' (did you mean 'cost_tolerance'?)",
        ),
    ],
)
def test_a_bad_value_is_one_line_naming_the_file_and_the_field(section: dict[str, Any], message: str) -> None:
    with pytest.raises(EvalInputError) as error:
        config_from_data({"criteria": {"response_match_score": 0.8}, "regression": section}, "test_config.json")

    assert str(error.value) == f"test_config.json: {message}"
