"""`align_judge` and `agent-eval judges align` on judged runs whose judge the real client asks over HTTP (the fake
Gemini server), final_response_match_v2 with agent-eval's prompts.

The flow tests score 60 echo cases c00..c59 (message `<id> <token>`) through the real flow. The fake judge
(`Judge`) is lenient without examples: it calls every answer valid. Shown people's examples (a `<judge_examples>`
section in the request) it follows the people: it answers by `TRUTH`, the hidden truth the labels encode (every
third case fails: c00, c03, ..., c57, 20 fails and 40 passes). The split holds out half of each class, 20 passes
and 10 fails, and trains on the rest; the run's (lenient) verdicts disagree with the people on the 10 training
fails only. On the 30 held-out items:

- without examples: 20 pass-pass, 10 fail-pass: p_o = 20/30 = p_e, kappa 0 (and 0 on every bootstrap resample);
- with them: 20 pass-pass, 10 fail-fail: kappa 1 (1 on every resample);

so every paired resample gains exactly 1: the interval is [1, 1], kept. A judge that ignores the examples (lenient
either way) gains exactly 0 on every resample: the interval is [0, 0], refused.

The other tests store hand-built judged runs (`tests.judges.stored_runs`), with the stored verdicts they need.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from agent_eval import evaluate
from agent_eval.judges.align import Alignment, align_judge
from agent_eval.metrics.judged import close_judge_clients
from agent_eval.metrics.judged.base import JudgeExample
from agent_eval.metrics.judged.prompts import examples_section
from agent_eval.results.model import RunReport
from agent_eval.store import get_engine
from agent_eval.store.labels import Label, judge_profile, save_labels
from tests.fakes.gemini_server import CREDENTIAL_VARIABLES, FAKE_API_KEY, FakeGeminiServer
from tests.flows.judge_scripts import JudgeCall, JudgeRouter, validity
from tests.judges.stored_runs import (
    AGENT_EVAL_JUDGE,
    CONFIG,
    RESPONSE,
    JudgedCase,
    identities,
    judged,
    store_cases,
    stored_key,
    turn,
)
from tests.judges.test_judge_check import cli, criterion, item_keys, write_cases

FINAL = "final_response_match_v2"
AGENT = "tests.flows.agents_for_tests:echo_agent"
IDS = [f"c{i:02d}" for i in range(60)]
TRUTH = {eval_id: index % 3 != 0 for index, eval_id in enumerate(IDS)}
"""The people's verdicts (True: pass): every third case fails."""
EXAMPLES_TAG = "<judge_examples>\n"
_CASE = re.compile(r"\b(c\d\d) [0-9a-f]{8}\b")
REFUSED = "  refused: the gain is within the interval's noise (its lower bound is not above 0)"


def case_of(text: str) -> str:
    """The case id in a user's message `<id> <token>`."""
    found = _CASE.search(text)
    assert found is not None, f"no case id in {text!r}"
    return found.group(1)


@dataclass
class Judge:
    """The fake judge's verdicts: lenient (always valid) without examples; with examples, `TRUTH` when it
    `follows_examples`, else lenient still. Every sample of a question gets the same verdict."""

    truth: Mapping[str, bool] = field(default_factory=lambda: dict(TRUTH))
    follows_examples: bool = True
    problems: list[str] = field(default_factory=list)

    def __call__(self, call: JudgeCall) -> Any:
        found = _CASE.search(call.section("user_prompt"))  # the first <user_prompt>: the item's, not an example's
        if found is None or found.group(1) not in self.truth:
            self.problems.append(f"no verdict for the prompt {call.section('user_prompt')!r}")
            return validity("valid")(call)
        shown = EXAMPLES_TAG in call.prompt and self.follows_examples
        return validity("valid" if not shown or self.truth[found.group(1)] else "invalid")(call)


@pytest.fixture
def people() -> Judge:
    return Judge()


def judge_router(
    fake_gemini: FakeGeminiServer, monkeypatch: pytest.MonkeyPatch, home: Path, people: Judge
) -> Iterator[JudgeRouter]:
    """The real judge client pointed at the fake server (a fresh judge cache under `home`), final_response_match_v2
    answered by `people`; a fixture body (shared with tests/judges/test_profiles.py): checks after the test that
    every request was routed and answered by the script."""
    for name in CREDENTIAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GOOGLE_API_KEY", FAKE_API_KEY)
    monkeypatch.setenv("AGENT_EVAL_GEMINI_BASE_URL", fake_gemini.base_url)
    monkeypatch.setenv("AGENT_EVAL_HOME", str(home))
    monkeypatch.setenv("AGENT_EVAL_WARM", "0")
    router = JudgeRouter().on(FINAL, "", people)
    fake_gemini.respond_with(router)
    yield router
    assert router.problems == []
    assert people.problems == []
    assert fake_gemini.unscripted == []


@pytest.fixture
def judge(
    fake_gemini: FakeGeminiServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, people: Judge
) -> Iterator[JudgeRouter]:
    yield from judge_router(fake_gemini, monkeypatch, tmp_path / "home", people)


def run_judged(folder: Path, db_url: str, samples: int) -> tuple[RunReport, str]:
    """The judged run of `IDS` through the real flow; the report and the cases' message token."""
    path = write_cases(folder, IDS)
    token = path.name.removeprefix("judged_").removesuffix(".evalset.json")
    config = {"criteria": {FINAL: criterion(samples)}}
    return evaluate(path, agent=AGENT, config=config, db_url=db_url), token


def label_truth(run_id: str, engine: Engine, ids: Sequence[str] = IDS) -> int:
    """Label each case's judged item with `TRUTH` (a fail with a note); the number stored."""
    keys = item_keys(run_id, engine)
    return save_labels(
        (
            Label(
                item_key=keys[eval_id],
                metric_name=FINAL,
                passed=TRUTH[eval_id],
                labeller="ana",
                note=None if TRUTH[eval_id] else f"{eval_id}: not what was asked",
            )
            for eval_id in ids
        ),
        engine,
    )


def align(db_url: str, profile: str = "strict", **options: Any) -> Alignment:
    """`align_judge(FINAL)` as the CLI calls it: on a loop of its own, the judge clients closed after."""

    async def aligned() -> Alignment:
        try:
            return await align_judge(FINAL, profile, get_engine(db_url), **options)
        finally:
            await close_judge_clients()

    return asyncio.run(aligned())


def held_out_of(calls: Sequence[JudgeCall]) -> Counter[str]:
    """How many requests each case got (the held-out cases of an alignment's calls)."""
    return Counter(case_of(call.section("user_prompt")) for call in calls)


def examples_of(profile: Any) -> list[JudgeExample]:
    return [JudgeExample.model_validate(example) for example in profile.examples]


def confusion(agreement: Any) -> tuple[int, int, int, int]:
    c = agreement.confusion
    return c.pass_pass, c.pass_fail, c.fail_pass, c.fail_fail


# ------------------------------------------------------------------------------------------ the flow tests
@pytest.mark.flow
@pytest.mark.usefixtures("prefect_server")
def test_alignment_keeps_the_examples_that_make_a_lenient_judge_follow_the_people(
    judge: JudgeRouter, tmp_path: Path, sqlite_url: str
) -> None:
    report, token = run_judged(tmp_path, sqlite_url, samples=3)
    engine = get_engine(sqlite_url)
    assert judge.count(FINAL) == 60 * 3
    assert label_truth(report.run_id, engine) == 60
    asked = len(judge.calls)

    alignment = align(sqlite_url, examples=12)

    # the held-out items judged twice with fresh calls (the first round's prompts are the run's, which the judge
    # cache holds): 30 items x 3 samples without the examples, then 30 x 3 with them
    calls = judge.calls[asked:]
    assert len(calls) == 30 * 3 * 2
    assert [EXAMPLES_TAG in call.prompt for call in calls] == [False] * 90 + [True] * 90
    held_out = held_out_of(calls)
    assert len(held_out) == 30 and set(held_out.values()) == {6}
    assert held_out_of(calls[:90]) == held_out_of(calls[90:])
    assert sum(TRUTH[eval_id] for eval_id in held_out) == 20  # stratified: half of each class
    train = [eval_id for eval_id in IDS if eval_id not in held_out]

    profile = alignment.profile
    assert (profile.name, profile.version, profile.metric_name, profile.kept) == ("strict", 1, FINAL, True)
    assert alignment.kept and (alignment.train, alignment.held_out) == (30, 30)
    examples = examples_of(profile)
    shown = [case_of(example.user) for example in examples]
    assert len(examples) == 12 and len(set(shown)) == 12 and set(shown) <= set(train)
    # the disagreements first (the run's judge said valid, the people fail): the 10 training fails; then passes
    assert set(shown[:10]) == {eval_id for eval_id in train if not TRUTH[eval_id]}
    assert [example.verdict for example in examples] == [False] * 10 + [True] * 2
    first = shown[0]
    assert examples[0] == JudgeExample(
        user=f"{first} {token}",
        response=f"answer: {first} {token}",
        reference=f"answer: {first} {token}",
        tool_calls=[{"name": "lookup", "args": {"query": f"{first} {token}"}}],
        rubric=None,
        verdict=False,
        note=f"{first}: not what was asked",
    )
    assert examples[-1].note is None
    # every request of the second round has the material, then these examples
    assert {call.prompt.endswith("\n\n" + examples_section(examples)) for call in calls[90:]} == {True}
    assert {call.prompt.count("<judge_examples>") for call in calls[90:]} == {1}

    # kappa 0 without the examples (the judge passes everything), 1 with them: a gain of exactly 1
    before, after = alignment.before, alignment.after
    assert (before.n, after.n) == (30, 30)
    assert confusion(before) == (20, 0, 10, 0) and confusion(after) == (20, 0, 0, 10)
    assert before.kappa == 0.0 and after.kappa == 1.0
    assert before.agreement == pytest.approx(20 / 30) and after.agreement == 1.0
    assert list(before.kappa_interval or ()) == [0.0, 0.0]
    assert list(after.kappa_interval or ()) == [1.0, 1.0]
    assert alignment.gain == 1.0 and alignment.gain_interval == (1.0, 1.0)

    evaluation = profile.evaluation
    assert (evaluation["train"], evaluation["held_out"], evaluation["held_out_judged"]) == (30, 30, 30)
    assert evaluation["gain"] == 1.0 and list(evaluation["gain_interval"]) == [1.0, 1.0]
    assert evaluation["before"]["kappa"] == 0.0 and evaluation["after"]["kappa"] == 1.0
    assert evaluation["after"] == json.loads(after.model_dump_json())

    assert alignment.describe().splitlines() == [
        f"{FINAL}: profile strict@1 with 12 examples (30 training items, 30 held out)",
        "  held-out kappa without examples 0.00 [0.00, 0.00], with them 1.00 [1.00, 1.00]",
        "  gain +1.00 [+1.00, +1.00]",
        '  kept: criteria naming "judge_profile": "strict" now send these examples',
    ]
    stored = judge_profile("strict", engine)
    assert stored is not None and (stored.id, stored.version, stored.kept) == (profile.id, 1, True)
    assert examples_of(stored) == examples
    assert judge_profile("other", engine) is None


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_server", "quiet_cli_env")
def test_judges_align_command_keeps_a_gain_then_refuses_a_judge_that_ignores_the_examples(
    judge: JudgeRouter, people: Judge, tmp_path: Path, sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    report, _ = run_judged(tmp_path, sqlite_url, samples=1)
    engine = get_engine(sqlite_url)
    label_truth(report.run_id, engine)
    asked = judge.count(FINAL)

    code, out, err = cli(capsys, "judges", "align", FINAL, "--profile", "strict", "--json", "--db-url", sqlite_url)

    assert (code, err) == (0, "")
    assert judge.count(FINAL) == asked + 30 * 2
    payload = json.loads(out)
    assert set(payload) == {"profile", "version", "kept", "evaluation", "examples"}
    assert (payload["profile"], payload["version"], payload["kept"]) == ("strict", 1, True)
    assert len(payload["examples"]) == 8  # the default
    assert (payload["evaluation"]["before"]["kappa"], payload["evaluation"]["after"]["kappa"]) == (0.0, 1.0)
    kept = judge_profile("strict", engine)
    assert kept is not None and kept.version == 1 and kept.examples == payload["examples"]

    people.follows_examples = False  # the same answers with or without examples
    code, out, err = cli(capsys, "judges", "align", FINAL, "--profile", "strict", "--db-url", sqlite_url)

    assert (code, err) == (1, "")
    assert judge.count(FINAL) == asked + 2 * 30 * 2
    assert out.splitlines() == [
        f"{FINAL}: profile strict@2 with 8 examples (30 training items, 30 held out)",
        "  held-out kappa without examples 0.00 [0.00, 0.00], with them 0.00 [0.00, 0.00]",
        "  gain +0.00 [+0.00, +0.00]",
        REFUSED,
    ]
    refused = judge_profile("strict", engine, version=2)
    assert refused is not None and refused.kept is False
    assert refused.evaluation["gain"] == 0.0 and list(refused.evaluation["gain_interval"]) == [0.0, 0.0]
    newest = judge_profile("strict", engine, kept_only=False)
    assert newest is not None and newest.version == 2
    still = judge_profile("strict", engine)  # the newest kept version is what "judge_profile": "strict" uses
    assert still is not None and (still.id, still.version) == (kept.id, 1)


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_server")
def test_the_split_is_seeded(judge: JudgeRouter, tmp_path: Path, sqlite_url: str) -> None:
    report, _ = run_judged(tmp_path, sqlite_url, samples=1)
    label_truth(report.run_id, get_engine(sqlite_url))

    def held_out(seed: int) -> tuple[Counter[str], list[str]]:
        asked = len(judge.calls)
        alignment = align(sqlite_url, seed=seed)
        assert alignment.kept
        return held_out_of(judge.calls[asked:]), [case_of(example.user) for example in examples_of(alignment.profile)]

    first, first_examples = held_out(0)
    again, again_examples = held_out(0)
    other, other_examples = held_out(1)

    for split in (first, again, other):
        assert len(split) == 30 and set(split.values()) == {2}
        assert sum(TRUTH[eval_id] for eval_id in split) == 20
    assert set(again) == set(first) and again_examples == first_examples
    assert set(other) != set(first) and other_examples != first_examples
    assert not set(first_examples) & set(first) and not set(other_examples) & set(other)
    versions = judge_profile("strict", get_engine(sqlite_url), kept_only=False)
    assert versions is not None and versions.version == 3


# ----------------------------------------------------------------------------------- hand-built stored runs
def stored_run(
    db_url: str,
    human: Mapping[str, bool | None],
    judged_valid: Mapping[str, bool],
    config: Mapping[str, Any] = CONFIG,
    token: str = "0123abcd",
) -> dict[str, str]:
    """A stored run of one-turn cases (message `<id> <token>`) scored with `config`, final_response_match_v2's
    stored verdict per case `judged_valid` (3 equal samples), labelled by `human` (None: a score-only label); the
    item keys."""
    cases = []
    for eval_id, valid in judged_valid.items():
        score = 1.0 if valid else 0.0
        invocation = turn(f"{eval_id} {token}", f"answer: {eval_id} {token}")
        cases.append(JudgedCase(eval_id, [invocation], [judged(eval_id, [score], samples=[[score] * 3])]))
    engine = get_engine(db_url)
    store_cases(engine, "a" * 32, cases, judges=identities(AGENT_EVAL_JUDGE, RESPONSE), config=config)
    keys = {eval_id: stored_key(engine, "a" * 32, eval_id, RESPONSE) for eval_id in judged_valid}
    save_labels(
        (
            Label(
                item_key=keys[eval_id],
                metric_name=RESPONSE,
                passed=passed,
                score=0.5 if passed is None else None,
                labeller="ana",
            )
            for eval_id, passed in human.items()
        ),
        engine,
    )
    return keys


FORTY = [f"c{i:02d}" for i in range(40)]
HALF_PASS = {eval_id: index < 20 for index, eval_id in enumerate(FORTY)}
"""c00..c19 pass, c20..c39 fail."""


@pytest.mark.usefixtures("quiet_cli_env")
def test_judges_align_needs_40_items_labelled_pass_or_fail(
    tmp_path: Path, sqlite_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENT_EVAL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("AGENT_EVAL_WARM", "0")
    human: dict[str, bool | None] = {**HALF_PASS, "c39": None}  # c39 has a score only: not pass/fail
    stored_run(sqlite_url, human, {eval_id: True for eval_id in FORTY})
    align_ = ("judges", "align", FINAL, "--db-url", sqlite_url)

    code, out, err = cli(capsys, *align_, "--profile", "strict")

    assert (code, out) == (2, "")
    assert err.splitlines() == [
        f"agent-eval: error: field 'metric': aligning {FINAL} needs at least 40 items labelled pass or fail "
        "(20 to hold out), got 39"
    ]
    code, out, err = cli(capsys, *align_)
    assert (code, out) == (2, "") and len(err.splitlines()) == 1
    assert "`judges align` needs the metric and --profile NAME" in err
    code, out, err = cli(capsys, *align_, "--profile", "strict", "--examples", "0")
    assert (code, out) == (2, "") and len(err.splitlines()) == 1
    assert "examples must be 1 to 50" in err
    assert judge_profile("strict", get_engine(sqlite_url), kept_only=False) is None


def test_examples_put_the_disagreements_first_alternating_fail_and_pass(
    judge: JudgeRouter, people: Judge, sqlite_url: str
) -> None:
    # the stored judge wrongly failed c00..c09 and passed every fail: every training fail disagrees, and the
    # training passes among c00..c09 (how many depends on the split) do too
    people.truth = dict(HALF_PASS)
    stored_run(sqlite_url, HALF_PASS, {eval_id: index >= 10 for index, eval_id in enumerate(FORTY)})

    alignment = align(sqlite_url, examples=50)

    held_out = held_out_of(judge.calls)
    assert len(held_out) == 20 and set(held_out.values()) == {3 * 2}  # the stored criterion: 3 samples
    train = [eval_id for eval_id in FORTY if eval_id not in held_out]
    examples = examples_of(alignment.profile)
    shown = [case_of(example.user) for example in examples]
    assert sorted(shown) == train  # all 20 training items, once each
    assert [example.verdict for example in examples] == [HALF_PASS[eval_id] for eval_id in shown]
    wrongly_failed = sum(1 for eval_id in train if FORTY.index(eval_id) < 10)
    assert 0 < wrongly_failed < 10  # this split (seed 0) has both kinds of training pass
    # disagreements: fail, pass, fail, pass, ... then the fails left; then the agreements (the other passes)
    expected = [False, True] * wrongly_failed + [False] * (10 - wrongly_failed) + [True] * (10 - wrongly_failed)
    assert [example.verdict for example in examples] == expected
    disagreeing_passes = [eval_id for eval_id in shown if HALF_PASS[eval_id]][:wrongly_failed]
    assert {FORTY.index(eval_id) < 10 for eval_id in disagreeing_passes} <= {True}
    assert alignment.kept and alignment.after.kappa == 1.0


def test_the_default_examples_show_both_verdicts_when_a_lenient_judge_disagreed_on_fails_only(
    judge: JudgeRouter, people: Judge, sqlite_url: str
) -> None:
    people.truth = dict(HALF_PASS)
    stored_run(sqlite_url, HALF_PASS, {eval_id: True for eval_id in FORTY})

    alignment = align(sqlite_url)

    examples = examples_of(alignment.profile)
    assert len(examples) == 8
    assert examples[0].verdict is False  # a disagreement comes first
    assert {example.verdict for example in examples} == {True, False}


def test_the_evaluation_names_the_held_out_items(judge: JudgeRouter, people: Judge, sqlite_url: str) -> None:
    people.truth = dict(HALF_PASS)
    keys = stored_run(sqlite_url, HALF_PASS, {eval_id: True for eval_id in FORTY})

    alignment = align(sqlite_url, seed=7)

    held_out = {keys[eval_id] for eval_id in held_out_of(judge.calls)}
    assert len(held_out) == 20
    assert set(alignment.profile.evaluation.get("held_out_keys", [])) == held_out


def test_the_first_round_sends_no_examples_when_the_labelled_run_used_a_profile(
    judge: JudgeRouter, people: Judge, sqlite_url: str
) -> None:
    people.truth = dict(HALF_PASS)
    old = JudgeExample(user="Hello?", response="Hi.", verdict=True, note="an earlier profile's example")
    criterion = {**CONFIG["criteria"][RESPONSE], "judge_profile": "strict@1"}
    criterion["judge_examples"] = [old.model_dump(mode="json")]
    stored_run(sqlite_url, HALF_PASS, {eval_id: True for eval_id in FORTY}, config={"criteria": {RESPONSE: criterion}})

    alignment = align(sqlite_url)

    assert len(judge.calls) == 20 * 3 * 2
    first_round, second_round = judge.calls[:60], judge.calls[60:]
    assert {EXAMPLES_TAG in call.prompt for call in second_round} == {True}
    assert "an earlier profile's example" not in second_round[0].prompt
    assert {EXAMPLES_TAG in call.prompt for call in first_round} == {False}
    assert alignment.before.kappa == 0.0
