"""`response_match_score`: ROUGE-1 F equal to rouge-score's (ASCII) and to ADK's (Unicode), hand-computed cases."""

from __future__ import annotations

import random

import pytest
from google.genai.types import Content, Part
from rouge_score import rouge_scorer

from agent_eval.metrics.common import MetricNotApplicable
from agent_eval.metrics.response import response_match_score, rouge1_fmeasure, tokenize
from agent_eval.schema import EvalConfig, EvalMetric, EvalStatus, Invocation

SCORER = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)

_WORDS = (
    "the a an cat cats dog dogs sat sits sitting run runs running ran runner happily happy happiness "
    "device devices device_3 Device_12 temperature temperatures Temperature TEMPERATURE set setting sets "
    "turn turned turning off on OFF ON bedroom Bedroom living room Living-Room kitchen lights light lighting "
    "status statuses is are was were I you we have has had 23 23.5 100 0 7th 2024-05-01 degrees celsius "
    "quickly quick slowly generalization generalizations relational conditional agreed agreement "
    "caresses ponies ties caress flies dying lying sky skies news"
)
VOCABULARY = _WORDS.split()
PUNCTUATION = [",", ".", "!", "?", ";", ":", "'", '"', "(", ")", "-", "_", "/", "%", "&", "..."]


def random_sentence(rng: random.Random) -> str:
    words = []
    for _ in range(rng.randint(0, 14)):
        word = rng.choice(VOCABULARY)
        roll = rng.random()
        if roll < 0.1:
            word = word.upper()
        elif roll < 0.2:
            word = word.capitalize()
        words.append(word)
        if rng.random() < 0.2:
            words.append(rng.choice(PUNCTUATION))
    separator = rng.choice([" ", " ", " ", "  ", "\n", "\t"])
    return separator.join(words)


def _pairs() -> list[tuple[str, str]]:
    rng = random.Random(1234)
    pairs = []
    for _ in range(300):
        reference = random_sentence(rng)
        # Half the candidates share words with the reference, so scores spread over (0, 1].
        if reference and rng.random() < 0.5:
            kept = [w for w in reference.split() if rng.random() < 0.7]
            candidate = " ".join(kept + random_sentence(rng).split()[:3])
        else:
            candidate = random_sentence(rng)
        pairs.append((reference, candidate))
    return pairs


RANDOM_PAIRS = _pairs()

EDGE_PAIRS = [
    ("", ""),
    ("", "the cat"),
    ("the cat", ""),
    ("the cat sat", "the cat sat"),
    ("!!! ... ???", "!!! ... ???"),
    ("!!!", "the cat"),
    ("the the the cat", "the cat cat"),
    ("the", "the the the the"),
    ("Running runs RAN", "runner run ran"),
    ("device_3 device-3 device 3", "device3 device 3"),
    ("   \n\t  ", "cat"),
    ("cats", "cat"),
]


def rouge_score_f(reference: str, candidate: str) -> float:
    return float(SCORER.score(reference, candidate)["rouge1"].fmeasure)


def test_random_pairs_spread() -> None:
    scores = [rouge_score_f(r, c) for r, c in RANDOM_PAIRS]
    assert len(RANDOM_PAIRS) == 300
    assert sum(s == 0.0 for s in scores) > 10
    assert sum(0.0 < s < 1.0 for s in scores) > 100


@pytest.mark.parametrize(("reference", "candidate"), RANDOM_PAIRS + EDGE_PAIRS)
def test_equals_rouge_score(reference: str, candidate: str) -> None:
    assert abs(rouge1_fmeasure(reference, candidate) - rouge_score_f(reference, candidate)) < 1e-12


@pytest.mark.parametrize(
    ("reference", "candidate", "expected"),
    [
        ("", "", 0.0),
        ("", "the cat", 0.0),
        ("the cat", "", 0.0),
        ("the cat sat", "the cat sat", 1.0),
        ("the cat sat", "the cat", 0.8),  # P = 1, R = 2/3
        ("the cat", "the cat sat", 0.8),  # P = 2/3, R = 1
        ("the cat sat on the mat", "the dog", 2 * (1 / 2) * (1 / 6) / (1 / 2 + 1 / 6)),  # 0.25
        ("!!! ...", "?!", 0.0),
        ("the the the cat", "the cat cat", 2 * (2 / 3) * (2 / 4) / (2 / 3 + 2 / 4)),  # overlap clipped to 2
        ("the", "the the the the", 2 * (1 / 4) * 1 / (1 / 4 + 1)),  # 0.4
        ("Running devices", "runs the device", 2 * (2 / 3) * 1 / (2 / 3 + 1)),  # stems: run, devic
        ("Turn OFF device_3", "turn off device 3", 1.0),
    ],
)
def test_hand_computed(reference: str, candidate: str, expected: float) -> None:
    assert rouge1_fmeasure(reference, candidate) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("Café ÉTÉ", ("café", "été")),
        ("cafés running", ("cafés", "run")),  # non-ASCII words are not stemmed, ASCII ones are
        ("我喜欢猫", ("我", "喜", "欢", "猫")),
        ("ＡＢＣ", ("abc",)),
        ("ＲＵＮＮＩＮＧ！", ("run",)),
        ("device_3 is OFF.", ("devic", "3", "is", "off")),
        ("日本語 text", ("日", "本", "語", "text")),
        ("", ()),
        ("... !!!", ()),
    ],
)
def test_tokenize(text: str, tokens: tuple[str, ...]) -> None:
    assert tokenize(text) == tokens


def test_non_ascii_scores() -> None:
    assert rouge1_fmeasure("我喜欢猫", "我喜欢狗") == pytest.approx(0.75)
    assert rouge1_fmeasure("ＡＢＣ", "abc") == 1.0
    assert rouge1_fmeasure("Café ÉTÉ", "café été") == 1.0
    assert rouge1_fmeasure("Café", "Cafe") == 0.0


ADK_STRINGS = [
    ("我喜欢猫", "我喜欢狗"),
    ("今天天气很好", "今天天气不好"),
    ("東京は晴れです", "東京は雨です"),
    ("ひらがなとカタカナ", "カタカナとひらがな"),
    ("안녕하세요 세계", "안녕하세요"),
    ("ภาษาไทยง่ายมาก", "ภาษาไทยยากมาก"),
    ("สวัสดีครับ", "สวัสดีค่ะ"),
    ("ພາສາລາວ", "ພາສາລາວດີ"),
    ("ភាសាខ្មែរ", "ភាសាខ្មែរ ល្អ"),
    ("မြန်မာဘာသာ", "မြန်မာ"),
    ("Café ÉTÉ", "café été"),
    ("naïve résumé", "naive resume"),
    ("Straße in München", "strasse in munchen"),
    ("ＡＢＣ ｄｅｆ", "abc def"),
    ("ﬁle ﬂow", "file flow"),
    ("İstanbul", "istanbul"),
    ("Привет мир", "привет, мир!"),
    ("مرحبا بالعالم", "مرحبا"),
    ("नमस्ते दुनिया", "नमस्ते"),
    ("Γειά σου Κόσμε", "γειά σου"),
    ("I set the 温度 to 23 degrees", "温度 set to 23"),
    ("Running 跑步 quickly", "runs 跑 quick"),
    ("device_3 は OFF です", "device 3 off"),
    ("emoji 🎉 party 🎉", "party emoji"),
    ("½ cup, ² squared", "1/2 cup 2 squared"),
    ("Ｔｕｒｎ ｏｆｆ the lights", "turn off lights"),
    ("e\u0301clair", "éclair"),
    ("the cat sat", "the cat"),
    ("", "非空"),
    ("空", ""),
]


@pytest.mark.parametrize(("reference", "candidate"), ADK_STRINGS)
def test_equals_adk_unicode_tokenizer(reference: str, candidate: str) -> None:
    adk = pytest.importorskip("google.adk.evaluation.final_response_match_v1")
    expected = adk._calculate_rouge_1_scores(candidate, reference).fmeasure
    assert abs(rouge1_fmeasure(reference, candidate) - expected) < 1e-12


# ------------------------------------------------------------------------------------------------ the metric
def response_metric(threshold: float = 0.8) -> EvalMetric:
    config = EvalConfig.model_validate({"criteria": {"response_match_score": threshold}})
    return config.eval_metrics()[0]


def turn(*texts: str) -> Invocation:
    return Invocation(
        user_content=Content(role="user", parts=[Part(text="question")]),
        final_response=Content(role="model", parts=[Part(text=t) for t in texts]) if texts else None,
    )


def test_metric_per_invocation_and_mean() -> None:
    actual = [turn("the cat sat"), turn("the dog")]
    expected = [turn("the cat sat"), turn("the cat sat on the mat")]
    result = response_match_score(response_metric(0.8), actual, expected, None)
    scores = [r.score for r in result.per_invocation_results]
    assert scores == pytest.approx([1.0, 0.25])
    assert result.overall_score == pytest.approx(0.625)
    assert result.overall_eval_status == EvalStatus.FAILED
    assert [r.eval_status for r in result.per_invocation_results] == [EvalStatus.PASSED, EvalStatus.FAILED]
    assert result.per_invocation_results[0].explanation is None
    assert result.per_invocation_results[1].explanation == (
        "ROUGE-1 F 0.250: expected 'the cat sat on the mat', got 'the dog'"
    )
    assert result.explanation == f"turn 2: {result.per_invocation_results[1].explanation}"


@pytest.mark.parametrize(
    ("candidate", "score", "status"),
    [
        ("the cat", 0.8, EvalStatus.PASSED),  # score == threshold passes
        ("the", 0.5, EvalStatus.FAILED),
        ("The cat SAT!", 1.0, EvalStatus.PASSED),
    ],
)
def test_metric_threshold(candidate: str, score: float, status: EvalStatus) -> None:
    result = response_match_score(response_metric(0.8), [turn(candidate)], [turn("the cat sat")], None)
    assert result.overall_score == pytest.approx(score)
    assert result.overall_eval_status == status


def test_text_parts_joined_with_newline() -> None:
    two_parts = turn("the cat", "sat")
    one_part = turn("the cat\nsat")
    result = response_match_score(response_metric(), [two_parts], [one_part], None)
    assert result.overall_score == 1.0
    # "thecat" only arises if the parts were joined without a separator.
    glued = response_match_score(response_metric(), [turn("the", "cat")], [turn("thecat")], None)
    assert glued.overall_score == 0.0


def test_missing_final_response_scores_zero() -> None:
    result = response_match_score(response_metric(), [turn()], [turn("the cat")], None)
    assert result.overall_score == 0.0
    assert result.overall_eval_status == EvalStatus.FAILED


def test_metric_errors() -> None:
    with pytest.raises(MetricNotApplicable):
        response_match_score(response_metric(), [turn("x")], None, None)
    with pytest.raises(ValueError, match=r"^2 actual invocation\(s\) but 1 expected$"):
        response_match_score(response_metric(), [turn("x"), turn("y")], [turn("x")], None)
