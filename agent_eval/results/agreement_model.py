"""The judge-agreement figures as data (`agent_eval.results.agreement` computes them): what `agent-eval judges`,
`show --json` and the HTML report's Judges section show.

Internal: the public API is `agent_eval`'s; this module's names may change between releases.
Kept apart from the statistics so that the results model (`RunReport.judge_agreement`) can hold them without
importing numpy's statistics, which read the results model themselves."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["BinaryAgreement", "Confusion", "JudgeAgreement", "ScoredAgreement", "kappa_text"]


class Confusion(BaseModel):
    """The pairs counted by (human label, judge verdict)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pass_pass: int
    """Human pass, judge pass."""
    pass_fail: int
    """Human pass, judge fail."""
    fail_pass: int
    """Human fail, judge pass."""
    fail_fail: int
    """Human fail, judge fail."""


def kappa_text(kappa: float | None, interval: tuple[float, float] | None = None) -> str:
    """`0.71 [0.55, 0.84]` (the interval when known), `undefined` without a kappa: how every output shows one."""
    if kappa is None:
        return "undefined"
    return f"{kappa:.2f}" + (f" [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else "")


class BinaryAgreement(BaseModel):
    """A judge's pass/fail verdicts against human labels; when `insufficient` is set every float is None."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n: int
    agreement: float | None
    """The share of items where the judge's verdict equals the human label."""
    balanced_accuracy: float | None
    """The mean of `true_pass_rate` and `true_fail_rate`."""
    kappa: float | None
    """Cohen's kappa."""
    kappa_interval: tuple[float, float] | None
    """The percentile bootstrap interval of kappa at the requested confidence (None: fewer than 2 defined
    resamples)."""
    true_pass_rate: float | None
    """The share of human "pass" items the judge passed."""
    true_fail_rate: float | None
    """The share of human "fail" items the judge failed."""
    confusion: Confusion
    insufficient: str | None
    """Why no figure is given, e.g. "12 labels (at least 20 needed)"; None when the figures are given."""

    def kappa_text(self) -> str:
        """Kappa with its interval (`kappa_text`)."""
        return kappa_text(self.kappa, self.kappa_interval)


class ScoredAgreement(BaseModel):
    """A judge's numeric scores against human scores; when `insufficient` is set every float is None."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n: int
    spearman_rho: float | None
    """Spearman's rank correlation (None when either side is constant)."""
    mean_absolute_error: float | None
    """The mean of `|judge - human|`."""
    insufficient: str | None
    """Why no figure is given, e.g. "12 labels (at least 20 needed)"; None when the figures are given."""


class JudgeAgreement(BaseModel):
    """One judge identity's agreement with people on one metric (or one rubric of it): `agent-eval judges`,
    `RunReport.judge_agreement` (`agent_eval.judges.agreement`)."""

    model_config = ConfigDict(frozen=True)

    metric: str
    rubric_id: str | None = None
    judge: dict[str, Any] | None
    judge_key: str
    judge_description: str
    labels: int
    binary: BinaryAgreement
    scored: ScoredAgreement | None = None
    self_consistency: float | None = None
