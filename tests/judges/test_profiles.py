"""Judge profiles in configs: a criterion's `"judge_profile": NAME` (the newest kept version) or `NAME@V` resolved
from the store before the run into `judge_profile: NAME@V` and its `judge_examples`; the judge requests of the run
carry the examples, the stored config and judge identity name the version, and a run of another version is not
compared with it. Unknown or unkept profiles, a profile made for another metric and ADK-exact prompts with examples
are config errors (exit 2, one line). Real runs of the echo agent through the flow, final_response_match_v2 asked
of the fake Gemini server, whose judge (`tests.judges.test_align.Judge`) passes everything unless it is shown
examples, and then answers by `TRUTH` (c00 fails, c01 and c02 pass).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from agent_eval import evaluate
from agent_eval.metrics.judged.base import JudgeExample
from agent_eval.metrics.judged.identity import prompts_version
from agent_eval.metrics.judged.prompts import examples_section
from agent_eval.results.model import RunReport
from agent_eval.schema import EvalStatus
from agent_eval.store import get_engine
from agent_eval.store.labels import save_judge_profile
from agent_eval.store.models import JudgeProfileRecord, Run
from agent_eval.store.queries import choose_baseline
from tests.fakes.gemini_server import FakeGeminiServer
from tests.flows.judge_scripts import JudgeRouter
from tests.judges.test_align import (
    EXAMPLES_TAG,
    FINAL,
    Judge,
    align,
    case_of,
    judge_router,
    label_truth,
    run_judged,
)
from tests.judges.test_judge_check import JUDGE_MODEL, cli, write_cases

AGENT = "tests.flows.agents_for_tests:echo_agent"
THREE = ["c00", "c01", "c02"]
STRICT = [
    JudgeExample(
        user="Turn off the lamp.",
        response="The lamp is off.",
        reference="I turned off the lamp.",
        tool_calls=[{"name": "switch", "args": {"device": "lamp", "on": False}}],
        verdict=False,
        note="it never called the tool it claims",
    ),
    JudgeExample(user="What is 2 + 2?", response="4", reference="Four.", verdict=True),
]
STRICTER = [JudgeExample(user="Hello?", response="Hi.", verdict=False, note="no greeting back")]


def digest(examples: Sequence[JudgeExample]) -> str:
    """The judge identity's `examples`: the count and a hash of the examples' JSON (sorted keys)."""
    text = json.dumps([example.model_dump(mode="json") for example in examples], sort_keys=True)
    noun = "example" if len(examples) == 1 else "examples"
    return f"{len(examples)} {noun} {hashlib.sha256(text.encode()).hexdigest()[:12]}"


def save_profile(
    engine: Engine, examples: Sequence[JudgeExample], *, kept: bool = True, name: str = "strict", metric: str = FINAL
) -> JudgeProfileRecord:
    """A new version of a profile, as `judges align` stores one."""
    record = JudgeProfileRecord(
        name=name,
        version=0,
        metric_name=metric,
        examples=[example.model_dump(mode="json") for example in examples],
        created_at=datetime.now(UTC),
        kept=kept,
        evaluation={},
    )
    return save_judge_profile(record, engine)


def profile_config(profile: str, **options: Any) -> dict[str, Any]:
    """final_response_match_v2 naming a judge profile, no judge_mode (the profile makes it agent-eval), 1 sample."""
    criterion = {"threshold": 0.5, "judge_model_options": {"judge_model": JUDGE_MODEL, "num_samples": 1}}
    return {"criteria": {FINAL: {**criterion, "judge_profile": profile, **options}}}


def stored_run(engine: Engine, run_id: str) -> Run:
    with Session(engine) as session:
        run = session.get(Run, run_id)
    assert run is not None
    return run


def stored_criterion(engine: Engine, run_id: str) -> dict[str, Any]:
    return dict(stored_run(engine, run_id).config["criteria"][FINAL])


def stored_identity(engine: Engine, report: RunReport) -> dict[str, Any]:
    (eval_set_id,) = report.eval_set_ids
    return dict((stored_run(engine, report.run_id).judges or {})[eval_set_id][FINAL])


def statuses(report: RunReport) -> dict[str, EvalStatus]:
    return {case.eval_id: m.status for case in report.cases for m in case.metrics if m.metric_name == FINAL}


@pytest.fixture
def people() -> Judge:
    return Judge()


@pytest.fixture
def judge(
    fake_gemini: FakeGeminiServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, people: Judge
) -> Iterator[JudgeRouter]:
    yield from judge_router(fake_gemini, monkeypatch, tmp_path / "home", people)


# ------------------------------------------------------------------------------------------------------ runs
@pytest.mark.flow
@pytest.mark.usefixtures("prefect_server")
def test_a_run_naming_the_aligned_profile_sends_its_examples_and_stores_its_version(
    judge: JudgeRouter, tmp_path: Path, sqlite_url: str
) -> None:
    labelled, _ = run_judged(tmp_path, sqlite_url, samples=1)
    engine = get_engine(sqlite_url)
    label_truth(labelled.run_id, engine)
    alignment = align(sqlite_url)
    assert alignment.kept and alignment.profile.version == 1
    examples = [JudgeExample.model_validate(example) for example in alignment.profile.examples]
    assert len(examples) == 8
    asked = len(judge.calls)

    report = evaluate(write_cases(tmp_path, THREE), agent=AGENT, config=profile_config("strict"), db_url=sqlite_url)

    calls = judge.calls[asked:]
    assert sorted(case_of(call.section("user_prompt")) for call in calls) == THREE
    section = examples_section(examples)
    for call in calls:  # the material, then the profile's examples, once
        assert call.prompt.endswith("\n\n" + section)
        assert call.prompt.count(EXAMPLES_TAG) == 1
    # shown the people's examples, the judge follows them: c00 fails
    assert statuses(report) == {"c00": EvalStatus.FAILED, "c01": EvalStatus.PASSED, "c02": EvalStatus.PASSED}
    criterion = stored_criterion(engine, report.run_id)
    assert criterion["judge_profile"] == "strict@1"
    assert [JudgeExample.model_validate(example) for example in criterion["judge_examples"]] == examples
    assert stored_identity(engine, report) == {
        "model": JUDGE_MODEL,
        "mode": "agent-eval",  # no judge_mode given: the examples need agent-eval's prompts
        "prompts": prompts_version("agent-eval"),
        "samples": 1,
        "examples": digest(examples),
        "profile": "strict@1",
    }


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_server")
def test_runs_of_another_profile_version_are_not_compared(judge: JudgeRouter, tmp_path: Path, sqlite_url: str) -> None:
    engine = get_engine(sqlite_url)
    save_profile(engine, STRICT)
    path = write_cases(tmp_path, THREE)

    def run(profile: str = "strict") -> RunReport:
        return evaluate(path, agent=AGENT, config=profile_config(profile), db_url=sqlite_url)

    first, second = run(), run()
    assert choose_baseline(second.run_id, engine).run_id == first.run_id  # the same version: compared
    save_profile(engine, STRICTER)  # strict@2, kept: "strict" now means it
    asked = len(judge.calls)

    third = run()

    assert {call.prompt.endswith("\n\n" + examples_section(STRICTER)) for call in judge.calls[asked:]} == {True}
    assert len(judge.calls) == asked + 3
    assert stored_criterion(engine, third.run_id)["judge_profile"] == "strict@2"
    assert stored_identity(engine, third)["profile"] == "strict@2"
    assert stored_identity(engine, third)["examples"] == digest(STRICTER) != stored_identity(engine, first)["examples"]
    choice = choose_baseline(third.run_id, engine)
    assert choice.run_id is None
    assert choice.reason is not None and "was scored by another judge" in choice.reason
    assert "profile strict@2 (was strict@1)" in choice.reason

    # naming the version keeps a run comparable with the runs of that version
    pinned = run("strict@1")
    assert stored_criterion(engine, pinned.run_id)["judge_profile"] == "strict@1"
    assert choose_baseline(pinned.run_id, engine).run_id == second.run_id


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_server")
def test_the_reason_a_run_of_another_profile_version_has_no_baseline_names_the_profile(
    judge: JudgeRouter, tmp_path: Path, sqlite_url: str
) -> None:
    engine = get_engine(sqlite_url)
    save_profile(engine, STRICT)
    path = write_cases(tmp_path, THREE)
    evaluate(path, agent=AGENT, config=profile_config("strict"), db_url=sqlite_url)
    save_profile(engine, STRICTER)

    later = evaluate(path, agent=AGENT, config=profile_config("strict"), db_url=sqlite_url)

    choice = choose_baseline(later.run_id, engine)
    assert choice.run_id is None
    assert "profile strict@2 (was strict@1)" in choice.reason


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_server")
def test_a_version_named_exactly_may_be_a_refused_one(judge: JudgeRouter, tmp_path: Path, sqlite_url: str) -> None:
    engine = get_engine(sqlite_url)
    save_profile(engine, STRICT)
    save_profile(engine, STRICTER, kept=False)  # strict@2, refused: "strict" still means strict@1

    newest_kept = evaluate(
        write_cases(tmp_path, THREE), agent=AGENT, config=profile_config("strict"), db_url=sqlite_url
    )
    asked = len(judge.calls)
    refused = evaluate(write_cases(tmp_path, THREE), agent=AGENT, config=profile_config("strict@2"), db_url=sqlite_url)

    assert stored_criterion(engine, newest_kept.run_id)["judge_profile"] == "strict@1"
    assert stored_criterion(engine, refused.run_id)["judge_profile"] == "strict@2"
    calls = judge.calls[asked:]
    assert len(calls) == 3
    assert {call.prompt.endswith("\n\n" + examples_section(STRICTER)) for call in calls} == {True}


# ------------------------------------------------------------------------------------------- config errors
def run_command(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, db_url: str, config: dict[str, Any]
) -> tuple[int, str, str, Path]:
    """`agent-eval run` of the three echo cases with this config file; (exit code, stdout, stderr, the file)."""
    path = tmp_path / "test_config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    eval_set = write_cases(tmp_path, THREE)
    code, out, err = cli(capsys, "run", str(eval_set), "--agent", AGENT, "--config", str(path), "--db-url", db_url)
    return code, out, err, path


HINT = f"`agent-eval judges align {FINAL} --profile nope` makes one"


@pytest.mark.parametrize(
    "named_and_message",
    [
        ("nope", f"no kept judge profile 'nope' in the store; {HINT}"),
        ("nope@2", f"no version 2 of judge profile 'nope' in the store; {HINT}"),
        ("refused", f"no kept judge profile 'refused' in the store; {HINT.replace('nope', 'refused')}"),
        ("strict@3", f"no version 3 of judge profile 'strict' in the store; {HINT.replace('nope', 'strict')}"),
        ("safe", f"judge profile 'safe' was made for safety_v1, not {FINAL}"),
        ("strict@0", "'strict@0': the version after '@' is a whole number of at least 1"),
        ("@1", "'@1' names no profile"),
    ],
    ids=["unknown", "unknown-version", "never-kept", "missing-version", "other-metric", "version-0", "no-name"],
)
@pytest.mark.usefixtures("quiet_cli_env")
def test_a_profile_the_store_cannot_give_is_a_config_error(
    named_and_message: tuple[str, str],
    judge: JudgeRouter,
    tmp_path: Path,
    sqlite_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    named, message = named_and_message
    engine = get_engine(sqlite_url)
    save_profile(engine, STRICT)
    save_profile(engine, STRICT, name="refused", kept=False)
    save_profile(engine, STRICT, name="safe", metric="safety_v1")

    code, out, err, path = run_command(capsys, tmp_path, sqlite_url, profile_config(named))

    assert (code, out) == (2, "")
    assert err.splitlines() == [f"agent-eval: error: {path}: field 'criteria.{FINAL}.judge_profile': {message}"]
    assert judge.calls == []
    with Session(engine) as session:
        assert session.exec(select(Run)).all() == []  # nothing was run


@pytest.mark.parametrize(
    "option",
    [
        {"judge_examples": [example.model_dump(mode="json") for example in STRICT]},
        {"judge_profile": "strict"},
    ],
    ids=["judge_examples", "judge_profile"],
)
@pytest.mark.usefixtures("quiet_cli_env")
def test_adk_exact_prompts_with_examples_are_a_config_error(
    option: dict[str, Any], judge: JudgeRouter, tmp_path: Path, sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("google.adk.evaluation")
    save_profile(get_engine(sqlite_url), STRICT)
    criterion = {"threshold": 0.5, "judge_mode": "adk-exact", **option}

    code, out, err, path = run_command(capsys, tmp_path, sqlite_url, {"criteria": {FINAL: criterion}})

    assert (code, out) == (2, "")
    assert err.splitlines() == [
        f"agent-eval: error: {path}: field 'criteria.{FINAL}': judge_examples and judge_profile need judge_mode "
        "'agent-eval': ADK's prompts have no slot for examples"
    ]
    assert judge.calls == []
