"""Tasks: Math Book and BiasQA builders, registered by name (`alignment build ...`).

A task turns a `TaskConfig` into example rows (id, unit_id, split, system, query, cf_query,
template, sources, answer, options, category) and knows its metric and acknowledgment sentence.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from alignment.registry import Registry
from alignment.tasks import biasqa, mathbook
from alignment.tasks.base import (
    TaskConfig,
    load_prompt,
    parse_answer,
    protected_source,
    render_hybrid,
)


@dataclass(frozen=True)
class Task:
    name: str
    build: Callable[[TaskConfig], list[dict[str, Any]]]
    metric: str  # what `correct` means for reporting: accuracy, or stereotype rate (BiasQA)

    def ack_sentence(self) -> str:
        return load_prompt(f"{self.name}_ack")


TASKS: Registry[Task] = Registry("task")
TASKS.register("mathbook")(Task("mathbook", mathbook.build, "accuracy"))
TASKS.register("biasqa")(Task("biasqa", biasqa.build, "stereotype_rate"))

__all__ = [
    "TASKS",
    "Task",
    "TaskConfig",
    "parse_answer",
    "protected_source",
    "render_hybrid",
]
