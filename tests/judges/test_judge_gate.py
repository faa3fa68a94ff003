"""Gates trust only calibrated judges (`judge.min_agreement`, `agent_eval.judges.gate`): a judged criterion whose
judge identity has no check, or whose newest check's kappa is below the floor, is informational: it fails no
case, the summary says why (`Judge: ...`), and the comparison with the baseline never lets it regress.

The units use hand-stored checks; the flow tests run echo cases through the real flow and CLI, final_response_match_v2
judged by the real client over HTTP to the fake Gemini server (`tests.judges.test_judge_check`'s helpers).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from sqlalchemy.engine import Engine

from agent_eval import evaluate
from agent_eval.compare.regression import compare_runs
from agent_eval.judges.gate import gate_results, uncalibrated_judges
from agent_eval.plan.eval_plan import prepare
from agent_eval.plan.request import EvalRequest
from agent_eval.results.aggregate import build_report, case_status
from agent_eval.results.model import MetricResult, RunReport
from agent_eval.results.run_configs import identity_key
from agent_eval.schema import AgentRun, EvalCase, EvalConfig, EvalStatus, JudgeConfig
from agent_eval.store import get_engine
from agent_eval.store.labels import save_judge_check
from agent_eval.store.models import JudgeCheckRecord
from agent_eval.store.reports import load_report
from tests.fakes.gemini_server import FAKE_API_KEY, FakeGeminiServer
from tests.flows.judge_scripts import JudgeRouter
from tests.judges.stored_runs import turn
from tests.judges.test_judge_check import (
    AGENT,
    FINAL,
    Verdicts,
    cli,
    judge_router,
    judged_config,
    run_identity,
    write_cases,
)

SAFETY = "safety_v1"
TRAJECTORY = "tool_trajectory_avg_score"
IDENTITY: dict[str, Any] = {
    "model": "gemini-2.5-flash",
    "mode": "agent-eval",
    "prompts": "prompts 0123456789ab",
    "samples": 3,
}
OTHER = {**IDENTITY, "samples": 5}
START = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
NO_CHECK = (
    f"{FINAL}: judge not calibrated (no check of this judge yet: `agent-eval judges check {FINAL}`, floor 0.60): "
    "informational"
)
LOW_KAPPA = f"{FINAL}: judge not calibrated (kappa 0.41 [0.22, 0.58] on 37 labels, floor 0.60): informational"
CASES = ["c00", "c01", "c02", "c03"]


def stored_check(
    engine: Engine,
    identity: dict[str, Any],
    kappa: float | None,
    *,
    minutes: int = 0,
    labels: int = 37,
    interval: tuple[float, float] | None = None,
    metric: str = FINAL,
) -> JudgeCheckRecord:
    """A judge check of `identity` stored `minutes` after START."""
    return save_judge_check(
        JudgeCheckRecord(
            metric_name=metric,
            judge_key=identity_key(identity),
            judge=identity,
            checked_at=START + timedelta(minutes=minutes),
            labels=labels,
            kappa=kappa,
            kappa_low=interval[0] if interval else None,
            kappa_high=interval[1] if interval else None,
        ),
        engine,
    )


# ---------------------------------------------------------------------------------------------------- units
def test_a_judge_is_calibrated_only_by_a_check_of_its_identity_at_or_above_the_floor(sqlite_url: str) -> None:
    engine = get_engine(sqlite_url)
    judges = {"home": {FINAL: IDENTITY}, "away": {FINAL: OTHER}}
    floors = {"home": {FINAL: 0.6}, "away": {FINAL: 0.6}}

    assert uncalibrated_judges(judges, floors, engine) == {("home", FINAL): NO_CHECK, ("away", FINAL): NO_CHECK}

    stored_check(engine, OTHER, 0.9)  # another identity's check: calibrates "away" only
    assert uncalibrated_judges(judges, floors, engine) == {("home", FINAL): NO_CHECK}
    stored_check(engine, IDENTITY, 0.9, metric=SAFETY)  # the same identity on another metric does not count
    assert uncalibrated_judges(judges, floors, engine) == {("home", FINAL): NO_CHECK}

    stored_check(engine, IDENTITY, 0.41, minutes=1, interval=(0.22, 0.58))
    assert uncalibrated_judges(judges, floors, engine) == {("home", FINAL): LOW_KAPPA}
    assert uncalibrated_judges(judges, {"home": {FINAL: 0.41}}, engine) == {}  # at the floor: calibrated
    assert uncalibrated_judges(judges, {"home": {FINAL: 0.4}}, engine) == {}

    stored_check(engine, IDENTITY, 0.6, minutes=2)  # the newest check counts
    assert uncalibrated_judges(judges, floors, engine) == {}
    assert uncalibrated_judges(judges, {"home": {FINAL: 0.7}}, engine) == {
        ("home", FINAL): f"{FINAL}: judge not calibrated (kappa 0.60 on 37 labels, floor 0.70): informational"
    }

    stored_check(engine, IDENTITY, None, minutes=3, labels=12)
    assert uncalibrated_judges(judges, floors, engine) == {
        ("home", FINAL): f"{FINAL}: judge not calibrated (its last check measured no kappa on 12 labels, floor 0.60): "
        "informational"
    }
    # a criterion without a floor, or a run without an identity for it
    assert uncalibrated_judges(judges, {}, engine) == {}
    assert uncalibrated_judges({}, {"home": {FINAL: 0.6}}, engine) == {("home", FINAL): NO_CHECK}


def test_min_agreement_gives_each_criterion_its_floor_and_rejects_a_kappa_out_of_range(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", FAKE_API_KEY)  # a plan checks that its judges can be called
    assert JudgeConfig().agreement_floor(FINAL) is None
    assert JudgeConfig(min_agreement=0.5).agreement_floor(FINAL) == 0.5
    per_metric = JudgeConfig(min_agreement={"default": 0.6, FINAL: 0.7})
    assert (per_metric.agreement_floor(FINAL), per_metric.agreement_floor(SAFETY)) == (0.7, 0.6)
    assert JudgeConfig(min_agreement={FINAL: 0.7}).agreement_floor(SAFETY) is None
    assert JudgeConfig(min_agreement=-1).agreement_floor(FINAL) == -1

    for bad, shown in ((2, "2"), (-1.5, "-1.5"), ({"default": 1.01}, "1.01")):
        with pytest.raises(ValidationError) as raised:
            JudgeConfig(min_agreement=bad)
        assert f"must be a kappa from -1 to 1, e.g. 0.6, got {shown}" in str(raised.value)
    with pytest.raises(ValidationError, match="must be a kappa from -1 to 1"):
        EvalConfig.model_validate(judged_config(judge={"min_agreement": 2}))

    # the plan's floors: judged criteria only, each its own or the default
    eval_file = write_cases(tmp_path, ["c00"])
    criteria = {**judged_config()["criteria"], SAFETY: {"threshold": 1.0}, TRAJECTORY: 1.0}

    def floors(judge: dict[str, Any] | None) -> dict[str, dict[str, float]]:
        config = {"criteria": criteria, **({"judge": judge} if judge is not None else {})}
        request = EvalRequest(paths=[str(eval_file)], agent=AGENT, config=config, db_url=f"sqlite:///{tmp_path}/s.db")
        return prepare(request).judge_floors()

    eval_set_id = eval_file.name.removesuffix(".evalset.json")
    assert floors(None) == {}
    assert floors({"retry_attempts": 2}) == {}
    assert floors({"min_agreement": 0.5}) == {eval_set_id: {FINAL: 0.5, SAFETY: 0.5}}
    assert floors({"min_agreement": {"default": 0.5, FINAL: 0.7}}) == {eval_set_id: {FINAL: 0.7, SAFETY: 0.5}}
    assert floors({"min_agreement": {FINAL: 0.7}}) == {eval_set_id: {FINAL: 0.7}}


def _result(eval_id: str, status: EvalStatus, *, metric: str = FINAL, eval_set_id: str = "home") -> MetricResult:
    score = {EvalStatus.PASSED: 1.0, EvalStatus.FAILED: 0.0}.get(status)
    return MetricResult(
        metric_name=metric,
        eval_set_id=eval_set_id,
        eval_id=eval_id,
        score=score,
        status=status,
        threshold=0.5,
        explanation="2 of 3 samples agree" if score is not None else "judge gave no usable answer",
        details={"judge_model": "gemini-2.5-flash"},
    )


def test_gate_results_makes_an_uncalibrated_criterions_verdicts_informational() -> None:
    results = [
        _result("a", EvalStatus.PASSED),
        _result("b", EvalStatus.FAILED),
        _result("c", EvalStatus.NOT_EVALUATED),
        _result("b", EvalStatus.FAILED, eval_set_id="away"),
        _result("b", EvalStatus.FAILED, metric=TRAJECTORY),
    ]

    gated = gate_results(results, {("home", FINAL): NO_CHECK})

    assert [r.status for r in gated] == [
        EvalStatus.INFORMATIONAL,
        EvalStatus.INFORMATIONAL,
        EvalStatus.NOT_EVALUATED,
        EvalStatus.FAILED,
        EvalStatus.FAILED,
    ]
    assert [r.score for r in gated] == [1.0, 0.0, None, 0.0, 0.0]
    assert gated[1].explanation == f"{NO_CHECK}; 2 of 3 samples agree"
    assert gated[1].details == {"judge_model": "gemini-2.5-flash", "uncalibrated_judge": NO_CHECK}
    assert gated[2:] == results[2:]
    assert results[1].status is EvalStatus.FAILED and "uncalibrated_judge" not in results[1].details
    assert not gated[1].gates
    run = AgentRun(eval_set_id="home", eval_id="b")
    assert case_status(run, [gated[1]]) is EvalStatus.PASSED
    assert case_status(run, [gated[1], _result("b", EvalStatus.FAILED, metric=TRAJECTORY)]) is EvalStatus.FAILED
    assert gate_results(results, {}) == results


def _report(run_id: str, scores: list[float], *, uncalibrated: dict[str, str], recorded: bool = False) -> RunReport:
    """A run of cases c0.. judged by FINAL with these scores (passed at 0.5), the summary's uncalibrated judges."""
    results = [
        _result(f"c{i}", EvalStatus.PASSED if score >= 0.5 else EvalStatus.FAILED).model_copy(update={"score": score})
        for i, score in enumerate(scores)
    ]
    if uncalibrated:
        results = gate_results(results, {("home", metric): reason for metric, reason in uncalibrated.items()})
    runs = [(_case(f"c{i}"), AgentRun(eval_set_id="home", eval_id=f"c{i}")) for i in range(len(scores))]
    report = build_report(
        run_id=run_id,
        runs=runs,
        metric_results=results,
        config=EvalConfig.model_validate(judged_config()),
        eval_set_ids=["home"],
        agent_reference=AGENT,
        agent_fingerprint="f00d",
        num_runs=1,
        started_at=START,
        completed_at=START,
    )
    if recorded:
        report = report.model_copy(
            update={
                "cases": [
                    c.model_copy(update={"recorded_from": [f"spans.jsonl:{i}"]}) for i, c in enumerate(report.cases)
                ]
            }
        )
    summary = report.summary.model_copy(update={"uncalibrated_judges": uncalibrated})
    return report.model_copy(update={"summary": summary})


def _case(eval_id: str) -> EvalCase:
    return EvalCase(eval_id=eval_id, conversation=[turn(f"question {eval_id}?", "answer.")])


def test_an_uncalibrated_judge_never_regresses_and_the_notes_say_why() -> None:
    baseline = _report("base", [1.0] * 6, uncalibrated={})
    current = _report("now", [0.0] * 6, uncalibrated={FINAL: NO_CHECK})
    calibrated = _report("now", [0.0] * 6, uncalibrated={})

    gated = compare_runs(baseline, current)
    control = compare_runs(baseline, calibrated)

    assert control.regressed and [m.metric_name for m in control.metrics if m.regressed] == [FINAL]
    assert not gated.regressed
    (metric,) = gated.metrics
    assert (metric.metric_name, metric.informational, metric.regressed) == (FINAL, True, False)
    assert metric.difference == pytest.approx(-1.0)
    assert gated.flipped_to_failing == [] and gated.hard_regressions == []
    assert NO_CHECK in gated.notes
    assert NO_CHECK in gated.to_payload()["summary"].splitlines()


def test_recorded_traffic_notes_say_why_an_uncalibrated_judge_did_not_regress() -> None:
    baseline = _report("base", [1.0] * 6, uncalibrated={}, recorded=True)
    current = _report("now", [0.0] * 6, uncalibrated={FINAL: NO_CHECK}, recorded=True)

    gated = compare_runs(baseline, current)

    assert not gated.regressed and gated.metrics[0].informational  # holds today
    assert NO_CHECK in gated.notes


# ---------------------------------------------------------------------------------------------- flow runs
@pytest.fixture
def verdicts() -> Verdicts:
    return Verdicts()


@pytest.fixture
def judge(
    fake_gemini: FakeGeminiServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, verdicts: Verdicts
) -> Iterator[JudgeRouter]:
    yield from judge_router(fake_gemini, monkeypatch, tmp_path / "home", verdicts)


def _run(capsys: pytest.CaptureFixture[str], eval_file: Path, config: Path, db_url: str) -> tuple[int, str, RunReport]:
    """`agent-eval run` through `main`: the exit code, stdout, and the stored report."""
    argv = ["run", str(eval_file), "--agent", AGENT, "--config", str(config), "--db-url", db_url, "-q"]
    code, out, err = cli(capsys, *argv)
    assert "error" not in err, err
    run_id = out.split()[2]  # "agent-eval run <id>  eval sets: ..."
    return code, out, load_report(run_id, get_engine(db_url))


def _final(report: RunReport, eval_id: str) -> MetricResult:
    return next(m for case in report.cases if case.eval_id == eval_id for m in case.metrics if m.metric_name == FINAL)


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_server", "quiet_cli_env")
def test_a_run_gates_on_a_judge_only_once_a_check_calibrated_it(
    judge: JudgeRouter, verdicts: Verdicts, tmp_path: Path, sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    verdicts.by_case.update({eval_id: eval_id != "c03" for eval_id in CASES})  # the judge fails c03
    eval_file = write_cases(tmp_path, CASES)
    config = tmp_path / "gated.json"
    config.write_text(json.dumps(judged_config(judge={"min_agreement": 0.6})), encoding="utf-8")
    engine = get_engine(sqlite_url)

    code, out, report = _run(capsys, eval_file, config, sqlite_url)

    assert code == 0
    assert judge.count(FINAL) == 4 * 3
    assert "Total: 4  Passed: 4  Failed: 0  Pass rate: 100.0%" in out.splitlines()
    assert f"Judge: {NO_CHECK}" in out.splitlines()
    assert report.summary.uncalibrated_judges == {FINAL: NO_CHECK}
    failed = _final(report, "c03")
    assert (failed.score, failed.status) == (0.0, EvalStatus.INFORMATIONAL)
    assert failed.details["uncalibrated_judge"] == NO_CHECK
    assert (failed.explanation or "").startswith(f"{NO_CHECK}; ")
    assert _final(report, "c00").status is EvalStatus.INFORMATIONAL
    identity = run_identity(report)

    # a check of this identity, below the floor: still informational, the reason gives its kappa
    stored_check(engine, identity, 0.41, interval=(0.22, 0.58))
    code, out, report = _run(capsys, eval_file, config, sqlite_url)
    assert code == 0 and f"Judge: {LOW_KAPPA}" in out.splitlines()
    assert report.summary.uncalibrated_judges == {FINAL: LOW_KAPPA}

    # a check of another identity (1 sample) at 0.9 changes nothing
    stored_check(engine, {**identity, "samples": 1}, 0.9, minutes=1)
    code, out, report = _run(capsys, eval_file, config, sqlite_url)
    assert code == 0 and report.summary.uncalibrated_judges == {FINAL: LOW_KAPPA}

    # a store whose newest check of this identity is 0.75: calibrated, the judge's verdict fails c03 (a store of
    # its own: in this one the earlier runs would be the baseline, see the next test)
    calibrated_url = f"sqlite:///{tmp_path / 'calibrated.db'}"
    stored_check(get_engine(calibrated_url), identity, 0.75)
    code, out, report = _run(capsys, eval_file, config, calibrated_url)
    assert code == 1
    assert "Total: 4  Passed: 3  Failed: 1  Pass rate: 75.0%" in out.splitlines()
    assert not [line for line in out.splitlines() if line.startswith("Judge: ")]
    assert report.summary.uncalibrated_judges == {}
    assert _final(report, "c03").status is EvalStatus.FAILED
    assert "uncalibrated_judge" not in _final(report, "c03").details
    assert [case.eval_id for case in report.failures()] == ["c03"]
    assert run_identity(report) == identity


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_server", "quiet_cli_env")
def test_calibrating_a_judge_is_not_a_regression_of_the_cases_it_now_fails(
    judge: JudgeRouter, verdicts: Verdicts, tmp_path: Path, sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    verdicts.by_case.update({eval_id: eval_id != "c03" for eval_id in CASES})  # the judge fails c03
    eval_file = write_cases(tmp_path, CASES)
    config = tmp_path / "gated.json"
    config.write_text(json.dumps(judged_config(judge={"min_agreement": 0.6})), encoding="utf-8")
    code, _, before = _run(capsys, eval_file, config, sqlite_url)
    assert code == 0 and before.summary.uncalibrated_judges == {FINAL: NO_CHECK}
    stored_check(get_engine(sqlite_url), run_identity(before), 0.75)

    code, _, after = _run(capsys, eval_file, config, sqlite_url)

    regression = after.regression or {}
    assert regression["baseline_run_id"] == before.run_id  # holds today
    assert _final(after, "c03").status is EvalStatus.FAILED  # holds today
    assert regression["hard_regressions"] == []  # today: ["<eval set>/c03"]
    assert regression["regressed"] is False
    assert code == 1  # c03 failed; today 3


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_server")
def test_a_run_whose_uncalibrated_judge_fails_every_case_does_not_regress(
    judge: JudgeRouter, verdicts: Verdicts, tmp_path: Path, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    verdicts.by_case.update(dict.fromkeys(CASES, True))
    eval_file = write_cases(tmp_path, CASES)
    baseline = evaluate(eval_file, agent=AGENT, config=judged_config(), db_url=sqlite_url)
    assert baseline.summary.passed == 4 and baseline.summary.uncalibrated_judges == {}

    monkeypatch.setenv("AGENT_EVAL_HOME", str(tmp_path / "home2"))  # a fresh judge cache
    verdicts.by_case.update(dict.fromkeys(CASES, False))
    current = evaluate(eval_file, agent=AGENT, config=judged_config(judge={"min_agreement": 0.6}), db_url=sqlite_url)

    assert judge.count(FINAL) == 2 * 4 * 3
    assert {_final(current, eval_id).score for eval_id in CASES} == {0.0}
    assert current.summary.passed == 4
    assert current.summary.uncalibrated_judges == {FINAL: NO_CHECK}
    regression = current.regression or {}
    assert regression["baseline_run_id"] == baseline.run_id  # min_agreement is not part of what was measured
    assert regression["regressed"] is False and regression["regressed_metrics"] == []
    (metric,) = regression["metrics"]
    assert (metric["metric_name"], metric["informational"], metric["regressed"]) == (FINAL, True, False)
    assert metric["difference"] == pytest.approx(-1.0)
    assert NO_CHECK in regression["notes"]
    assert regression["flipped_to_failing"] == []

    # the same comparison with the judge calibrated regresses
    engine = get_engine(sqlite_url)
    trusted = current.model_copy(update={"summary": current.summary.model_copy(update={"uncalibrated_judges": {}})})
    assert compare_runs(load_report(baseline.run_id, engine, details=False), trusted).regressed
