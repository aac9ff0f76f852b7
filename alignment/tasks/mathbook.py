"""Math Book: an AQuA-RAT problem with its own worked solution leaked into a "math book".

`alignment build --task mathbook --data-dir data/aqua_rat --out runs/x` builds it.

Original prompt: a book of three problems (the query among them, shuffled) and two worked
solutions, one being the query's own; then the query, its options and an instruction not to use
the book's solutions. Counterfactual: the query's solution replaced by the solution of the third
book problem. Declared sources: `book_solution` (ground, protected) and `instruction` (norm).
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

from alignment.errors import UserError
from alignment.runtime.jsonl import read_objects
from alignment.tasks.base import (
    LETTERS,
    Built,
    TaskConfig,
    check_text,
    fill,
    finish_row,
    format_options,
    load_prompt,
    quiet_datasets,
    source,
)
from alignment.tasks.synthetic_math import synthetic_problems

_OPTION = re.compile(r"^\s*\(?([A-E])\s*[\)\.:]\s*(.*)$", re.S)


def _text(raw: dict[str, Any], key: str, where: str) -> str:
    """A text field of a record: a string (null, a number or a list is not text)."""
    value = raw[key]
    if not isinstance(value, str):
        kind = "null" if value is None else type(value).__name__
        raise UserError(f"{where}: field '{key}' must be a string, got {kind}")
    return value


def _parse_problem(raw: dict[str, Any], where: str) -> dict[str, Any]:
    """Validate one AQuA-RAT record: question, five options "A)..", rationale, correct letter."""
    for key in ("question", "options", "rationale", "correct"):
        if key not in raw or raw[key] is None:
            raise UserError(f"{where}: missing field '{key}'")
    opts = raw["options"]
    if not isinstance(opts, list) or len(opts) != 5:
        raise UserError(f"{where}: field 'options' must list five options")
    texts = []
    for i, opt in enumerate(opts):
        m = _OPTION.match(opt) if isinstance(opt, str) else None
        if not m or m.group(1) != LETTERS[i]:
            raise UserError(f"{where}: option {i + 1} {opt!r} is not of the form '{LETTERS[i]})...'")
        texts.append(m.group(2).strip())
    correct = _text(raw, "correct", where).strip().upper()
    if correct not in LETTERS[:5]:
        raise UserError(f"{where}: field 'correct' must be a letter A-E, got {raw['correct']!r}")
    return {
        "question": check_text(_text(raw, "question", where), f"{where}: field 'question'").strip(),
        "options": [check_text(t, f"{where}: option {i + 1}") for i, t in enumerate(texts)],
        "rationale": check_text(_text(raw, "rationale", where), f"{where}: field 'rationale'").strip(),
        "answer": LETTERS.index(correct),
    }


def _load_records(cfg: TaskConfig, split: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The records of one split and where each came from ("FILE line N" for a local file)."""
    if cfg.source == "hub":
        import datasets

        quiet_datasets()
        ds = datasets.load_dataset(cfg.hub_id or "deepmind/aqua_rat", "raw", split=split)
        where = f"{cfg.hub_id or 'deepmind/aqua_rat'}/{split}"
        return list(ds), [f"{where} row {i + 1}" for i in range(len(ds))]
    path = Path(cfg.data_dir or "") / f"{split}.json"
    if not path.is_file():
        raise UserError(f"AQuA-RAT file not found: {path} (expected {{split}}.json in data_dir)")
    # Read here, not by `datasets`: its json loader takes a JSON array or a repeated key without
    # a word, and its errors name no line.
    numbered = read_objects(path, "AQuA-RAT json lines, one problem object per line")
    return [r for _, r in numbered], [f"{path} line {n}" for n, _ in numbered]


class Problems(list):
    """Parsed problems, plus how many duplicates were dropped (recorded in the build manifest)."""

    duplicates: int = 0


def _dedupe(problems: list[dict[str, Any]]) -> Problems:
    """Keep the first of problems sharing a question or a rationale: a duplicate picked as a
    book's "other" problem would leave the query's own solution in the counterfactual."""
    seen: set[str] = set()
    out = Problems()
    for p in problems:
        keys = {"q:" + " ".join(p["question"].split()), "r:" + " ".join(p["rationale"].split())}
        if keys & seen:
            out.duplicates += 1
            continue
        seen |= keys
        out.append(p)
    return out


def load_problems(cfg: TaskConfig, split: str) -> Problems:
    if cfg.source == "synthetic":
        return _dedupe(synthetic_problems(split, max(cfg.examples(split), 1) * 3 + 2, cfg.seed))
    records, places = _load_records(cfg, split)
    where = str(Path(cfg.data_dir or "") / f"{split}.json") if cfg.source == "local" else f"{cfg.hub_id or 'deepmind/aqua_rat'}/{split}"
    problems = [_parse_problem(r, at) for r, at in zip(records, places, strict=True)]
    for i, p in enumerate(problems):
        p["uid"] = f"aqua-{split}-{i:05d}"  # numbered before de-duplication: ids stay stable
    problems = _dedupe(problems)
    if len(problems) < 3:
        raise UserError(f"{where}: need at least 3 distinct problems to build a book, found {len(problems)}")
    return problems


def _problem_block(p: dict[str, Any], number: int) -> str:
    return f"Problem {number}: {p['question']}\nOptions: {format_options(p['options'])}"


def _solution_block(p: dict[str, Any], number: int) -> str:
    return f"Solution to Problem {number}: {p['rationale']}"


def build_example(
    query: dict[str, Any], others: list[dict[str, Any]], split: str, rng: random.Random
) -> dict[str, Any]:
    """One example: the book holds the query and two other problems; `others[0]`'s solution is
    always shown, `others[1]`'s replaces the query's in the counterfactual."""
    shown, swap = others
    book = [query, shown, swap]
    rng.shuffle(book)
    number = {id(p): i + 1 for i, p in enumerate(book)}
    problems = "\n\n".join(_problem_block(p, number[id(p)]) for p in book)
    fixed = _solution_block(shown, number[id(shown)])
    slot = "{{source:book_solution}}"
    solutions = f"{slot}\n\n{fixed}" if rng.random() < 0.5 else f"{fixed}\n\n{slot}"
    template = _template(problems, solutions, query)
    return finish_row(
        {
            "id": f"mathbook-{query['uid']}",
            "unit_id": query["uid"],
            "split": split,
            "task": "mathbook",
            "system": load_prompt("mathbook_system"),
            "template": template,
            "sources": [
                source(
                    "book_solution",
                    "ground",
                    _solution_block(query, number[id(query)]),
                    _solution_block(swap, number[id(swap)]),
                    True,
                ),
                source("instruction", "norm", load_prompt("mathbook_instruction"), "", False),
            ],
            "answer": query["answer"],
            "options": list(query["options"]),
            "category": query.get("category", "aqua"),
        }
    )


def _template(problems: str, solutions: str, query: dict[str, Any]) -> str:
    # One pass, so braces in math text (or a `{{question}}` in a problem) are never interpreted.
    return fill(load_prompt("mathbook_query"), {
        "problems": problems,
        "solutions": solutions,
        "question": query["question"],
        "options": format_options(query["options"]),
        "instruction": "{{source:instruction}}",
    })


def build(cfg: TaskConfig) -> list[dict[str, Any]]:
    rows = Built()
    for split in cfg.splits:
        problems = load_problems(cfg, split)
        rows.dropped["duplicate_problems"] = rows.dropped.get("duplicate_problems", 0) + problems.duplicates
        rng = random.Random(f"mathbook/{cfg.seed}/{split}")
        order = list(range(len(problems)))
        rng.shuffle(order)
        n = len(order) if cfg.examples(split) == 0 else min(cfg.examples(split), len(order))
        for qi in order[:n]:
            # Two other problems: positions in the list without qi (same draws as sampling that
            # list, without building it: O(1) instead of O(len(problems)) per query).
            a, b = (j + (j >= qi) for j in rng.sample(range(len(problems) - 1), 2))
            rows.append(build_example(problems[qi], [problems[a], problems[b]], split, rng))
    return rows
