"""Vertex AI's metrics_table and summary_metrics: exact columns, values computed by hand, file round trips."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from agent_eval.render import metrics_table, summary_metrics, write_table
from tests.render.builders import (
    BROKEN,
    LOWERCASE_WHY,
    NOT_SCORED,
    RESPONSE,
    TRAJECTORY,
    repeated_report,
    sample_report,
)

COLUMNS = [
    "eval_set_id",
    "eval_id",
    "run_index",
    "prompt",
    "response",
    "reference",
    "predicted_trajectory",
    "reference_trajectory",
    "latency_in_seconds",
    "failure",
    f"{TRAJECTORY}/score",
    f"{TRAJECTORY}/explanation",
    f"{RESPONSE}/score",
    f"{RESPONSE}/explanation",
]


def _rows() -> dict[str, dict[str, object]]:
    table = metrics_table(sample_report())
    return {row["eval_id"]: row for row in table.to_dict(orient="records")}


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def test_metrics_table_has_vertex_columns_and_one_row_per_case_run() -> None:
    table = metrics_table(sample_report())

    assert list(table.columns) == COLUMNS
    assert list(table["eval_id"]) == ["two_turns", "lowercase", "boom", "fine", "broken_metric"]
    assert list(table["failure"]) == [0, 0, 1, 0, 0]
    assert list(table["latency_in_seconds"]) == [1.0, 0.25, 0.5, 0.25, 0.5]
    assert list(table["run_index"]) == [0, 0, 0, 0, 0]


def test_multi_turn_texts_are_joined_with_a_newline_and_trajectories_span_all_turns() -> None:
    row = _rows()["two_turns"]

    assert row["prompt"] == "turn on the lamp\nhow warm is the office?"
    assert row["response"] == "The lamp is on.\n22."
    assert row["reference"] == "The lamp is on.\nIt is 22 degrees in the Office."
    assert row["predicted_trajectory"] == [
        {"tool_name": "set_device_info", "tool_input": {"device_id": "lamp", "updates": {"status": "ON"}}},
        {"tool_name": "get_temperature", "tool_input": {"location": "Office"}},
    ]
    assert row["reference_trajectory"] == row["predicted_trajectory"]
    assert row[f"{RESPONSE}/score"] == 0.6
    assert row[f"{RESPONSE}/explanation"] == "turn 2: rouge1 0.200"


def test_event_shaped_actual_invocations_give_the_same_trajectory() -> None:
    row = _rows()["fine"]

    assert row["predicted_trajectory"] == [{"tool_name": "get_temperature", "tool_input": {"location": "Office"}}]
    assert row["predicted_trajectory"] == row["reference_trajectory"]


def test_agent_failure_row_has_failure_1_an_empty_response_and_the_reason() -> None:
    row = _rows()["boom"]

    assert (row["failure"], row["response"], row["predicted_trajectory"]) == (1, "", [])
    assert row["prompt"] == "boom please"
    assert row["reference"] == "Sure."
    assert _missing(row[f"{TRAJECTORY}/score"])
    assert row[f"{TRAJECTORY}/explanation"] == NOT_SCORED


def test_explanation_falls_back_to_the_metric_error() -> None:
    rows = _rows()

    assert rows["lowercase"][f"{TRAJECTORY}/explanation"] == LOWERCASE_WHY
    assert _missing(rows["broken_metric"][f"{RESPONSE}/score"])
    assert rows["broken_metric"][f"{RESPONSE}/explanation"] == BROKEN
    assert _missing(rows["fine"][f"{RESPONSE}/explanation"])


def test_summary_metrics_means_and_sample_std_by_hand() -> None:
    summary = summary_metrics(sample_report())

    assert list(summary.columns) == [
        "row_count",
        f"{TRAJECTORY}/mean",
        f"{TRAJECTORY}/std",
        f"{RESPONSE}/mean",
        f"{RESPONSE}/std",
        "latency_in_seconds/mean",
        "failure/mean",
    ]
    row = summary.iloc[0]
    assert len(summary) == 1
    assert row["row_count"] == 5
    # trajectory scores 1, 0, 1, 1 (boom unscored): mean 0.75, squared deviations 3 * 0.0625 + 0.5625 = 0.75 over 3
    assert row[f"{TRAJECTORY}/mean"] == pytest.approx(0.75)
    assert row[f"{TRAJECTORY}/std"] == pytest.approx(0.5)
    # response scores 0.6, 1.0, 0.8: mean 0.8, squared deviations 0.04 + 0.04 + 0 = 0.08 over 2
    assert row[f"{RESPONSE}/mean"] == pytest.approx(0.8)
    assert row[f"{RESPONSE}/std"] == pytest.approx(0.2)
    assert row["latency_in_seconds/mean"] == pytest.approx(0.5)  # (1 + 0.25 + 0.5 + 0.25 + 0.5) / 5
    assert row["failure/mean"] == pytest.approx(0.2)


def test_std_of_a_single_row_is_nan_like_pandas() -> None:
    summary = summary_metrics(repeated_report(num_runs=1))

    assert summary.iloc[0]["row_count"] == 1
    assert summary.iloc[0][f"{TRAJECTORY}/mean"] == 1.0
    assert math.isnan(summary.iloc[0][f"{TRAJECTORY}/std"])


def test_repeated_runs_are_rows_of_their_own() -> None:
    table = metrics_table(repeated_report(num_runs=3))

    assert list(zip(table["eval_id"], table["run_index"], strict=True)) == [("fine", 0), ("fine", 1), ("fine", 2)]
    assert summary_metrics(repeated_report(num_runs=3)).iloc[0][f"{TRAJECTORY}/std"] == 0.0


def test_csv_round_trip_gives_back_the_trajectory_lists(tmp_path: Path) -> None:
    table = metrics_table(sample_report())

    path = write_table(table, tmp_path / "metrics_table.csv")

    back = pd.read_csv(path)
    assert list(back.columns) == COLUMNS
    for column in ("predicted_trajectory", "reference_trajectory"):
        assert [json.loads(cell) for cell in back[column]] == list(table[column])
    assert list(back["prompt"]) == list(table["prompt"])
    assert back[f"{RESPONSE}/score"].tolist()[:2] == [0.6, 1.0]


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_json_records_keep_trajectories_as_lists_and_missing_as_null(tmp_path: Path, suffix: str) -> None:
    table = metrics_table(sample_report())

    path = write_table(table, tmp_path / f"metrics_table{suffix}")

    text = path.read_text(encoding="utf-8")
    records = json.loads(text) if suffix == ".json" else [json.loads(line) for line in text.splitlines()]
    assert [list(record) for record in records] == [COLUMNS] * 5
    assert [r["predicted_trajectory"] for r in records] == list(table["predicted_trajectory"])
    boom = records[2]
    assert boom[f"{TRAJECTORY}/score"] is None
    assert boom["latency_in_seconds"] == 0.5
    assert records[3][f"{RESPONSE}/explanation"] is None


def test_a_conversation_scenario_case_has_no_reference(tmp_path: Path) -> None:
    report = sample_report()
    report.cases[3] = report.cases[3].model_copy(update={"expected_invocations": None})

    row = metrics_table(report).iloc[3]

    assert row["prompt"] == "what is the office temperature?"  # the users' turns of the actual run
    assert _missing(row["reference"])
    assert row["reference_trajectory"] is None
    back = pd.read_csv(write_table(metrics_table(report), tmp_path / "t.csv"))
    assert _missing(back["reference_trajectory"][3])


def test_an_unknown_suffix_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"use a \.csv, \.json or \.jsonl file"):
        write_table(metrics_table(sample_report()), tmp_path / "table.xlsx")
