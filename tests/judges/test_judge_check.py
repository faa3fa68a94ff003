"""`check_judge` and `agent-eval judges check` on a real judged run: 24 echo cases scored by
final_response_match_v2 (agent-eval prompts, 3 samples) through the real flow, the judge the real client over HTTP
to the fake Gemini server, whose verdict per case the test sets (`Verdicts`).

The judge first says valid on c00..c11 and invalid on c12..c23; the human labels say pass on c00..c09, c12 and c13:
10 pass-pass, 2 pass-fail, 2 fail-pass, 10 fail-fail, so kappa = (20/24 - 1/2) / (1 - 1/2) = 2/3. Then the judge
turns on c00, c01 (now invalid) and c14, c15 (now valid): 8/4/4/8, kappa = (16/24 - 1/2) / (1/2) = 1/3, a fall
of 1/3 (drift at the default 0.15).

The helpers here (`Verdicts`, `judge_router`, `labelled_run`, ...) are shared with tests/judges/test_judge_gate.py
and tests/flows/test_judge_check_flow.py.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from agent_eval import evaluate
from agent_eval.cli import main
from agent_eval.judges.check import JudgeCheck, check_judge
from agent_eval.metrics.judged import close_judge_clients
from agent_eval.results.model import RunReport
from agent_eval.results.run_configs import identity_key
from agent_eval.schema import EvalConfig
from agent_eval.store import get_engine
from agent_eval.store.labels import Label, judge_checks, judged_items_of_run, save_labels
from tests.fakes.gemini_server import CREDENTIAL_VARIABLES, FAKE_API_KEY, FakeGeminiServer
from tests.flows.helpers import echo_case
from tests.flows.judge_scripts import JudgeCall, JudgeRouter, validity

FINAL = "final_response_match_v2"
AGENT = "tests.flows.agents_for_tests:echo_agent"
JUDGE_MODEL = "gemini-2.5-flash"
IDS = [f"c{i:02d}" for i in range(24)]
FIRST = {eval_id: index < 12 for index, eval_id in enumerate(IDS)}
"""The judge's first verdicts: valid on c00..c11, invalid on c12..c23."""
HUMAN = {eval_id: index < 10 or index in (12, 13) for index, eval_id in enumerate(IDS)}
"""The human labels: with FIRST, 10 pass-pass, 2 pass-fail (c12, c13), 2 fail-pass (c10, c11), 10 fail-fail."""
WORSE = {**FIRST, "c00": False, "c01": False, "c14": True, "c15": True}
"""The judge later: 8 pass-pass, 4 pass-fail, 4 fail-pass, 8 fail-fail."""
FIRST_DRIFT = f"judge drift: {FINAL} kappa 0.67 → 0.33 on 24 labels (a fall of more than 0.15)"
_CASE_IN_PROMPT = re.compile(r"\b(c\d\d) [0-9a-f]{8}\b")


# ------------------------------------------------------------------------------------------ shared helpers
@dataclass
class Verdicts:
    """The judge's verdict per case id (True: valid), changeable between runs and checks; every sample of a
    question gets the same verdict. Unknown cases are recorded in `problems`."""

    by_case: dict[str, bool] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def __call__(self, call: JudgeCall) -> Any:
        found = _CASE_IN_PROMPT.search(call.section("user_prompt"))
        if found is None or found.group(1) not in self.by_case:
            self.problems.append(f"no verdict for the prompt {call.section('user_prompt')!r}")
            return validity("valid")(call)
        return validity("valid" if self.by_case[found.group(1)] else "invalid")(call)


def judge_router(
    fake_gemini: FakeGeminiServer, monkeypatch: pytest.MonkeyPatch, home: Path, verdicts: Verdicts
) -> Iterator[JudgeRouter]:
    """The real judge client pointed at the fake server (a fresh judge cache under `home`), final_response_match_v2
    answered by `verdicts`; a fixture body: checks after the test that every request was routed."""
    for name in CREDENTIAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GOOGLE_API_KEY", FAKE_API_KEY)
    monkeypatch.setenv("AGENT_EVAL_GEMINI_BASE_URL", fake_gemini.base_url)
    monkeypatch.setenv("AGENT_EVAL_HOME", str(home))
    monkeypatch.setenv("AGENT_EVAL_WARM", "0")
    router = JudgeRouter().on(FINAL, "", verdicts)
    fake_gemini.respond_with(router)
    yield router
    assert router.problems == []
    assert verdicts.problems == []
    assert fake_gemini.unscripted == []


def criterion(samples: int = 3) -> dict[str, Any]:
    """final_response_match_v2 with agent-eval's prompts (the router answers those), threshold 0.5."""
    return {
        "threshold": 0.5,
        "judge_mode": "agent-eval",
        "judge_model_options": {"judge_model": JUDGE_MODEL, "num_samples": samples},
    }


def judged_config(samples: int = 3, **sections: Any) -> dict[str, Any]:
    """A config with final_response_match_v2 only, and other sections (e.g. `judge`)."""
    return {"criteria": {FINAL: criterion(samples)}, **sections}


def write_cases(folder: Path, ids: Sequence[str] = IDS) -> Path:
    """An echo eval set with one case per id, its message `<id> <token>` (a fresh token: nothing cached)."""
    token = uuid.uuid4().hex[:8]
    eval_set = {"eval_set_id": f"judged_{token}", "eval_cases": [echo_case(i, f"{i} {token}") for i in ids]}
    path = folder / f"judged_{token}.evalset.json"
    path.write_text(json.dumps(eval_set), encoding="utf-8")
    return path


def item_keys(run_id: str, engine: Engine, metric: str = FINAL) -> dict[str, str]:
    """The stored judged item key of each case of a run (one-turn cases), by case id."""
    return {
        case.eval_id: item.item_key for item, case in judged_items_of_run(run_id, engine) if item.metric_name == metric
    }


def label(run_id: str, engine: Engine, human: Mapping[str, bool] = HUMAN, labeller: str = "ana") -> int:
    """Label each case's judged item as `human` says; the number stored."""
    keys = item_keys(run_id, engine)
    assert set(keys) == set(human)
    return save_labels(
        (
            Label(item_key=keys[eval_id], metric_name=FINAL, passed=passed, labeller=labeller)
            for eval_id, passed in human.items()
        ),
        engine,
    )


def run_judged(folder: Path, db_url: str, verdicts: Verdicts, **config_sections: Any) -> RunReport:
    """The judged run of `IDS` through the real flow, the judge saying FIRST."""
    verdicts.by_case.update(FIRST)
    return evaluate(write_cases(folder), agent=AGENT, config=judged_config(**config_sections), db_url=db_url)


def run_identity(report: RunReport, metric: str = FINAL) -> dict[str, Any]:
    """The judge identity the run stored for `metric`."""
    (eval_set_id,) = report.eval_set_ids
    return dict((report.judges or {})[eval_set_id][metric])


def check(db_url: str, **options: Any) -> JudgeCheck:
    """`check_judge(FINAL)` as the CLI calls it: on a loop of its own, the judge clients closed after."""

    async def checked() -> JudgeCheck:
        try:
            return await check_judge(FINAL, get_engine(db_url), **options)
        finally:
            await close_judge_clients()

    return asyncio.run(checked())


def shown_identity(judge: Mapping[str, Any]) -> dict[str, Any]:
    """A judge identity as `judges check --json` prints it, its unset (null) fields left out as stored."""
    return {name: value for name, value in judge.items() if value is not None}


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ------------------------------------------------------------------------------------------------- fixtures
@pytest.fixture
def verdicts() -> Verdicts:
    return Verdicts()


@pytest.fixture
def judge(
    fake_gemini: FakeGeminiServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, verdicts: Verdicts
) -> Iterator[JudgeRouter]:
    yield from judge_router(fake_gemini, monkeypatch, tmp_path / "home", verdicts)


pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_server")]


# --------------------------------------------------------------------------------------------------- tests
def test_a_check_asks_every_labelled_item_again_stores_its_kappa_and_reports_a_fall_as_drift(
    judge: JudgeRouter, verdicts: Verdicts, tmp_path: Path, sqlite_url: str
) -> None:
    report = run_judged(tmp_path, sqlite_url, verdicts)
    engine = get_engine(sqlite_url)
    assert judge.count(FINAL) == 24 * 3
    assert label(report.run_id, engine) == 24
    identity = run_identity(report)

    first = check(sqlite_url)

    # every labelled item asked again, every sample a fresh call: the run's cached answers are not used
    assert judge.count(FINAL) == 2 * 24 * 3
    assert {judge.count(FINAL, f"{eval_id} ") for eval_id in IDS} == {6}
    assert first.judge.key == identity_key(identity) and first.judge.samples == 3
    assert first.judge.stored() == identity
    assert first.agreement.n == 24 and first.left_out == 0
    assert first.agreement.kappa == pytest.approx(2 / 3)
    assert first.agreement.agreement == pytest.approx(20 / 24)
    confusion = first.agreement.confusion
    assert (confusion.pass_pass, confusion.pass_fail, confusion.fail_pass, confusion.fail_fail) == (10, 2, 2, 10)
    assert first.previous is None and first.change is None and first.drift is None
    (row,) = judge_checks(engine)
    assert row.id == first.stored.id
    assert (row.metric_name, row.judge_key, row.labels) == (FINAL, identity_key(identity), 24)
    assert row.judge == identity
    assert row.kappa == pytest.approx(2 / 3)
    assert row.kappa is not None and row.kappa_low is not None and row.kappa_high is not None
    assert row.kappa_low <= row.kappa <= row.kappa_high
    keys = item_keys(report.run_id, engine)
    assert row.verdicts == {keys[eval_id]: passed for eval_id, passed in FIRST.items()}
    described = first.describe().splitlines()
    assert described[0] == f"{FINAL}  judge: {first.judge.describe()}  (24 labelled items judged again)"
    assert described[1].startswith("  kappa 0.67 [") and described[1].endswith("]  agreement 83%")
    assert described[2] == "  since the last check: first check of this metric"
    assert len(described) == 3

    verdicts.by_case.update(WORSE)
    second = check(sqlite_url)

    assert judge.count(FINAL) == 3 * 24 * 3
    assert second.agreement.kappa == pytest.approx(1 / 3)
    assert second.previous is not None and second.previous.id == first.stored.id
    assert second.change == pytest.approx(-1 / 3)
    assert second.drift == FIRST_DRIFT
    assert second.describe().splitlines()[-1] == f"  DRIFT: {FIRST_DRIFT}"
    assert "(same judge) (-0.33)" in second.describe()
    assert [c.kappa for c in judge_checks(engine)] == pytest.approx([1 / 3, 2 / 3])  # newest first

    # unchanged since: no fall, but below a floor
    assert check(sqlite_url).drift is None
    below = check(sqlite_url, floor=0.5)
    assert below.change == pytest.approx(0.0)
    assert below.drift == f"judge drift: {FINAL} kappa 0.33 → 0.33 on 24 labels (below the floor 0.50)"
    assert check(sqlite_url, max_drop=0.5, floor=0.3).drift is None
    assert len(judge_checks(engine)) == 5


@pytest.mark.usefixtures("quiet_cli_env")
def test_judges_check_command_exits_3_on_drift_and_2_without_labels(
    judge: JudgeRouter,
    verdicts: Verdicts,
    tmp_path: Path,
    sqlite_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = run_judged(tmp_path, sqlite_url, verdicts)
    label(report.run_id, get_engine(sqlite_url))
    identity = run_identity(report)

    code, out, err = cli(capsys, "judges", "check", FINAL, "--db-url", sqlite_url)
    assert (code, err) == (0, "")
    assert out.splitlines()[0].startswith(f"{FINAL}  judge: gemini-2.5-flash, agent-eval (prompts ")
    assert "  since the last check: first check of this metric" in out.splitlines()
    assert "DRIFT" not in out

    verdicts.by_case.update(WORSE)
    code, out, err = cli(capsys, "judges", "check", FINAL, "--db-url", sqlite_url)
    assert (code, err) == (3, "")
    assert out.splitlines()[-1] == f"  DRIFT: {FIRST_DRIFT}"

    code, out, err = cli(capsys, "judges", "check", FINAL, "--json", "--floor", "0.5", "--db-url", sqlite_url)
    assert (code, err) == (3, "")
    payload = json.loads(out)
    assert set(payload) == {"check_id", "metric", "drift", "judge", "agreement", "change"}
    assert payload["metric"] == FINAL and shown_identity(payload["judge"]) == identity
    assert payload["drift"] == f"judge drift: {FINAL} kappa 0.33 → 0.33 on 24 labels (below the floor 0.50)"
    assert payload["agreement"]["n"] == 24 and payload["agreement"]["kappa"] == pytest.approx(1 / 3)
    assert payload["change"] == pytest.approx(0.0)
    assert payload["check_id"] == judge_checks(get_engine(sqlite_url), limit=1)[0].id
    # a larger allowed fall and no floor: no drift, exit 0
    code, out, _ = cli(capsys, "judges", "check", FINAL, "--json", "--max-drop", "0.5", "--db-url", sqlite_url)
    assert code == 0 and json.loads(out)["drift"] is None
    asked = judge.count(FINAL)

    code, out, err = cli(capsys, "judges", "check", "rubric_based_final_response_quality_v1", "--db-url", sqlite_url)
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        "agent-eval: error: field 'metric': no labelled item of rubric_based_final_response_quality_v1: label some "
        "first (`agent-eval label RUN_ID` or `labels import`)"
    ]
    code, out, err = cli(capsys, "judges", "check", "--db-url", sqlite_url)
    assert (code, out) == (2, "") and len(err.splitlines()) == 1 and "needs the metric to check" in err
    assert judge.count(FINAL) == asked  # no judge asked for either
    assert len(judge_checks(get_engine(sqlite_url))) == 4


@pytest.mark.usefixtures("quiet_cli_env")
def test_a_check_judges_with_the_given_configs_criterion(
    judge: JudgeRouter,
    verdicts: Verdicts,
    tmp_path: Path,
    sqlite_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = run_judged(tmp_path, sqlite_url, verdicts)
    label(report.run_id, get_engine(sqlite_url))
    stored = check(sqlite_url)  # the run's criterion: 3 samples
    assert judge.count(FINAL) == 2 * 24 * 3
    one_sample = tmp_path / "one_sample.json"
    one_sample.write_text(json.dumps(judged_config(samples=1)), encoding="utf-8")

    code, out, err = cli(
        capsys, "judges", "check", FINAL, "--config", str(one_sample), "--json", "--db-url", sqlite_url
    )

    assert (code, err) == (0, "")
    assert judge.count(FINAL) == 2 * 24 * 3 + 24  # one fresh call per labelled item
    payload = json.loads(out)
    assert shown_identity(payload["judge"]) == {**run_identity(report), "samples": 1}
    assert payload["agreement"]["kappa"] == pytest.approx(2 / 3)
    newest = judge_checks(get_engine(sqlite_url), limit=1)[0]
    assert newest.judge == {**run_identity(report), "samples": 1}
    assert newest.judge_key == identity_key(newest.judge) != stored.stored.judge_key

    # with the Python API: the config's criterion too; the last check of the metric (another judge) is the previous
    verdicts.by_case.update(WORSE)
    again = check(sqlite_url, config=EvalConfig.model_validate(judged_config(samples=1)))
    assert judge.count(FINAL) == 2 * 24 * 3 + 2 * 24
    assert again.judge.samples == 1 and again.previous is not None and again.previous.id == newest.id
    assert again.drift == FIRST_DRIFT
    assert "(same judge) (-0.33)" in again.describe()
    # without a config: the stored criterion again (3 samples), compared with the last check of that identity
    back = check(sqlite_url)
    assert back.judge.samples == 3 and back.previous is not None and back.previous.id == stored.stored.id
    assert back.drift == FIRST_DRIFT


@pytest.mark.usefixtures("quiet_cli_env")
def test_judges_check_json_prints_the_identity_as_stored(
    judge: JudgeRouter,
    verdicts: Verdicts,
    tmp_path: Path,
    sqlite_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = run_judged(tmp_path, sqlite_url, verdicts)
    label(report.run_id, get_engine(sqlite_url))

    code, out, _ = cli(capsys, "judges", "check", FINAL, "--json", "--db-url", sqlite_url)

    assert code == 0
    payload = json.loads(out)
    (row,) = judge_checks(get_engine(sqlite_url))
    assert payload["judge"] == row.judge == run_identity(report)
    assert identity_key(payload["judge"]) == row.judge_key
