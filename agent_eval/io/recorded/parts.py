"""Recorded cases joined to their reference cases, whole or a part at a time.

Internal: the public API is `agent_eval`'s; this module's names may change between releases.

A recorded input of many turns is evaluated a part at a time (`RecordedParts`): each part's cases are read,
invoked, scored and stored before the next part is read, so the input's turns are never all in memory. The
run's stored eval set is then its sessions *without their turns* (`RecordedParts.outline`): each case keeps where
it was recorded (`recorded`) and its reference, and an empty `actual_conversation`; its turns are in the run's
case rows.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from agent_eval.io.recorded import RecordedLoad
from agent_eval.schema import EvalCase, EvalSet

__all__ = ["RecordedParts", "is_outline", "reference_cases", "with_references"]


def reference_cases(references: Sequence[EvalSet]) -> dict[str, EvalCase]:
    """The reference cases by id; where two eval sets have a case of the same id, the first eval set's."""
    by_id: dict[str, EvalCase] = {}
    for eval_set in references:
        for case in eval_set.eval_cases:
            by_id.setdefault(case.eval_id, case)
    return by_id


def with_references(recorded: EvalSet, references: list[EvalSet]) -> tuple[EvalSet, int]:
    """The recorded cases, each with the conversation, rubrics and session input of the reference case of the
    same id (first eval set first); returns them and how many reference cases matched no recorded session."""
    by_id = reference_cases(references)
    unmatched = len(by_id.keys() - {case.eval_id for case in recorded.eval_cases})
    return _with_references(recorded, by_id), unmatched


def _with_references(recorded: EvalSet, references: Mapping[str, EvalCase]) -> EvalSet:
    return recorded.model_copy(update={"eval_cases": [referenced(case, references) for case in recorded.eval_cases]})


def referenced(case: EvalCase, references: Mapping[str, EvalCase]) -> EvalCase:
    """`case` with the conversation, rubrics and session input of its reference case, if it has one."""
    reference = references.get(case.eval_id)
    if reference is None or reference.conversation is None:
        return case
    update = {
        "conversation": reference.conversation,
        "rubrics": reference.rubrics,
        "session_input": case.session_input or reference.session_input,
    }
    return case.model_copy(update=update)


def is_outline(eval_set: EvalSet) -> bool:
    """Whether `eval_set` is a run's outline of recorded sessions (`RecordedParts.outline`): its turns are in
    the run's case rows, not in it."""
    return any(case.recorded is not None and case.actual_conversation == [] for case in eval_set.eval_cases)


@dataclass(frozen=True)
class RecordedParts:
    """A recorded input read in parts of at most `turns` turns (`RecordedLoad.eval_sets`), each part joined to
    its reference cases."""

    load: RecordedLoad
    references: Mapping[str, EvalCase]
    turns: int

    @property
    def unmatched(self) -> int:
        """How many reference cases have no recorded session of the same id."""
        return len(self.references.keys() - set(self.load.session_ids))

    def eval_sets(self) -> Iterator[EvalSet]:
        """The parts, in session order: eval sets of the same id, each of at most `turns` turns."""
        for part in self.load.eval_sets(self.turns):
            yield _with_references(part, self.references)

    def whole(self) -> EvalSet:
        """Every session in one eval set."""
        return _with_references(self.load.eval_set, self.references)

    def outline(self) -> EvalSet:
        """The sessions without their turns (module docstring): what the run stores as its eval set."""
        cases = [
            case.model_copy(update={"actual_conversation": []}) for part in self.eval_sets() for case in part.eval_cases
        ]
        return EvalSet(eval_set_id=self.load.eval_set_id, eval_cases=cases)
