"""`alignment reasonbench build --out DIR`: executing cases and filling per-unit quotas.

Every label is obtained by execution: the eight hybrids of (old, new) run through the stratum's
adjudicator, and the receipt comes from `alignment.receipts` on those executions. A unit's filler
proposes transitions (one to three changed sources), executes them, and keeps a candidate only
when its receipt category still has quota in that unit, so the totals are exact by construction.
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from dataclasses import dataclass, field
from itertools import permutations
from types import ModuleType
from typing import Any

from alignment.reasonbench.benchmark import logic, org
from alignment.receipts import execute_cube

SOURCES = ("G", "N", "A")
CUBE_KEYS = ("", "G", "N", "A", "GN", "GA", "NA", "GNA")
ORDERS = tuple("".join(p) for p in permutations(SOURCES))
STRATA: dict[str, ModuleType] = {"organizational": org, "logical": logic}
# How many sources a proposal changes, by the category it aims at (weights for 1, 2, 3). Part
# of the label prior: a single-source amendment is mostly a real change (r1), a stable case
# mostly amends several sources at once.
_AIM = {
    "stable": (1, 5, 4), "r1": (8, 2, 0), "r2": (0, 6, 4), "r3": (0, 0, 1), "amb": (0, 6, 4),
}  # fmt: skip
# The same prior enforced on what is kept: the chance of keeping a case of this category that
# changed 1, 2 or 3 sources (whatever the proposal aimed at).
_KEEP = {"stable": (0.05, 1.0, 1.0), "r1": (1.0, 0.4, 0.2)}
# Chance of keeping a real change whose amendments pull both ways (stable ones are kept).
_MIXED_CHANGE = 0.05
_CAP_ATTEMPTS = 25


def key_of(subset: frozenset[str] | set[str]) -> str:
    return "".join(s for s in SOURCES if s in subset)


def receipt_keys(family: frozenset[frozenset[str]]) -> list[str]:
    """Canonical receipt: accounts as keys ("G", "NA"), smaller first, then source order."""
    keys = [key_of(t) for t in family]
    return sorted(keys, key=lambda k: (len(k), [SOURCES.index(c) for c in k]))


def category(receipt: list[str]) -> str:
    if not receipt:
        return "stable"
    return "amb" if len(receipt) > 1 else f"r{len(receipt[0])}"


def hybrid(old: dict[str, Any], new: dict[str, Any], key: str) -> dict[str, Any]:
    return {s: (new if s in key else old)[s] for s in SOURCES}


def execute(
    stratum: str, context: dict[str, Any], old: dict[str, Any], new: dict[str, Any]
) -> tuple[dict[str, str], list[str]]:
    """All eight cells (keyed "", "G", ..., "GNA") and the exact receipt family."""
    adjudicate = STRATA[stratum].adjudicate

    def verdict_of(t: frozenset[str]) -> str:
        return adjudicate(context, hybrid(old, new, key_of(t)))

    cube = execute_cube(SOURCES, verdict_of, full=True)
    by_key = {key_of(t): v for t, v in cube.cells.items()}
    return {k: by_key[k] for k in CUBE_KEYS}, receipt_keys(cube.receipt)


def changed_sources(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    return [s for s in SOURCES if canonical(old[s]) != canonical(new[s])]


def canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def case_depth(stratum: str, context: dict[str, Any], old: dict, new: dict) -> int:
    """The proof depth the case's question needs (see each stratum's `depth`)."""
    return int(STRATA[stratum].depth(context, old))


@dataclass
class Case:
    id: str
    unit_id: str
    stratum: str
    split: str
    context: dict[str, Any]
    old: dict[str, Any]
    new: dict[str, Any]
    cells: dict[str, str]
    receipt: list[str]
    template: str
    order: str = "GNA"
    depth: int = 0
    operator: str = ""
    control_of: str | None = None
    control_type: str | None = None


@dataclass
class UnitFiller:
    """Draws cases for one unit until its quota is met; its RNG state survives extra rounds."""

    unit: Any
    split: str
    templates: tuple[str, ...]
    seed: int
    cases: list[Case] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.rng = random.Random(f"cases:{self.seed}:{self.unit.unit_id}")

    def fill(self, quota: dict[str, int], max_attempts: int) -> dict[str, int]:
        """Add cases for `quota` (`category:verdict` labels); return what is still missing.

        For the first `_CAP_ATTEMPTS` proposals per wanted case, one receipt structure (say
        ["N", "A"]) may fill at most 40% of a category's quota: the easiest structure to sample
        would otherwise crowd out the others and become a shortcut for receipt predictors.
        Labels with one possible structure (`r3` is ["GNA"]; a change to `refer` is ["A"]) are
        not capped, and refer cases are not counted against the r1 cap.
        """
        need = {k: v for k, v in quota.items() if v > 0}
        per_cat: Counter[str] = Counter()
        for k, v in need.items():
            per_cat[k.split(":")[0]] += v
        caps = {k: max(1, math.ceil(0.4 * v)) for k, v in per_cat.items()}
        capped_phase = min(max_attempts // 2, _CAP_ATTEMPTS * sum(need.values()))
        used: Counter[str] = Counter()
        for attempt in range(max_attempts):
            if not need:
                break
            aim = self.rng.choices(list(need), weights=list(need.values()))[0]
            cat, verdict = aim.split(":")
            # A change to deny comes from the merits (grounds, norms), never from authority:
            # losing authority refers, so a denial on lost authority would be a partial loss
            # that keeps the mandate, a case the prior leaves out.
            pool = ("G", "N") if verdict == "deny" and cat != "stable" else SOURCES
            k = min(len(pool), self.rng.choices((1, 2, 3), weights=_AIM[cat])[0])
            sources = "".join(sorted(self.rng.sample(pool, k), key=SOURCES.index))
            capped = {s for s, n in used.items() if n >= caps[s.split(":")[0]]}
            found = self._try(sources, aim, need, capped if attempt < capped_phase else set())
            if found is not None:
                structure, label = found
                if not label.endswith(":refer"):  # kept off the r1 cap (see above)
                    used[structure] += 1
                need[label] -= 1
                if not need[label]:
                    del need[label]
        return need

    def _try(
        self, sources: str, aim: str, need: dict[str, int], capped: set[str]
    ) -> tuple[str, str] | None:
        """Propose, execute and maybe keep one case; returns (structure, label) when kept."""
        unit, stratum = self.unit, self.unit.stratum
        context, old, new = unit.propose(self.rng, sources, aim)
        pair = sorted((canonical(old), canonical(new)))
        key = canonical(context) + pair[0] + pair[1]  # a transition and its inverse count once
        if pair[0] == pair[1] or key in self.seen:
            return None
        cells, receipt = execute(stratum, context, old, new)
        cat = category(receipt)
        label = f"{cat}:{cells['GNA']}"
        structure = f"{cat}:{'|'.join(receipt)}"
        # labels with one possible structure: r3, a change to refer, a denial on the merits
        # with several accounts (G|N, see `fill`)
        free = cat in ("stable", "r3") or label in ("amb:deny",) or cells["GNA"] == "refer"
        lean = getattr(unit, "lean", None)
        way = lean(old, new) if lean else None  # organisational edits have no direction
        coherent = way is None or way == (cells["GNA"] == "approve") or (
            way == "mixed" and (cat == "stable" or self.rng.random() < _MIXED_CHANGE)
        )
        if label not in need or not coherent or (not free and structure in capped):
            return None
        keep = _KEEP.get(cat)
        if keep and self.rng.random() >= keep[len(changed_sources(old, new)) - 1]:
            return None
        depth = case_depth(stratum, context, old, new)
        if not unit.accept(context, old, new, depth):
            return None
        self.seen.add(key)
        self.cases.append(
            Case(
                id=f"{unit.unit_id}-{len(self.cases):03d}", unit_id=unit.unit_id,
                stratum=stratum, split=self.split, context=context, old=old, new=new,
                cells=cells, receipt=receipt, template=self.rng.choice(self.templates),
                depth=depth, operator=STRATA[stratum].operators(context, [old, new]),
            )
        )  # fmt: skip
        return structure, label


def _control_base(case: Case) -> dict[str, Any]:
    return dict(
        unit_id=case.unit_id, stratum=case.stratum, split=case.split, context=case.context,
        template=case.template, depth=case.depth, operator=case.operator, control_of=case.id,
    )  # fmt: skip


def permutation_control(case: Case, rng: random.Random) -> Case:
    """The same transition presented in another source order (drawn from `rng`), re-executed.

    Used for the locked controls and, by `alignment.reasonbench.experiments.targets`, for
    permutation-augmented training.
    """
    order = rng.choice([o for o in ORDERS if o != case.order])
    cells, receipt = execute(case.stratum, case.context, case.old, case.new)
    return Case(id=f"{case.id}-perm", old=case.old, new=case.new, cells=cells, receipt=receipt,
                order=order, control_type="permutation", **_control_base(case))  # fmt: skip


def controls_for(case: Case, unit: Any, seed: int) -> list[Case]:
    """Inverse, permutation and distractor controls of one locked example, all re-executed."""
    rng = random.Random(f"controls:{seed}:{case.id}")
    base = _control_base(case)
    cells, receipt = execute(case.stratum, case.context, case.new, case.old)
    inverse = Case(id=f"{case.id}-inv", old=case.new, new=case.old, cells=cells,
                   receipt=receipt, control_type="inverse", **base)  # fmt: skip
    perm = permutation_control(case, rng)  # the first draw from rng, as before
    for _ in range(50):
        old, new = unit.distractor(rng, case.context, case.old, case.new)
        cells, receipt = execute(case.stratum, case.context, old, new)
        if cells == case.cells and old != case.old:
            dist = Case(id=f"{case.id}-dist", old=old, new=new, cells=cells, receipt=receipt,
                        control_type="distractor", **base)  # fmt: skip
            return [inverse, perm, dist]
    raise RuntimeError(f"{case.id}: no distractor keeps the cube")
