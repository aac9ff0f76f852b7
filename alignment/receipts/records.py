"""The rows the `receipts` stage writes, and the disclaimer that names a receipt's sources.

`alignment receipts CONFIG --out runs/<name>` (`alignment.stages.receipts`) reads `build/` (templates, sources) and `generate/`
(the `{}` and `{protected}` samples, reused) and writes to `receipts/`:

- `data.parquet`, one row per example: `example_id`, `sources` (declared names, in order),
  `cells` (JSON object: hybrid key -> modal answer, for the executed hybrids; the key is the
  replaced sources in declared order joined by `+`, `""` = original prompt, e.g.
  `"book_solution"`, `"book_solution+instruction"`), `old_verdict`, `new_verdict`, `changed`,
  `receipt` (list of lists of source names, in cell order; `[]` when the endpoints agree),
  `executions` (hybrids whose verdict was executed), `answers` (JSON: hybrid key -> the N sampled
  answers), `generated` (hybrid keys sampled by this stage, not reused from `generate`).
- `responses.parquet`, one row per original response (the strategy-D cube, see
  `alignment.receipts.runner`): `example_id`, `sample`, `answer`, `cells`, `receipt`,
  `executions`, `d` (= the protected singleton cell differs from the response's answer).
- `hybrids.parquet`: the hybrid responses generated here (`variant` = hybrid key).

Answers are option indices, -1 = invalid. Generation is sharded by round under
`receipts/shards/` and resumes like `generate`. `disclaimer(task, receipt)` builds the
acknowledgment naming exactly the receipt's sources, one sentence per source from
`prompts/ack_source_<task>_<source>.txt`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from alignment.receipts.cube import Cube, Family, cell_order
from alignment.receipts.runner import CubeRun, hybrid_key, source_names
from alignment.tasks.base import load_prompt


def receipt_lists(receipt: Family, order: Sequence[str]) -> list[list[str]]:
    """The family as lists of names, in canonical cell order (by size, then declared order).

    >>> receipt_lists(frozenset({frozenset("N"), frozenset("G")}), "GN")
    [['G'], ['N']]
    """
    return [[n for n in order if n in t] for t in cell_order(order) if t in receipt]


def disclaimer(task: str, receipt: Iterable[Iterable[str]], order: Sequence[str] | None = None,
               prompt: Callable[[str], str] = load_prompt) -> str:
    """Acknowledgment naming exactly the sources in the receipt (the union of its accounts).

    One sentence per source, from `prompts/ack_source_<task>_<source>.txt`, in `order` (default:
    first appearance in the receipt; `prompt` reads a task's prompt file), joined by newlines; `""` for an empty receipt (nothing
    changed, nothing to acknowledge). The receipt's and/or structure is not verbalised: `{G},{N}`
    and `{G,N}` both name G and N, since each source did take part in some minimal account.
    """
    names: list[str] = []
    for account in receipt:
        names += [n for n in account if n not in names]
    if order is not None:
        names = [n for n in order if n in names] + [n for n in names if n not in order]
    return "\n".join(prompt(f"ack_source_{task}_{n}") for n in names)


def example_row(row: dict[str, Any], cube: Cube, run_: CubeRun) -> dict[str, Any]:
    order, eid = source_names(row), str(row["id"])
    answers = {k: v for (e, k), v in run_.pool.items() if e == eid}
    return {
        "example_id": eid,
        "sources": list(order),
        "cells": json.dumps({hybrid_key(t, order): v for t, v in _ordered(cube, order)}),
        "old_verdict": int(cube.old),
        "new_verdict": int(cube.new),
        "changed": bool(cube.changed),
        "receipt": receipt_lists(cube.receipt, order),
        "executions": cube.executions,
        "answers": json.dumps(answers, sort_keys=True),
        "generated": list(run_.generated.get(eid, [])),
    }


def _ordered(cube: Cube, order: Sequence[str]) -> list[tuple[frozenset[str], Any]]:
    return [(t, int(cube.cells[t])) for t in cell_order(order) if t in cube.cells]


def response_row(row: dict[str, Any], sample: int, cube: Cube, d: bool) -> dict[str, Any]:
    order = source_names(row)
    return {
        "example_id": str(row["id"]),
        "sample": sample,
        "answer": int(cube.old),
        "cells": json.dumps({hybrid_key(t, order): v for t, v in _ordered(cube, order)}),
        "receipt": receipt_lists(cube.receipt, order),
        "executions": cube.executions,
        "d": d,
    }
