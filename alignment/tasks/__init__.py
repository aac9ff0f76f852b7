"""Tasks: objects that own a dataset's prompts, parsing, metric and judge lexicon (`alignment build`).

A `Task` turns a `TaskConfig` into example rows (id, unit_id, split, system, query, cf_query,
template, sources, answer, options, category), parses a response's answer, names its metric and
the metric's label, reads its acknowledgment sentence from `prompts/<name>_ack.txt`, chooses the
splits of a local data folder, and names the keyword-judge lexicon that labels its responses.
Register a new task once (`TASKS.register(name)(Task(...))`) and every stage, config and CLI
command accepts it; nothing else needs editing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alignment.registry import Registry
from alignment.tasks import biasqa, hint_types, hints, mathbook
from alignment.tasks.answer import parse_answer
from alignment.tasks.base import (
    TaskConfig,
    load_prompt,
    protected_source,
    render_hybrid,
)


def _json_splits(data_dir: Path) -> list[str]:
    """AQuA-RAT layout: one `<split>.json` per split."""
    return sorted(p.stem for p in data_dir.glob("*.json"))


def _occupation_splits(data_dir: Path) -> list[str]:
    """Winogender has no splits of its own; occupations are split into train and test."""
    return ["train", "test"]


@dataclass(frozen=True)
class Task:
    """Everything that differs between datasets; stages ask the task instead of its name."""

    name: str
    build: Callable[[TaskConfig], list[dict[str, Any]]]
    metric: str  # what `correct` means: accuracy, or stereotype_rate (BiasQA)
    metric_label: str  # how reports name the metric
    metric_note: str = ""  # a sentence of context after the metric's name in reports
    parse: Callable[[str, list[str]], int | None] = parse_answer
    local_splits: Callable[[Path], list[str]] = _json_splits
    # Which judge definition labels this task's responses: the keyword lexicon and the LLM
    # judge's prompt (`prompts/judge_<judge_as>.txt`). A task without one cannot be judged
    # by rules, and says so instead of borrowing another task's rules silently.
    judge_as: str | None = None
    # The module that registers this task's keyword-judge rules (`alignment.judge.rules.KeywordRules`)
    # under `judge_as`, imported when the keyword judge first needs them: the judges import the
    # tasks, not the reverse. None: the rules are registered by whoever registers the task.
    lexicon: str | None = None
    feature: str = "the protected feature"  # the feature, in words (reports, labelling pages)
    ack_text: str | None = None  # the acknowledgment sentence; None: prompts/<name>_ack.txt
    # The denial sentence (the acknowledgment's negation) that two-sided strategies append where
    # the feature is absent or did not cause the answer; None: prompts/<name>_deny.txt.
    deny_text: str | None = None
    # The folder of this task's prompt files (`<name>_ack.txt`, `ack_source_<name>_<source>.txt`)
    # for a task registered outside the package; None: the package's `prompts/`.
    prompts_dir: Path | None = None

    def prompt(self, name: str) -> str:
        """The task's prompt file `name` (`prompts_dir`, else the package's prompts)."""
        return load_prompt(name, self.prompts_dir)
    # Report lines of the task's own (read from the run dir), after the common sections.
    # 'module:function' making report lines of the task's own from the run dir (named by string:
    # the analysis folder sits above tasks in the import graph); None: none.
    report_section: str | None = None

    def ack_sentence(self) -> str:
        return self.ack_text if self.ack_text is not None else self.prompt(f"{self.name}_ack")

    def ack_suffix(self) -> str:
        """What the augmented score appends to a response: a blank line and the sentence."""
        return "\n\n" + self.ack_sentence()

    def deny_sentence(self) -> str:
        return self.deny_text if self.deny_text is not None else self.prompt(f"{self.name}_deny")

    def deny_suffix(self) -> str:
        """What a two-sided strategy appends where the feature did not cause the answer."""
        return "\n\n" + self.deny_sentence()


TASKS: Registry[Task] = Registry("task")
TASKS.register("mathbook")(
    Task("mathbook", mathbook.build, "accuracy", "accuracy", judge_as="mathbook",
         lexicon="alignment.lexicons.mathbook",
         feature="the book's worked solution of the query problem")
)
TASKS.register("biasqa")(
    Task("biasqa", biasqa.build, "stereotype_rate", "stereotype rate",
         " (share of answers equal to the stereotypical option; 50% is unbiased)",
         local_splits=_occupation_splits, judge_as="biasqa", lexicon="alignment.lexicons.biasqa",
         feature="a gender stereotype about the occupation")
)
TASKS.register("hints")(
    Task("hints", hints.build, "accuracy", "accuracy",
         " (the hint points to a wrong option in task.params.wrong_rate of questions)",
         local_splits=lambda data_dir: ["train", "test"], judge_as="hints", lexicon=hint_types.LEXICON,
         feature="a hint in the prompt pointing to one option", report_section="alignment.analysis.hint_figures:hints_section")
)

__all__ = [
    "TASKS",
    "Task",
    "TaskConfig",
    "parse_answer",
    "protected_source",
    "render_hybrid",
]
