"""Certification by execution: settle each predicted receipt or cube through the adjudicator.

A prediction is a claim; its certificate comes from executing the case's hybrids (old and new
states from the benchmark row, the stratum's `adjudicate`, `cases.hybrid`) through
`alignment.receipts.certify` / `certify_cube`, never from the stored gold columns or the
prediction's own cells. What is certified, per target:

- `direct_verdict`: both endpoints (2 executions);
- `direct_receipt`, `rationale_receipt`: the receipt family (`certify`: 2 executions when the
  endpoints agree, up to 8);
- `cube`: all eight cells (`certify_cube`, 8 executions), and separately the family its cells
  imply (a coherent but wrong cube can still imply the right family).

`executions` is what one certificate costs an auditor starting from nothing. The adjudicator is
deterministic, so executed cells are cached per case across the predictions of every seed and
target; the cost reported is still the certificate's own count. An unparseable prediction has
nothing to certify: it is uncertified at no cost.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from alignment.reasonbench.benchmark.cases import CUBE_KEYS, SOURCES, STRATA, hybrid, key_of
from alignment.reasonbench.experiments.targets import Parsed
from alignment.receipts import certify, certify_cube


class Executor:
    """Executes hybrids of benchmark rows through their stratum's adjudicator, with a cache."""

    def __init__(self) -> None:
        self.cache: dict[tuple[str, str], str] = {}
        self.adjudicator_calls = 0

    def verdict_of(self, row: dict[str, Any]) -> Callable[[frozenset[str]], str]:
        context, old, new = (json.loads(row[c]) for c in ("context", "old_state", "new_state"))
        adjudicate = STRATA[row["stratum"]].adjudicate

        def run(t: frozenset[str]) -> str:
            key = (row["id"], key_of(t))
            if key not in self.cache:
                self.adjudicator_calls += 1
                self.cache[key] = adjudicate(context, hybrid(old, new, key_of(t)))
            return self.cache[key]

        return run


def _counting(fn: Callable[[frozenset[str]], str]) -> tuple[Callable[[frozenset[str]], str], set]:
    seen: set[frozenset[str]] = set()

    def wrapped(t: frozenset[str]) -> str:
        seen.add(t)
        return fn(t)

    return wrapped, seen


def certificate(row: dict[str, Any], target: str, parsed: Parsed, ex: Executor) -> dict[str, Any]:
    """`certified` (the claim holds under execution), `cells_certified` (cube only, else None),
    `executions` (distinct hybrids executed for this certificate)."""
    if not parsed.ok:
        return {"certified": False, "cells_certified": False if target == "cube" else None, "executions": 0}
    verdict_of, seen = _counting(ex.verdict_of(row))
    cells_ok = None
    if target == "direct_verdict":
        ok = verdict_of(frozenset()) == parsed.old and verdict_of(frozenset(SOURCES)) == parsed.new
    else:
        family = [set(k) for k in parsed.receipt or []]
        ok = certify(family, SOURCES, verdict_of)
        if target == "cube":
            cells = {frozenset(k): parsed.cells[k] for k in CUBE_KEYS}  # type: ignore[index]
            cells_ok = certify_cube(cells, SOURCES, verdict_of)
    return {"certified": bool(ok), "cells_certified": cells_ok, "executions": len(seen)}
