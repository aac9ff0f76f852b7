"""`alignment reasonbench build --out DIR [--scale X]`: the published sizes and per-unit quotas.

Cases fall into five receipt categories: `stable` (endpoints agree, empty receipt), `r1`, `r2`,
`r3` (one minimal account of that size) and `amb` (two or more minimal accounts). The published
benchmark fixes the totals; the split of changed cases into r1/r2/r3 is this project's choice.

Each category is further split by the revised verdict (`VERDICT_MIX`, the benchmark's label
prior), giving quota labels such as `stable:approve` or `r1:refer`. Every unit (a clause or a
world) belongs to exactly one *cell* (split x stratum). The label quota of every unit is cut from
one well-mixed sequence of labels, so each cell and unit gets the same mix up to rounding and
all totals are exact, at any `--scale`.
"""

from __future__ import annotations

from dataclasses import dataclass

PUBLISHED = {
    "main": 19_520,
    "changed": 10_888,
    "stable": 8_632,
    "ambiguous": 3_470,
    "controls": 7_200,
    "locked": 2_400,
    "locked_units": 102,
}
CATEGORIES: dict[str, int] = {"stable": 8_632, "r1": 4_418, "r2": 2_200, "r3": 800, "amb": 3_470}
VERDICTS = ("approve", "deny", "refer")
# The label prior: the revised verdict's mix within each receipt category (approve, deny, refer),
# the same in every cell, so no split or shift differs from another in its label mix. A change
# *to* refer always has the receipt ["A"] (referral depends on authority alone), hence r1 only.
VERDICT_MIX: dict[str, tuple[float, float, float]] = {
    "stable": (0.1, 0.85, 0.05), "r1": (0.45, 0.2, 0.35), "r2": (0.95, 0.05, 0.0),
    "r3": (1.0, 0.0, 0.0), "amb": (0.15, 0.85, 0.0),
}  # fmt: skip
CONTROL_TYPES = ("inverse", "permutation", "distractor")
SPLITS = ("train", "calibration", "locked", "shift_operator", "shift_linguistic", "shift_depth")


@dataclass(frozen=True)
class Cell:
    split: str
    stratum: str
    kind: str  # world kind for the logical stratum: main | operator | depth
    units: int
    cases: int


CELLS: tuple[Cell, ...] = (
    Cell("train", "organizational", "main", 33, 1_320),
    Cell("calibration", "organizational", "main", 6, 240),
    Cell("locked", "organizational", "main", 6, 240),
    Cell("train", "logical", "main", 512, 11_240),
    Cell("calibration", "logical", "main", 96, 2_160),
    Cell("locked", "logical", "main", 96, 2_160),
    Cell("shift_operator", "logical", "operator", 32, 720),
    Cell("shift_linguistic", "logical", "main", 32, 720),
    Cell("shift_depth", "logical", "depth", 32, 720),
)
assert sum(c.cases for c in CELLS) == PUBLISHED["main"] == sum(CATEGORIES.values())
assert sum(c.cases for c in CELLS if c.split == "locked") == PUBLISHED["locked"]
assert sum(c.units for c in CELLS if c.split == "locked") == PUBLISHED["locked_units"]


def apportion(weights: list[float], total: int) -> list[int]:
    """Largest-remainder rounding of `weights` to integers summing to `total` (ties: first).

    >>> apportion([1, 1, 1], 4)
    [2, 1, 1]
    """
    s = sum(weights)
    raw = [w * total / s if s else 0.0 for w in weights]
    out = [int(r) for r in raw]
    order = sorted(range(len(raw)), key=lambda i: (-(raw[i] - out[i]), i))
    for i in order[: total - sum(out)]:
        out[i] += 1
    return out


def category_sequence(counts: dict[str, int]) -> list[str]:
    """All categories interleaved evenly: item j of a category sits at (j + 1/2) / count."""
    keyed = [
        ((j + 0.5) / n, i, name)
        for i, (name, n) in enumerate(counts.items())
        for j in range(n)
    ]
    return [name for _, _, name in sorted(keyed)]


def scaled_cells(scale: float) -> list[Cell]:
    total = round(PUBLISHED["main"] * scale)
    cases = apportion([c.cases for c in CELLS], total)
    return [
        Cell(c.split, c.stratum, c.kind, min(n, max(1, round(c.units * scale))), n)
        for c, n in zip(CELLS, cases, strict=True)
    ]


def labels(total: int) -> dict[str, int]:
    """Counts of each `category:verdict` label in a build of `total` main cases."""
    cats = dict(zip(CATEGORIES, apportion(list(CATEGORIES.values()), total), strict=True))
    out = {}
    for cat, n in cats.items():
        for v, k in zip(VERDICTS, apportion(list(VERDICT_MIX[cat]), n), strict=True):
            if k:
                out[f"{cat}:{v}"] = k
    return out


def unit_quotas(scale: float) -> list[tuple[Cell, list[dict[str, int]]]]:
    """Per cell, the `category:verdict` quota of each of its units (exact at every scale)."""
    cells = scaled_cells(scale)
    seq = category_sequence(labels(sum(c.cases for c in cells)))
    out, pos = [], 0
    for cell in cells:
        quotas = []
        for n in apportion([1.0] * cell.units, cell.cases):
            q: dict[str, int] = {}
            for name in seq[pos : pos + n]:
                q[name] = q.get(name, 0) + 1
            pos += n
            quotas.append(q)
        out.append((cell, quotas))
    return out


def expected_counts(scale: float) -> dict[str, int]:
    """The counts a build at `scale` must have (the published ones at scale 1)."""
    cells = unit_quotas(scale)
    cats = dict.fromkeys(CATEGORIES, 0)
    for _, quotas in cells:
        for q in quotas:
            for k, v in q.items():
                cats[k.split(":")[0]] += v
    main = sum(cats.values())
    locked = sum(c.cases for c, _ in cells if c.split == "locked")
    return {
        "main": main,
        "changed": main - cats["stable"],
        "stable": cats["stable"],
        "ambiguous": cats["amb"],
        "controls": len(CONTROL_TYPES) * locked,
        "locked": locked,
        "locked_units": sum(c.units for c, _ in cells if c.split == "locked"),
    }


assert expected_counts(1.0) == PUBLISHED
