"""Per judged metric and judge identity, how far the judge agrees with people: `agent-eval judges`.

Every judged item with a label (`agent_eval.store.labels.labelled_pairs`; the latest label when several people
labelled it) counts for the judge identity that scored it (the run's `runs.judges`: model, mode, prompts,
samples; "unknown" for runs stored before identities were recorded). Items are grouped by (metric, identity);
a rubric metric with labelled items of more than one rubric also gets one group per rubric id. An item judged
by several runs of one identity counts once per run: each run's verdict is a judgement of the same content,
and a judge that answers one way today and another tomorrow must not look consistent.

Each group gives the figures of `agent_eval.results.agreement`: binary agreement (raw agreement, balanced
accuracy, Cohen's kappa with its 95% bootstrap interval, true-pass and true-fail rates, the confusion matrix)
over the items whose label is pass/fail and whose judge verdict is known; for labels with scores, Spearman's rho
and the mean absolute error against the judge's scores; and the judge's self-consistency over its samples.
Fewer than `MIN_LABELS` labels, or one human class only, is said in words (`insufficient`), not shown as a number.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy.engine import Engine

from agent_eval.results.agreement import (
    JudgeAgreement,
    ScoredAgreement,
    binary_agreement,
    scored_agreement,
    self_consistency,
)
from agent_eval.results.model import RunReport
from agent_eval.results.run_configs import describe_judge, identity_key
from agent_eval.store.labels import LabelledPair, labelled_pairs

__all__ = ["format_judges", "judge_agreements", "judge_key", "run_judge_agreements"]

UNKNOWN_JUDGE = "unknown judge (a run stored before judge identities were recorded)"


def judge_key(identity: Mapping[str, Any] | None) -> str:
    """The identity's short key (`identity_key`), `unknown` without one."""
    return "unknown" if identity is None else identity_key(identity)


def judge_agreements(engine: Engine | None = None, *, metric: str | None = None) -> list[JudgeAgreement]:
    """Every (metric, judge identity[, rubric]) group with at least one label, by metric then identity."""
    groups: dict[tuple[str, str, str | None], list[LabelledPair]] = defaultdict(list)
    rubrics: dict[tuple[str, str], set[str]] = defaultdict(set)
    for pair in labelled_pairs(engine, metric=metric):
        key = judge_key(pair.judge)
        groups[(pair.item.metric_name, key, None)].append(pair)
        if pair.item.rubric_id is not None:
            groups[(pair.item.metric_name, key, pair.item.rubric_id)].append(pair)
            rubrics[(pair.item.metric_name, key)].add(pair.item.rubric_id)
    for (name, key), ids in rubrics.items():
        if len(ids) == 1:  # one rubric: its group is the metric's
            del groups[(name, key, next(iter(ids)))]
    return [_agreement(name, rubric_id, pairs) for (name, _, rubric_id), pairs in sorted(groups.items(), key=_order)]


def run_judge_agreements(report: RunReport, engine: Engine | None = None) -> list[JudgeAgreement]:
    """The agreements of the judges that scored `report` (its `judges`: the same metric and identity), in
    `judge_agreements`' order; empty for a run with no judged criterion or no label of its judges."""
    identities = {
        (metric, judge_key(identity))
        for per_metric in (report.judges or {}).values()
        for metric, identity in per_metric.items()
    }
    if not identities:
        return []
    found = judge_agreements(engine)
    return [a for a in found if (a.metric, a.judge_key) in identities]


def _order(entry: tuple[tuple[str, str, str | None], list[LabelledPair]]) -> tuple[str, str, str]:
    (name, key, rubric_id), _ = entry
    return name, key, rubric_id or ""


def _agreement(metric: str, rubric_id: str | None, pairs: Sequence[LabelledPair]) -> JudgeAgreement:
    identity = dict(pairs[0].judge) if pairs[0].judge is not None else None
    binary = [(p.item.judge_passed, p.label.passed) for p in pairs]
    known = [(judge, human) for judge, human in binary if judge is not None and human is not None]
    scores = [(p.item.judge_score, p.label.score) for p in pairs]
    scored = [(judge, human) for judge, human in scores if judge is not None and human is not None]
    return JudgeAgreement(
        metric=metric,
        rubric_id=rubric_id,
        judge=identity,
        judge_key=judge_key(identity),
        judge_description=_describe(identity),
        labels=len(pairs),
        binary=binary_agreement([j for j, _ in known], [h for _, h in known]),
        scored=scored_agreement([j for j, _ in scored], [h for _, h in scored]) if scored else None,
        self_consistency=self_consistency([_verdicts(p.item.samples) for p in pairs]),
    )


def _verdicts(samples: Iterable[Any]) -> list[bool | None]:
    """Each sample's verdict: its score at least 0.5 (a binary turn's or a rubric's scores are 0 or 1)."""
    return [None if score is None else float(score) >= 0.5 for score in samples]


def _describe(identity: Mapping[str, Any] | None) -> str:
    if identity is None:
        return UNKNOWN_JUDGE
    return describe_judge(identity)


def format_judges(agreements: Sequence[JudgeAgreement]) -> str:
    """The agreements as text: one block per metric and judge, the figures or why there are none."""
    if not agreements:
        return "No labelled judged items yet: `agent-eval label RUN_ID` or `agent-eval labels import FILE` adds labels."
    return "\n".join(_block(agreement) for agreement in agreements)


def _block(agreement: JudgeAgreement) -> str:
    name = agreement.metric + (f" / rubric {agreement.rubric_id}" if agreement.rubric_id else "")
    lines = [f"{name}  judge: {agreement.judge_description}  ({agreement.labels} labelled)"]
    binary = agreement.binary
    if binary.insufficient:
        lines.append(f"  agreement: not measured: {binary.insufficient}")
    else:
        lines.append(
            f"  kappa {binary.kappa_text()}  agreement {binary.agreement:.0%}  balanced accuracy "
            f"{binary.balanced_accuracy:.0%}  true pass {binary.true_pass_rate:.0%}  true fail "
            f"{binary.true_fail_rate:.0%}"
        )
    c = binary.confusion
    lines.append(
        f"  human pass: judge pass {c.pass_pass}, judge fail {c.pass_fail}; "
        f"human fail: judge pass {c.fail_pass}, judge fail {c.fail_fail}"
    )
    if agreement.scored is not None:
        lines.append(_scored_line(agreement.scored))
    if agreement.self_consistency is not None:
        lines.append(f"  self-consistency over samples {agreement.self_consistency:.0%}")
    return "\n".join(lines)


def _scored_line(scored: ScoredAgreement) -> str:
    if scored.insufficient:
        return f"  scores: not measured: {scored.insufficient}"
    rho = "undefined" if scored.spearman_rho is None else f"{scored.spearman_rho:.2f}"
    return f"  scores: Spearman rho {rho}, mean absolute error {scored.mean_absolute_error:.3f} over {scored.n}"
