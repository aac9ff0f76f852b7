"""`alignment reasonbench build --out DIR [--seed S] [--scale X]`: write the benchmark as Parquet.

Writes `DIR/reasonbench.parquet` (one row per main case or control; read it with
`pandas.read_parquet(DIR)`) and `DIR/_manifest.json` (seed, scale, counts, code version), both
atomically. The same seed and scale give the same rows. Units are assigned to splits by a seeded
shuffle, so no clause or world is in two splits; controls are added for every locked example.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from alignment.errors import UserError
from alignment.reasonbench import logic, org
from alignment.reasonbench.cases import Case, UnitFiller, category, changed_sources, controls_for
from alignment.reasonbench.clauses import CLAUSES
from alignment.reasonbench.quotas import CELLS, Cell, expected_counts, unit_quotas
from alignment.reasonbench.render import HELD_OUT_TEMPLATES, MAIN_TEMPLATES, render
from alignment.store import atomic_path, write_json

FILE = "reasonbench.parquet"
MANIFEST = "_manifest.json"  # leading underscore: pandas/pyarrow skip it when reading DIR
_ATTEMPTS_PER_CASE = 400
N_WORLDS = 800


@dataclass
class BuildConfig:
    out: Path
    seed: int = 0
    scale: float = 1.0
    quiet: bool = False


def _unit_pools(seed: int) -> list[list[str]]:
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


def _make_unit(cell: Cell, name: str, seed: int) -> Any:
    if cell.stratum == "organizational":
        return org.OrgUnit(f"org-{name.lower()}", name, cell.kind)
    return logic.make_world(f"log-{name}", cell.kind, seed, int(name))


def _fill_cell(cell: Cell, quotas: list[dict[str, int]], units: list[Any], seed: int) -> list[Case]:
    """Fill each unit's quota; what a unit cannot find moves on to the next unit of the cell."""
    templates = HELD_OUT_TEMPLATES if cell.split == "shift_linguistic" else MAIN_TEMPLATES
    fillers = [UnitFiller(u, cell.split, templates, seed) for u in units]
    carry: dict[str, int] = {}
    for rnd in range(3):
        for i, filler in enumerate(fillers):
            want = dict(quotas[i]) if rnd == 0 else {}
            for k, v in carry.items():
                want[k] = want.get(k, 0) + v
            budget = _ATTEMPTS_PER_CASE * max(1, sum(want.values())) * (rnd + 1)
            carry = filler.fill(want, budget)
        if not any(carry.values()):
            return [c for f in fillers for c in f.cases]
    raise RuntimeError(f"{cell.split}/{cell.stratum}: could not fill quota {carry}")


def generate(
    seed: int, scale: float, progress: Callable[[str], None] | None = None
) -> tuple[list[Case], list[Case]]:
    """All main cases and controls of one build, deterministic in (seed, scale)."""
    main: list[Case] = []
    controls: list[Case] = []
    pools = _unit_pools(seed)
    for (cell, quotas), pool in zip(unit_quotas(scale), pools, strict=True):
        units = [_make_unit(cell, name, seed) for name in pool[: cell.units]]
        cases = _fill_cell(cell, quotas, units, seed)
        main.extend(cases)
        if cell.split == "locked":
            by_id = {u.unit_id: u for u in units}
            for case in cases:
                controls.extend(controls_for(case, by_id[case.unit_id], seed))
        if progress:
            progress(f"{cell.split}/{cell.stratum}: {len(cases)} cases from {cell.units} units")
    return main, controls


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


def counts(df: pd.DataFrame) -> dict[str, int]:
    main = df[df["control_type"].isna()]
    locked = main[main["split"] == "locked"]
    return {
        "main": len(main),
        "changed": int((main["old_verdict"] != main["new_verdict"]).sum()),
        "stable": int((main["old_verdict"] == main["new_verdict"]).sum()),
        "ambiguous": int(main["ambiguous"].sum()),
        "controls": int(df["control_type"].notna().sum()),
        "locked": len(locked),
        "locked_units": int(locked["unit_id"].nunique()),
    }


def code_version() -> str:
    h = hashlib.sha256()
    for p in sorted(Path(__file__).parent.glob("*.py")):
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def build(cfg: BuildConfig) -> Path:
    """Generate and write the benchmark; returns the Parquet path."""
    if not 0 < cfg.scale <= 1:
        raise UserError(f"--scale must be in (0, 1], got {cfg.scale}")
    say = (lambda msg: None) if cfg.quiet else (lambda msg: print(f"reasonbench: {msg}"))
    start = time.perf_counter()
    main, controls = generate(cfg.seed, cfg.scale, say)
    df = pd.DataFrame([to_row(c) for c in main + controls])
    got, want = counts(df), expected_counts(cfg.scale)
    if got != want:  # a generator bug, not a user error
        raise RuntimeError(f"counts {got} differ from the quotas {want}")
    out = Path(cfg.out)
    path = out / FILE
    with atomic_path(path) as tmp:
        df.to_parquet(tmp, index=False)
    manifest = {"seed": cfg.seed, "scale": cfg.scale, "counts": got, "rows": len(df),
                "code_version": code_version(), "file": FILE}  # fmt: skip
    write_json(out / MANIFEST, manifest)
    say(f"{len(df)} rows {got} in {time.perf_counter() - start:.1f}s -> {path}")
    return path
