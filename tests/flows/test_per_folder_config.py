"""Each eval folder keeps its own config (issue 18 #4), as ADK scores each eval file with the test_config.json
beside it: whatever the order of the paths, unless --config is given for all of them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_eval import evaluate, rerun, rescore
from agent_eval.plan.eval_plan import EvalRequest, prepare
from agent_eval.render import format_summary
from agent_eval.results.model import RunReport
from agent_eval.store import get_engine, get_run
from tests.flows.helpers import write_echo_set

AGENT = "tests.flows.agents_for_tests:echo_agent"
TRAJECTORY, RESPONSE = "tool_trajectory_avg_score", "response_match_score"


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    """Folder `a` scores the trajectory only, folder `b` the response only; two echo cases each."""
    made = []
    for name, criteria in (("a", {TRAJECTORY: 1.0}), ("b", {RESPONSE: 0.5})):
        folder = tmp_path / name
        folder.mkdir()
        write_echo_set(folder, [f"{name}1", f"{name}2"])
        (folder / "test_config.json").write_text(json.dumps({"criteria": criteria}), encoding="utf-8")
        made.append(folder)
    return made[0], made[1]


def _by_folder(report: RunReport) -> dict[str, list[str]]:
    """Folder name (the cases' first letter) → the metric names its cases were scored with."""
    scored: dict[str, set[str]] = {}
    for case in report.cases:
        scored.setdefault(case.eval_id[0], set()).update(m.metric_name for m in case.metrics)
    return {folder: sorted(names) for folder, names in sorted(scored.items())}


def _config_line(report: RunReport) -> str:
    """The summary's line saying which config scored which eval set."""
    return next(line for line in format_summary(report).splitlines() if line.startswith("Config: "))


def _scored_by(*folders: Path) -> str:
    """The config line of a run of these folders' eval sets, in this order, each scored with its own config."""
    each = [
        f"{next(f.glob('*.evalset.json')).name.removesuffix('.evalset.json')} ← {f / 'test_config.json'}"
        for f in folders
    ]
    return "Config: " + "; ".join(each)


def test_the_plan_gives_each_eval_set_the_config_beside_it(folders: tuple[Path, Path]) -> None:
    a, b = folders
    for paths in ([a, b], [b, a]):
        plan = prepare(EvalRequest(paths=[str(p) for p in paths], agent=AGENT))
        by_set = {i: [m.metric_name for m, _ in g.metrics] for g in plan.config_groups() for i in g.eval_set_ids}
        files = {i: f for g in plan.config_groups() for i, f in g.files.items()}
        ids = {s.eval_set_id: s for s in plan.eval_sets}
        a_id = next(i for i in ids if (a / f"{i}.evalset.json").exists())
        b_id = next(i for i in ids if i != a_id)
        assert (by_set[a_id], by_set[b_id]) == ([TRAJECTORY], [RESPONSE])
        assert (files[a_id], files[b_id]) == (str(a / "test_config.json"), str(b / "test_config.json"))
        stored = plan.stored_config()
        assert stored["per_eval_set"][a_id] == {"criteria": {TRAJECTORY: {"threshold": 1.0}}}
        assert stored["config_files"][b_id] == str(b / "test_config.json")


def test_a_file_without_a_config_beside_it_gets_the_nearest_one_below_the_named_folder(tmp_path: Path) -> None:
    top = tmp_path / "evals"
    (top / "sub").mkdir(parents=True)
    write_echo_set(top / "sub", ["x1"])  # writes evals/sub/test_config.json: removed below
    (top / "sub" / "test_config.json").unlink()
    (top / "test_config.json").write_text(json.dumps({"criteria": {RESPONSE: 0.3}}), encoding="utf-8")
    lone = tmp_path / "lone"
    lone.mkdir()
    lone_file, _ = write_echo_set(lone, ["y1"])
    (lone / "test_config.json").unlink()

    plan = prepare(EvalRequest(paths=[str(top), str(lone_file)], agent=AGENT))

    thresholds = {
        i: {m.metric_name: m.threshold for m, _ in g.metrics} for g in plan.config_groups() for i in g.eval_set_ids
    }
    nested, alone = (s.eval_set_id for s in plan.eval_sets)
    assert thresholds[nested] == {RESPONSE: 0.3}
    assert thresholds[alone] == {TRAJECTORY: 1.0, RESPONSE: 0.8}  # ADK's defaults: no config beside it


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_server")
def test_each_folder_is_scored_with_its_own_config_in_any_order_unless_config_is_given(
    folders: tuple[Path, Path], sqlite_url: str, tmp_path: Path
) -> None:
    a, b = folders
    override = tmp_path / "override.json"
    override.write_text(json.dumps({"criteria": {TRAJECTORY: 1.0, RESPONSE: 0.9}}), encoding="utf-8")

    first = evaluate([a, b], agent=AGENT, db_url=sqlite_url)
    swapped = evaluate([b, a], agent=AGENT, db_url=sqlite_url)
    both: Any = evaluate([a, b], agent=AGENT, db_url=sqlite_url, config=str(override))
    rescored = rescore(first.run_id, db_url=sqlite_url)
    rerun_report = rerun(first.run_id, db_url=sqlite_url)

    own = {"a": [TRAJECTORY], "b": [RESPONSE]}
    assert _by_folder(first) == _by_folder(swapped) == _by_folder(rescored) == _by_folder(rerun_report) == own
    assert _by_folder(both) == {"a": [RESPONSE, TRAJECTORY], "b": [RESPONSE, TRAJECTORY]}
    assert first.summary.passed == first.summary.total == 4
    stored = get_run(first.run_id, get_engine(sqlite_url)).config
    assert sorted(stored["config_files"].values()) == [str(a / "test_config.json"), str(b / "test_config.json")]
    assert _config_line(first) == _config_line(rescored) == _scored_by(a, b)
    assert _config_line(swapped) == _scored_by(b, a)
    assert _config_line(both) == "Config: all eval sets ← one config (response_match_score, tool_trajectory_avg_score)"
    # the same configs per eval set, in another order: comparable; one config for both: not
    assert swapped.regression is not None and swapped.regression["baseline_run_id"] == first.run_id
    assert both.regression is not None and both.regression["baseline_run_id"] is None
