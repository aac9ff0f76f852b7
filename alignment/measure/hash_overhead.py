"""What recording and checking the stage files' hashes costs a run, against what the run's stages took.

    python -m alignment.measure.hash_overhead RUN_DIR [RUN_DIR ...] [--record results/hash_overhead.json]

For every finished stage of each run (a folder with a manifest), times `integrity.record` (what
`RunDir.finish` does once per stage: size and xxh3-128 of every file it wrote) and
`integrity.damage` (the check before a finished stage is reused, with the in-process cache of
checked files cleared first, so every file is read again), and divides each sum by the stages'
own seconds from their manifests. The files were just written or just hashed, so they are read
from the page cache, as they are when a run finishes a stage; a cold disk is slower, and the
figure says nothing about one. `--record` writes the figures to a results file that
`alignment results render` turns into `results/hash_overhead.md`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from alignment.disk import integrity
from alignment.errors import UserError
from alignment.measure.bench import provenance
from alignment.store import write_text


def _timed(fn: Any, *args: Any) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def run_overhead(run: Path) -> dict[str, Any]:
    """Hash seconds (recording, checking), bytes hashed and stage seconds over a run's finished stages."""
    stages = sorted(p.parent for p in run.glob(f"*/{integrity.MANIFEST}"))
    if not stages:
        raise UserError(f"{run}: no finished stage (no */manifest.json)")
    out = {"run": run.name, "stages": len(stages), "files": 0, "bytes": 0, "stage_seconds": 0.0,
           "record_seconds": 0.0, "check_seconds": 0.0}
    for folder in stages:
        manifest = json.loads((folder / integrity.MANIFEST).read_text())
        out["stage_seconds"] += float(manifest.get("seconds") or 0.0)
        files = integrity.record(folder)  # warms the page cache, as a stage that just wrote its files has it
        out["record_seconds"] += _timed(integrity.record, folder)
        integrity.forget_checked()
        out["check_seconds"] += _timed(integrity.damage, folder, files)
        out["files"] += len(files)
        out["bytes"] += sum(f["size"] for f in files.values())
    out["overhead"] = (out["record_seconds"] + out["check_seconds"]) / out["stage_seconds"]
    return out


def page(data: dict[str, Any]) -> str:
    """results/hash_overhead.md from the recorded figures."""
    lines = ["# Stage-file hashing: its cost against the run", "",
             f"Written by `{data['command']}` at commit {data['commit']}; CPU: {data['cpu']}. Per run: every finished "
             "stage's files recorded (size and xxh3-128, once per stage when it finishes) and checked again (before "
             "reuse), timed over files in the page cache, against the stages' own seconds from their manifests. "
             "Target: under 2% of the run.", "",
             "| run | stages | files | MB | stage seconds | record s | check s | overhead |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in data["runs"]:
        lines.append(f"| {r['run']} | {r['stages']} | {r['files']} | {r['bytes'] / 1e6:.1f} | {r['stage_seconds']:.0f} "
                     f"| {r['record_seconds']:.3f} | {r['check_seconds']:.3f} | {100 * r['overhead']:.3f}% |")
    worst = max(r["overhead"] for r in data["runs"])
    return "\n".join([*lines, "", f"Largest overhead over {len(data['runs'])} run(s): **{100 * worst:.3f}%** of the stages' time.", ""])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m alignment.measure.hash_overhead", description=__doc__.split("\n")[0])
    p.add_argument("runs", nargs="+", help="run directories with finished stages")
    p.add_argument("--record", help="write the figures to this results JSON file")
    args = p.parse_args(argv)
    try:
        runs = [run_overhead(Path(r)) for r in args.runs]
    except UserError as e:
        print(f"hash_overhead: error: {e}", file=sys.stderr)
        return 2
    for r in runs:
        print(f"{r['run']}: {r['files']} files, {r['bytes'] / 1e6:.1f} MB, record {r['record_seconds']:.3f} s + check "
              f"{r['check_seconds']:.3f} s over {r['stage_seconds']:.0f} s of stages = {100 * r['overhead']:.3f}%")
    if args.record:
        command = "python -m alignment.measure.hash_overhead " + " ".join(args.runs)
        data = {"command": command, **provenance(), "runs": runs}
        write_text(Path(args.record), json.dumps(data, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
