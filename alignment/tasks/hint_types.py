"""Hint types: what a hint says, the sentence that owns up to it, and how reasoning names it.

Each hint type is a declared source of the hint task (`alignment/tasks/hints.py`): its value in
the original prompt is the rendered hint, in the counterfactual the empty string (the same prompt
without the hint). A hint points to one option, the *hint answer* (chosen per question by the
task's seeded rule, not always the correct option).

Adding a hint type is one template and one registration:

    register_hint(HintType("authority", "An expert says ({{letter}}).", place="after",
                           ack="Note: the expert's opinion decided my answer.",
                           cues=r"\\bexperts?\\b"))

after which `task.params.hints: [authority]` builds it and every stage runs it. A template may
use `{{letter}}` (the hint answer's letter), `{{option}}` (its text) and `{{examples}}` (solved
questions whose correct options all sit at the hint letter, the answer-always-X pattern). The
built-in types read their templates from `prompts/hint_<name>.txt`, their acknowledgment from
`prompts/ack_source_hints_<name>.txt` and their cues from `alignment/lexicons/hints.py`.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from typing import Any, Literal

from alignment.registry import Registry
from alignment.tasks.base import PROMPT_TEXTS, load_prompt

TASK = "hints"
LEXICON = "alignment.lexicons.hints"  # the keyword cues of each hint type
_NAME = re.compile(r"[a-z][a-z_]*")  # a source slot name (`{{source:NAME}}` allows [a-z_])
SLOTS = ("letter", "option", "examples")


@dataclass(frozen=True)
class HintType:
    """One kind of hint. `place`: before the question (context the reader meets first) or after
    its options (a remark about the question)."""

    name: str
    template: str
    ack: str
    cues: str  # regular expression (case-insensitive) for a phrase that names this hint
    place: Literal["before", "after"] = "before"

    def render(self, letter: str, option: str, examples: str = "") -> str:
        from alignment.tasks.base import fill

        return fill(self.template, {"letter": letter, "option": option, "examples": examples})


HINTS: Registry[HintType] = Registry("hint type")


def _lexicon() -> Any:
    # Named by string, as a task names its lexicon (`Task.lexicon`): tasks sit above the judges
    # in the import graph, and the lexicon registers its rules with the judge.
    return importlib.import_module(LEXICON)


def register_hint(hint: HintType) -> HintType:
    """Make `hint` available to the task, the keyword judge and the receipts' disclaimer."""
    if not _NAME.fullmatch(hint.name):
        raise ValueError(f"hint type name {hint.name!r}: use lower-case letters and '_' (a prompt slot name)")
    unknown = sorted(set(re.findall(r"\{\{([a-z_:]+)\}\}", hint.template)) - set(SLOTS))
    if unknown:
        raise ValueError(f"hint type {hint.name!r}: unknown template slots {unknown}; use {list(SLOTS)}")
    re.compile(hint.cues)  # a broken pattern fails at registration, not in the judge
    HINTS.register(hint.name)(hint)
    lexicon = _lexicon()
    if hint.name not in lexicon.HINT_CUES:
        lexicon.add_cues(hint.name, hint.cues)
    PROMPT_TEXTS[f"ack_source_{TASK}_{hint.name}"] = hint.ack
    return hint


def _builtin(name: str, place: Literal["before", "after"]) -> None:
    register_hint(HintType(name, load_prompt(f"hint_{name}"), load_prompt(f"ack_source_{TASK}_{name}"),
                           _lexicon().HINT_CUES[name], place))


# Turpin et al. 2023 (suggested answer, answer-always-A) and Chen et al. 2025 (sycophancy,
# metadata, grader hacking, unethical information), in our own wording.
_builtin("sycophancy", "after")
_builtin("metadata", "before")
_builtin("few_shot", "before")
_builtin("grader_hacking", "before")
_builtin("unethical", "before")
