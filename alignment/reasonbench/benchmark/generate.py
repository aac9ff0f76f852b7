"""`alignment reasonbench build --out DIR [--seed S] [--scale X]`: generating all rows.

Units are assigned to splits by a seeded shuffle (a clause or a world is in exactly one split).
Work is cut into fixed jobs of at most `CHUNK` units of one cell; a job fills its units' quotas
(passing a unit's shortfall on to the next unit of the same job), adds the controls of locked
examples and renders the rows. Jobs depend only on (seed, scale), never on the worker count, so
a parallel build gives the same rows as a serial one.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from alignment.reasonbench.benchmark import logic, org
from alignment.reasonbench.benchmark.cases import (
    Case,
    UnitFiller,
    category,
    changed_sources,
    controls_for,
)
from alignment.reasonbench.benchmark.clauses import CLAUSES
from alignment.reasonbench.benchmark.quotas import CELLS, Cell, unit_quotas
from alignment.reasonbench.benchmark.render import HELD_OUT_TEMPLATES, MAIN_TEMPLATES, render

CHUNK = 32
N_WORLDS = 800
_ATTEMPTS_PER_CASE = 400
Job = tuple[Cell, int, list[tuple[str, dict[str, int]]]]


def unit_pools(seed: int) -> list[list[str]]:
    """The units of each full-size cell, in a seeded order; smaller builds take a prefix."""
    rng = random.Random(f"units:{seed}")
    clauses = [c.id for c in CLAUSES]
    worlds = [f"{i:03d}" for i in range(N_WORLDS)]
    rng.shuffle(clauses)
    rng.shuffle(worlds)
    pools = []
    for cell in CELLS:
        src = clauses if cell.stratum == "organizational" else worlds
        pools.append(src[: cell.units])
        del src[: cell.units]
    return pools


def make_unit(stratum: str, kind: str, name: str, seed: int) -> Any:
    if stratum == "organizational":
        return org.OrgUnit(f"org-{name.lower()}", name, kind)
    return logic.make_world(f"log-{name}", kind, seed, int(name))


def jobs(seed: int, scale: float) -> list[Job]:
    out: list[Job] = []
    for (cell, quotas), pool in zip(unit_quotas(scale), unit_pools(seed), strict=True):
        items = list(zip(pool[: cell.units], quotas, strict=True))
        out.extend((cell, seed, items[i : i + CHUNK]) for i in range(0, len(items), CHUNK))
    return out


def _fill(cell: Cell, seed: int, items: list[tuple[str, dict[str, int]]]) -> list[Any]:
    """Fill each unit's quota; what a unit cannot find moves on to the next unit of the job."""
    templates = HELD_OUT_TEMPLATES if cell.split == "shift_linguistic" else MAIN_TEMPLATES
    units = [make_unit(cell.stratum, cell.kind, name, seed) for name, _ in items]
    fillers = [UnitFiller(u, cell.split, templates, seed) for u in units]
    carry: dict[str, int] = {}
    for rnd in range(3):
        for filler, (_, quota) in zip(fillers, items, strict=True):
            want = dict(quota) if rnd == 0 else {}
            for k, v in carry.items():
                want[k] = want.get(k, 0) + v
            budget = _ATTEMPTS_PER_CASE * max(1, sum(want.values())) * (rnd + 1)
            carry = filler.fill(want, budget)
        if not any(carry.values()):
            return fillers
    raise RuntimeError(f"{cell.split}/{cell.stratum}: could not fill quota {carry}")


def run_job(job: Job) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Main rows and control rows of one job."""
    cell, seed, items = job
    fillers = _fill(cell, seed, items)
    main = [c for f in fillers for c in f.cases]
    controls = []
    if cell.split == "locked":
        for f in fillers:
            for case in f.cases:
                controls.extend(controls_for(case, f.unit, seed))
    return [to_row(c) for c in main], [to_row(c) for c in controls]


def generate(
    seed: int, scale: float, workers: int | None = None, progress: Callable[[str], None] | None = None
) -> list[dict[str, Any]]:
    """All rows of one build (main cases, then controls), deterministic in (seed, scale)."""
    todo = jobs(seed, scale)
    workers = workers or min(os.cpu_count() or 1, 8)
    if workers > 1 and len(todo) > 1:
        # spawn: the CLI process may hold threads (torch) that fork would copy half-alive.
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(workers, mp_context=ctx) as pool:
            results = list(pool.map(run_job, todo))
    else:
        results = [run_job(j) for j in todo]
    if progress:
        progress(f"{sum(len(m) for m, _ in results)} cases from {len(todo)} jobs")
    return [r for m, _ in results for r in m] + [r for _, c in results for r in c]


def to_row(case: Case) -> dict[str, Any]:
    changed = changed_sources(case.old, case.new)
    cat = category(case.receipt)
    card = "single" if len(changed) == 1 else "multi"
    role = {("train", "single"): "train", ("locked", "multi"): "test"}.get((case.split, card))
    return {
        "id": case.id, "unit_id": case.unit_id, "stratum": case.stratum, "split": case.split,
        "context": json.dumps(case.context, sort_keys=True),
        "old_state": json.dumps(case.old, sort_keys=True),
        "new_state": json.dumps(case.new, sort_keys=True),
        "changed": changed, "n_changed": len(changed),
        "cube": json.dumps(case.cells), "old_verdict": case.cells[""],
        "new_verdict": case.cells["GNA"], "receipt": case.receipt,
        "receipt_category": cat, "min_receipt_size": min(map(len, case.receipt), default=0),
        "ambiguous": cat == "amb",
        "prompt": render(case.stratum, case.context, case.old, case.new, case.template,
                         case.order),
        "template": case.template, "source_order": case.order, "depth": case.depth,
        "operator": case.operator, "cardinality": card, "cardinality_split": role,
        "control_of": case.control_of, "control_type": case.control_type,
    }  # fmt: skip
