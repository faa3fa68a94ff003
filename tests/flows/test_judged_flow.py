"""Every LLM-judged metric through the real `agent-eval` flow, its judge the real client over HTTP to the fake
Gemini server: scripted structured answers per metric and sample (`judge_scripts`), majority and median votes
over 3 samples, unusable samples dropped and counted, NOT_EVALUATED when no sample is usable, a 429 retried,
a re-score answered from the judge cache; the judged demo config, with a judge and without credentials (exit
2, one line); and a run closes its judge connections when it ends.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeAlias
from urllib.parse import urlsplit

import pytest

from agent_eval import evaluate, rescore
from agent_eval.cli import main
from agent_eval.results.model import MetricResult, RunReport
from agent_eval.schema import EvalStatus
from tests.fakes.gemini_server import CREDENTIAL_VARIABLES, FAKE_API_KEY, FakeGeminiServer
from tests.flows.judge_scripts import (
    JUDGED_METRICS,
    JudgeRouter,
    fenced,
    graded,
    labels,
    per_sample,
    prose,
    rubric_verdicts,
    status,
    user_turn,
    validity,
)

AGENT = "examples.home_automation.agent:root_agent"
FINAL = "final_response_match_v2"
JUDGE = {"judge_model": "gemini-2.5-flash", "num_samples": 3}
BEDROOM = "Turn off device_2 in the Bedroom."
KITCHEN = "What is the temperature in the Kitchen?"
OFFICE = "Turn on device_4."
LIVING_ROOM = "Set the Living Room to 22 degrees."
flow_test = pytest.mark.usefixtures("prefect_server")
Results: TypeAlias = dict[tuple[str, str], MetricResult]


# ------------------------------------------------------------------------------------------------- helpers
@pytest.fixture
def judge(fake_gemini: FakeGeminiServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[JudgeRouter]:
    """The real judge client pointed at the fake server (fresh judge cache), answering as the router says."""
    for name in CREDENTIAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GOOGLE_API_KEY", FAKE_API_KEY)
    monkeypatch.setenv("AGENT_EVAL_GEMINI_BASE_URL", fake_gemini.base_url)
    monkeypatch.setenv("AGENT_EVAL_HOME", str(tmp_path / "home"))
    router = JudgeRouter()
    fake_gemini.respond_with(router)
    yield router
    assert router.problems == []
    assert fake_gemini.unscripted == []


AGENT_EVAL_MODE = "agent-eval"
"""The judge router answers agent-eval's structured prompts; ADK's own prompts are tested in
tests/metrics/test_adk_exact_judges.py."""


def judged(threshold: float, **options: Any) -> dict[str, Any]:
    """A judged criterion: threshold, 3 samples of gemini-2.5-flash, and `options`."""
    return {"threshold": threshold, "judge_model_options": JUDGE, **options}


def rubric(rubric_id: str, text: str) -> dict[str, Any]:
    """An ADK rubric (a criterion's rubrics need no type)."""
    return {"rubric_id": rubric_id, "rubric_content": {"text_property": text}}


def conversation_case(eval_id: str, message: str, reference: str) -> dict[str, Any]:
    """A one-turn case with a reference answer."""
    return {
        "eval_id": eval_id,
        "conversation": [
            {
                "user_content": {"role": "user", "parts": [{"text": message}]},
                "final_response": {"role": "model", "parts": [{"text": reference}]},
            }
        ],
    }


def write_eval_set(folder: Path, cases: list[dict[str, Any]]) -> Path:
    """The cases as an eval set with a fresh id (no invocation cached by another test)."""
    path = folder / "judged.evalset.json"
    eval_set = {"eval_set_id": f"judged_{uuid.uuid4().hex[:8]}", "eval_cases": cases}
    path.write_text(json.dumps(eval_set), encoding="utf-8")
    return path


def results(report: RunReport) -> Results:
    """Every metric result by (case id, metric name)."""
    return {(case.eval_id, m.metric_name): m for case in report.cases for m in case.metrics}


def vote(result: MetricResult, invocation: int = 0) -> dict[str, Any]:
    """The details of one invocation's vote."""
    return dict(result.details["invocations"][invocation])


def sample_labels(result: MetricResult, invocation: int = 0) -> list[Any]:
    """Each sample's label (or error) in an invocation's vote, in sample order."""
    return [sample.get("label", sample.get("error")) for sample in vote(result, invocation)["samples"]]


# ------------------------------------------------------------------------ every metric, votes, the cache
CONFIG_ALL: dict[str, Any] = {
    "criteria": {
        "final_response_match_v2": judged(0.5, judge_mode=AGENT_EVAL_MODE),
        "rubric_based_final_response_quality_v1": judged(
            0.5,
            judge_mode=AGENT_EVAL_MODE,
            rubrics=[
                rubric("confirms_action", "The response says what was done or answers the question."),
                rubric("names_the_room", "The response names the room the user asked about."),
            ],
        ),
        "rubric_based_tool_use_quality_v1": judged(
            1.0,
            judge_mode=AGENT_EVAL_MODE,
            rubrics=[rubric("uses_device_tools", "The agent called the device or temperature tool it needed.")],
        ),
        "hallucinations_v1": judged(0.5, judge_mode=AGENT_EVAL_MODE),
        "safety_v1": judged(1.0),
        "per_turn_user_simulator_quality_v1": judged(0.5, judge_mode=AGENT_EVAL_MODE),
        "semantic_match_score": judged(0.5),
        "rubric_quality_score": judged(
            0.5,
            rubrics=[
                {"rubric_id": "accuracy", "description": "The response is correct.", "weight": 3},
                {"rubric_id": "tone", "description": "The response is friendly.", "weight": 1},
            ],
        ),
        "safety_score": judged(0.8),
        "hallucination_score": judged(0.5),
    },
    "user_simulator_config": {"type": "scripted", "messages": [LIVING_ROOM]},
}
CASE_IDS = ("bedroom_off", "kitchen_temperature", "office_then_living_room")
SCENARIO = {
    "eval_id": "office_then_living_room",
    "conversation_scenario": {
        "starting_prompt": OFFICE,
        "conversation_plan": "Turn on device_4, then set the Living Room to 22 degrees.",
        "user_persona": "NOVICE",
    },
}


def script_every_metric(router: JudgeRouter) -> None:
    """Split votes per metric; every other question gets the metric's positive default from all samples."""
    simulator = "per_turn_user_simulator_quality_v1"
    router.on(
        "final_response_match_v2", "Bedroom", per_sample(validity("valid"), validity("valid"), validity("invalid"))
    )
    router.on(
        "final_response_match_v2", "Kitchen", per_sample(validity("valid"), validity("invalid"), validity("invalid"))
    )
    router.on(
        "rubric_based_final_response_quality_v1",
        "Bedroom",
        per_sample(rubric_verdicts(), rubric_verdicts(names_the_room="no"), rubric_verdicts("no")),
    )
    router.on(
        "hallucinations_v1",
        "Kitchen",
        per_sample(labels(**{"°C": "unsupported"}), labels(**{"°C": "contradictory"}), labels()),
    )
    router.on(
        simulator,
        LIVING_ROOM,
        per_sample(user_turn("valid"), user_turn("valid"), user_turn("invalid")),
        section="user_message",
    )
    stop_too_early = user_turn("invalid", "Stop: the plan's goals were done but the agent was not thanked")
    router.on(
        simulator, "</finished>", per_sample(stop_too_early, stop_too_early, user_turn("valid")), section="user_message"
    )
    router.on("semantic_match_score", "Bedroom", per_sample(graded(0.9), graded(1.0), graded(0.2)))
    router.on("semantic_match_score", "Kitchen", graded(0.4))
    router.on("rubric_quality_score", '"tone"', graded(0.6), section="rubrics")
    router.on("hallucination_score", "Kitchen", per_sample(graded(0.2), graded(0.3), graded(1.0)))


def check_adk_votes(by: Results) -> None:
    """final_response_match_v2, the rubric-based metrics, hallucinations_v1 and safety_v1: majority votes."""
    # 2 valid + 1 invalid -> 1.0; 1 valid + 2 invalid -> 0.0; agreement 2/3 each; no reference -> not applicable
    bedroom, kitchen = by["bedroom_off", FINAL], by["kitchen_temperature", FINAL]
    assert (bedroom.score, bedroom.status) == (1.0, EvalStatus.PASSED)
    assert (kitchen.score, kitchen.status) == (0.0, EvalStatus.FAILED)
    assert sample_labels(bedroom) == ["valid", "valid", "invalid"]
    assert sample_labels(kitchen) == ["valid", "invalid", "invalid"]
    for result in (bedroom, kitchen):
        assert vote(result)["agreement"] == pytest.approx(2 / 3)
        assert result.details["agreement"] == pytest.approx(2 / 3)
        assert result.details["num_samples"] == 3 and result.details["unusable_samples"] == 0
        assert "2 of 3 samples agree" in (result.explanation or "")
    scenario = by["office_then_living_room", FINAL]
    assert (scenario.score, scenario.status) == (None, EvalStatus.NOT_EVALUATED)
    assert "not applicable" in (scenario.explanation or "")

    # each rubric voted on its own; the turn scores their mean
    rubrics = by["bedroom_off", "rubric_based_final_response_quality_v1"]
    assert rubrics.score == 0.5
    assert {s.rubric_id: s.score for s in rubrics.per_invocation[0].rubric_scores or []} == {
        "confirms_action": 1.0,
        "names_the_room": 0.0,
    }
    assert vote(rubrics)["rubrics"]["names_the_room"]["agreement"] == pytest.approx(2 / 3)
    assert by["kitchen_temperature", "rubric_based_final_response_quality_v1"].score == 1.0
    assert {by[case, "rubric_based_tool_use_quality_v1"].score for case in CASE_IDS} == {1.0}

    # "OK." is not applicable and the other Bedroom sentence supported; the Kitchen claim is voted down
    assert by["bedroom_off", "hallucinations_v1"].score == 1.0
    hallucinated = by["kitchen_temperature", "hallucinations_v1"]
    assert (hallucinated.score, hallucinated.status) == (0.0, EvalStatus.FAILED)
    (sentence,) = vote(hallucinated)["texts"][0]["sentences"]
    assert sentence["label"] == "unsupported" and sentence["agreement"] == pytest.approx(2 / 3)
    assert by["office_then_living_room", "hallucinations_v1"].score == 1.0
    assert {by[case, "safety_v1"].score for case in CASE_IDS} == {1.0}


def check_user_simulator(by: Results) -> None:
    """Turn 1 is the starting prompt (no judge); turn 2 is voted valid 2 to 1, then the stop check, voted
    invalid 2 to 1, replaces it (ADK)."""
    simulator = by["office_then_living_room", "per_turn_user_simulator_quality_v1"]
    assert [turn.score for turn in simulator.per_invocation] == [1.0, 0.0]
    assert (simulator.score, simulator.status) == (0.5, EvalStatus.PASSED)
    assert vote(simulator, 1)["score"] == 1.0 and vote(simulator, 1)["replaced_by_stop_check"] is True
    assert vote(simulator, 1)["agreement"] == pytest.approx(2 / 3)
    assert simulator.details["stop_check"]["score"] == 0.0
    assert "ending the conversation after this turn was wrong" in (simulator.per_invocation[1].explanation or "")
    assert "not applicable" in (by["bedroom_off", "per_turn_user_simulator_quality_v1"].explanation or "")


def check_rust_medians(by: Results) -> None:
    """ADK-Rust's criteria: the lower median of the samples' scores, agreement within 0.1 of it."""
    semantic = by["bedroom_off", "semantic_match_score"]
    assert semantic.score == 0.9 and vote(semantic)["agreement"] == pytest.approx(2 / 3)
    kitchen = by["kitchen_temperature", "semantic_match_score"]
    assert (kitchen.score, kitchen.status) == (0.4, EvalStatus.FAILED)
    for case in CASE_IDS:
        assert by[case, "rubric_quality_score"].score == pytest.approx((3 * 1.0 + 1 * 0.6) / 4)  # weights 3 and 1
        assert by[case, "safety_score"].score == 1.0
    quality = by["bedroom_off", "rubric_quality_score"].per_invocation[0].rubric_scores or []
    assert {s.rubric_id: s.score for s in quality} == {"accuracy": 1.0, "tone": 0.6}
    grounded = by["kitchen_temperature", "hallucination_score"]
    assert grounded.score == 0.3 and vote(grounded)["agreement"] == pytest.approx(2 / 3)
    assert by["bedroom_off", "hallucination_score"].score == 1.0


@flow_test
@pytest.mark.flow
def test_every_judged_metric_votes_through_the_flow_and_a_rescore_is_served_from_the_cache(
    judge: JudgeRouter, fake_gemini: FakeGeminiServer, tmp_path: Path, sqlite_url: str
) -> None:
    script_every_metric(judge)
    cases = [
        conversation_case("bedroom_off", BEDROOM, "OK. I've turned off device_2 in the Bedroom. Anything else?"),
        conversation_case("kitchen_temperature", KITCHEN, "It is 24°C in the Kitchen."),
        SCENARIO,
    ]

    report = evaluate(write_eval_set(tmp_path, cases), agent=AGENT, config=CONFIG_ALL, db_url=sqlite_url)

    by = results(report)
    assert {name for _, name in by} == set(JUDGED_METRICS)
    assert [r.error for r in by.values() if r.error] == []
    # 3 samples per question; 4 invocations (1 + 1 + 2 turns)
    assert {metric: judge.count(metric) for metric in JUDGED_METRICS} == {
        FINAL: 6,  # the scenario has no reference: not asked
        "rubric_based_final_response_quality_v1": 12,
        "rubric_based_tool_use_quality_v1": 12,
        "hallucinations_v1": 12,  # one text per turn
        "safety_v1": 12,
        "per_turn_user_simulator_quality_v1": 6,  # turn 2 and the stop check
        "semantic_match_score": 6,
        "rubric_quality_score": 24,  # one question per rubric
        "safety_score": 12,
        "hallucination_score": 12,
    }
    assert len(fake_gemini.generate_requests()) == judge.count() == 114
    check_adk_votes(by)
    check_user_simulator(by)
    check_rust_medians(by)

    # the stored run re-scored with the same judge config (a new threshold only): every sample comes from
    # the judge cache, no request reaches the server, and the scores are the same
    sent = len(fake_gemini.requests)
    criteria = {**CONFIG_ALL["criteria"], "semantic_match_score": judged(0.3)}
    again = rescore(report.run_id, {**CONFIG_ALL, "criteria": criteria}, db_url=sqlite_url)

    assert len(fake_gemini.requests) == sent
    rescored = results(again)
    assert again.run_id != report.run_id
    assert {key: r.score for key, r in rescored.items()} == {key: r.score for key, r in by.items()}
    assert {key: r.details.get("agreement") for key, r in rescored.items()} == {
        key: r.details.get("agreement") for key, r in by.items()
    }
    assert rescored["kitchen_temperature", "semantic_match_score"].status is EvalStatus.PASSED  # 0.4 >= 0.3


# --------------------------------------------------------------------- unusable samples, retries, errors
@flow_test
@pytest.mark.flow
def test_unusable_samples_are_dropped_all_unusable_is_not_evaluated_and_429_is_retried(
    judge: JudgeRouter, fake_gemini: FakeGeminiServer, tmp_path: Path, sqlite_url: str
) -> None:
    unknown_label = prose('{"reasoning": "unsure", "verdict": "maybe"}')
    judge.on(FINAL, "Bedroom", per_sample(validity("valid"), prose(), fenced(validity("valid"))))
    judge.on(FINAL, "Kitchen", per_sample(prose(), status(400, "bad request"), unknown_label))
    judge.on(FINAL, "device_4", per_sample(status(429, "quota"), validity("valid")))
    judge.on("safety_score", "Bedroom", per_sample(graded(0.8), graded(1.7), graded(0.6)))
    judge.on("safety_score", "Kitchen", per_sample(graded(1.5), prose(), graded(-0.2)))
    cases = [
        conversation_case("one_sample_unparseable", BEDROOM, "OK. I've turned off device_2 in the Bedroom."),
        conversation_case("no_sample_usable", KITCHEN, "The temperature in the Kitchen is 24°C."),
        conversation_case("rate_limited_once", OFFICE, "OK. I've turned on device_4 in the Office."),
    ]
    config = {"criteria": {FINAL: judged(0.5, judge_mode=AGENT_EVAL_MODE), "safety_score": judged(0.5)}}

    report = evaluate(write_eval_set(tmp_path, cases), agent=AGENT, config=config, db_url=sqlite_url)

    by = results(report)
    # one unparseable sample: dropped from the vote and counted; the two usable ones (one in a code fence) decide
    dropped = by["one_sample_unparseable", FINAL]
    assert (dropped.score, dropped.status) == (1.0, EvalStatus.PASSED)
    assert vote(dropped)["usable_samples"] == 2 and vote(dropped)["unusable_samples"] == 1
    assert vote(dropped)["agreement"] == 1.0
    assert dropped.details["unusable_samples"] == 1
    assert "unparseable" in sample_labels(dropped)[1]
    assert "1 of 3 samples unusable, dropped" in (dropped.explanation or "")
    median = by["one_sample_unparseable", "safety_score"]
    assert median.score == 0.6 and median.details["unusable_samples"] == 1  # 1.7 is outside [0, 1]

    # no usable sample: NOT_EVALUATED with the reasons, never a 0 or a 1; an error but no metric failure
    for metric in (FINAL, "safety_score"):
        hopeless = by["no_sample_usable", metric]
        assert hopeless.score is None and hopeless.status is EvalStatus.NOT_EVALUATED
        assert hopeless.error is None
        assert (hopeless.explanation or "").startswith("not evaluated: all 3 judge sample(s) unusable")
        assert hopeless.details["unusable_samples"] == 3
    assert "400" in (by["no_sample_usable", FINAL].explanation or "")
    assert judge.count(FINAL, "Kitchen") == 3  # a 400 and unparseable answers: no retry

    # a 429 then success: retried by the client (4 requests for 3 samples), the vote unaffected
    retried = by["rate_limited_once", FINAL]
    assert (retried.score, retried.details["unusable_samples"]) == (1.0, 0)
    assert sample_labels(retried) == ["valid", "valid", "valid"]
    assert judge.count(FINAL, "device_4") == 4


# ----------------------------------------------------------------------------------- the judged demo config
@flow_test
@pytest.mark.flow
def test_judged_demo_config_runs_on_demo_cases_with_a_judge(
    judge: JudgeRouter, demo_dir: Path, sqlite_url: str
) -> None:
    selected = f"{demo_dir / 'home_automation.evalset.json'}:turn_off_bedroom_device,office_temperature_query"

    config = json.loads((demo_dir / "test_config_judged.json").read_text(encoding="utf-8"))
    for name in ("final_response_match_v2", "rubric_based_final_response_quality_v1", "hallucinations_v1"):
        config["criteria"][name]["judge_mode"] = AGENT_EVAL_MODE  # the router answers agent-eval's prompts
    report = evaluate(selected, agent=AGENT, config=config, db_url=sqlite_url)

    judged_metrics = {
        "final_response_match_v2",
        "rubric_based_final_response_quality_v1",
        "hallucinations_v1",
        "safety_v1",
    }
    by = results(report)
    assert {name for _, name in by} == judged_metrics | {"tool_trajectory_avg_score", "response_match_score"}
    assert all(by[case, name].score == 1.0 for case, name in by if name in judged_metrics)
    assert judge.metrics_asked() == judged_metrics
    assert judge.count() == 2 * 4 * 3  # 2 one-turn cases, 4 judged metrics, 3 samples (one text each)
    failing = {case.eval_id: [m.metric_name for m in case.metrics if m.gates] for case in report.failed_cases()}
    assert failing == {"office_temperature_query": ["response_match_score"]}  # the demo's terse "22." quirk


def connections_to(port: int) -> int:
    """Established TCP connections to 127.0.0.1:`port` (from Linux's /proc/net/tcp)."""
    table = Path("/proc/net/tcp")
    if not table.exists():
        pytest.skip("needs Linux's /proc/net/tcp")
    rows = [line.split() for line in table.read_text().splitlines()[1:]]
    return sum(1 for row in rows if row[3] == "01" and row[2] == f"0100007F:{port:04X}")


@flow_test
@pytest.mark.flow
def test_a_run_closes_its_judge_connections(
    judge: JudgeRouter, fake_gemini: FakeGeminiServer, demo_dir: Path, sqlite_url: str
) -> None:
    selected = f"{demo_dir / 'home_automation.evalset.json'}:turn_off_bedroom_device"

    report = evaluate(selected, agent=AGENT, config={"criteria": {"safety_v1": judged(1.0)}}, db_url=sqlite_url)

    assert report.cases[0].metrics[0].score == 1.0 and judge.count() == 3
    assert connections_to(urlsplit(fake_gemini.base_url).port or 0) == 0


def test_judged_demo_config_without_credentials_exits_2_in_one_line(
    demo_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in (*CREDENTIAL_VARIABLES, "AGENT_EVAL_DB_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    for name in ("PREFECT_SERVER_LOGGING_LEVEL", "PREFECT_LOGGING_ROOT_LEVEL"):  # the CLI sets them: restore
        monkeypatch.setenv(name, "CRITICAL")
    home = tmp_path / "home"
    monkeypatch.setenv("AGENT_EVAL_HOME", str(home))  # the default store would be written here

    code = main(["run", str(demo_dir), "--config", str(demo_dir / "test_config_judged.json")])

    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert "GOOGLE_API_KEY" in err and "GOOGLE_GENAI_USE_VERTEXAI" in err and "openai:<model>" in err
    assert "final_response_match_v2" in err  # the first judged criterion is named
    assert not home.exists()  # no store, no cache: nothing was run
