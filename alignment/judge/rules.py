"""One task's keyword-judge rules as one object, registered under the task's `judge_as` name.

`alignment judge --task NAME ...` with the keyword judge reads the responses through
`keyword_rules(NAME)`. The judge's reading (sentences, clauses, take-backs) is the same for every
task; what differs is a task's lexicon, and the lexicon hands the judge everything task-specific
here: how a clause is tagged, what names the feature, how a section title reads, and which of
the optional sentence-level rules apply. A new task registers one `KeywordRules` (usually at the
end of its lexicon module) and names that module in its `Task.lexicon`; no judge module changes.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

from alignment.judge.lexicon import Tag
from alignment.registry import Registry

ClauseTagger = Callable[[str, str, bool], tuple[Tag | None, str]]
# `gate(sentence, context)`: False only where the sentence cannot be tagged use/pending.
UseGate = Callable[[str, Callable[[], bool]], bool]


class Cues(Protocol):
    """A cheap prefilter: whether a text holds any word a use could need (`fastre` patterns)."""

    def contains(self, text: str) -> bool: ...


@dataclass(frozen=True)
class KeywordRules:
    """What the keyword judge needs to know about one task's feature."""

    # `tag(clause, previous clause, feature named nearby)` -> (use|reject|aside|pending|None, why).
    tag: ClauseTagger
    # Whether a text names the feature at all (gives pronouns like "it" their context).
    mention: Callable[[str], bool]
    # The tag of a section title given its clause tag ("## Use the book" vs "## A note on the page").
    heading: Callable[[Tag | None, str], Tag | None]
    # A sentence can hold a use only if it or the one before contains one of these words.
    cues: Cues | None = None
    # `could_use(sentence, context)`: False only where the sentence cannot be tagged use/pending.
    could_use: UseGate | None = None
    # Answer letters a sentence attributes to the feature's source; a use that gives a letter other
    # than the response's final answer goes against the source (`reject`). None: no answer letters.
    cited_letters: Callable[[str], set[str]] | None = None
    # Rewrites the reasoning before reading (e.g. drops labels the response copies from its prompt).
    prepare: Callable[[str], str] | None = None
    # Whether a sentence doubts the feature's content ("that leaves out the train's length"): a
    # doubt after a use takes the use back.
    doubted: Callable[[str], bool] | None = None
    # Caveats and hedges that negate nothing keep an earlier use ("it's worth noting men can be
    # nurses too"), and a choice made all the same after a take-back is a use: rules for a feature
    # that decides between options rather than supplying content.
    hedges_keep: bool = False


# Declared here and filled by each task's lexicon module when it is imported (`keyword_rules`).
KEYWORD_RULES: Registry[KeywordRules] = Registry("keyword-judge rules")


def keyword_rules(judge_as: str) -> KeywordRules:
    """The rules registered under `judge_as`, importing the lexicon modules that tasks name.

    Tasks sit above the judges in the import graph, so a task names its lexicon module (a
    string) and the module registers its rules when it is first needed; an unknown name is a
    one-line `UserError` with a suggestion.
    """
    if judge_as not in KEYWORD_RULES:
        from alignment.tasks import TASKS

        for name in TASKS.names():
            task = TASKS.get(name)
            if task.judge_as == judge_as and task.lexicon:
                importlib.import_module(task.lexicon)
    KEYWORD_RULES.check(judge_as, "task")  # `task: unknown keyword-judge rules 'x' (did you mean ...)`
    return KEYWORD_RULES.get(judge_as)


class UseGates(Mapping[str, UseGate]):
    """Judge definition -> its cheap necessary condition for a sentence to be tagged `use`
    (`KeywordRules.could_use`), for the definitions that have one: a mapping, so that a test can
    turn every gate off at once and check that the gates only skip work."""

    def __getitem__(self, task: str) -> UseGate:
        gate = keyword_rules(task).could_use
        if gate is None:
            raise KeyError(task)
        return gate

    def __iter__(self) -> Iterator[str]:
        return iter([n for n in KEYWORD_RULES.names() if KEYWORD_RULES.get(n).could_use is not None])

    def __len__(self) -> int:
        return len(list(iter(self)))
