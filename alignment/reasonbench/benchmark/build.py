"""`alignment reasonbench build --out DIR [--seed S] [--scale X]`: write the benchmark as Parquet.

Writes `DIR/reasonbench.parquet` (one row per main case or control; read it with
`pandas.read_parquet(DIR)`) and `DIR/_manifest.json` (seed, scale, counts, code version), both
atomically. The same seed and scale give the same rows; a re-run whose manifest matches (same
seed, scale and generator code) keeps the existing file.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from alignment.errors import UserError
from alignment.reasonbench.benchmark.generate import generate
from alignment.reasonbench.benchmark.quotas import expected_counts
from alignment.store import atomic_path, locked, make_folder, write_json

FILE = "reasonbench.parquet"
MANIFEST = "_manifest.json"  # leading underscore: pandas/pyarrow skip it when reading DIR


@dataclass
class BuildConfig:
    out: Path
    seed: int = 0
    scale: float = 1.0
    quiet: bool = False
    workers: int | None = None  # None: one per CPU (at most 8); the rows do not depend on it


def counts(df: pd.DataFrame) -> dict[str, int]:
    """The published headline counts, measured on a built table."""
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


def _finished(out: Path, key: dict) -> bool:
    try:
        manifest = json.loads((out / MANIFEST).read_text())
    except (OSError, ValueError):
        return False
    return (out / FILE).exists() and all(manifest.get(k) == v for k, v in key.items())


def build(cfg: BuildConfig) -> Path:
    """Generate and write the benchmark; returns the Parquet path. The folder is locked for the
    whole build, so a second `reasonbench build` on it fails at once instead of interleaving."""
    if not 0 < cfg.scale <= 1:
        raise UserError(f"--scale must be in (0, 1], got {cfg.scale}")
    want = expected_counts(cfg.scale)
    if want["locked"] == 0:  # no locked test split: nothing to audit controls on
        raise UserError(f"--scale {cfg.scale}: too small, the benchmark would have {want['main']} main "
                        "cases and no locked-test case (try 0.001 or more)")
    out = make_folder(Path(cfg.out), "benchmark folder")
    with locked(out, "benchmark folder"):  # `.lock`: pandas/pyarrow skip dot files when reading DIR
        return _build_locked(cfg, out, want)


def _build_locked(cfg: BuildConfig, out: Path, want: dict[str, int]) -> Path:
    say = (lambda msg: None) if cfg.quiet else (lambda msg: print(f"reasonbench: {msg}"))
    path = out / FILE
    key = {"seed": cfg.seed, "scale": cfg.scale, "code_version": code_version()}
    if _finished(out, key):
        say(f"{path} is already built for seed {cfg.seed}, scale {cfg.scale}; kept")
        return path
    start = time.perf_counter()
    df = pd.DataFrame(generate(cfg.seed, cfg.scale, cfg.workers, say))
    got = counts(df)
    if got != want:  # a generator bug, not a user error
        raise RuntimeError(f"counts {got} differ from the quotas {want}")
    with atomic_path(path) as tmp:
        df.to_parquet(tmp, index=False)
    write_json(out / MANIFEST, {**key, "counts": got, "rows": len(df), "file": FILE})
    say(f"{len(df)} rows in {time.perf_counter() - start:.1f}s -> {path}")
    say(", ".join(f"{k} {v}" for k, v in got.items()))
    return path
