"""A hint run's figures as a results file: hint-following and verbalisation per hint type, answer
validity, and what each stage took.

    python -m alignment.measure.hint_run RUN_DIR [--wall SECONDS] --record results/hints_embedded.json

RUN_DIR is a finished run of a hint task (e.g. `alignment run configs/hints_embedded.yaml`).
The figures are the report's (`alignment.analysis.hint_figures`, defined in docs/hints.md), with
95% cluster-bootstrap intervals over questions. `--wall` adds the wall time the caller measured
for the whole command (model loads included, which the stages' own seconds leave out).
`alignment results render` turns the file into a page.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from alignment.analysis.hint_figures import TABLE_HEAD, figures, pairs, table_row
from alignment.errors import UserError
from alignment.measure.bench import provenance
from alignment.store import RunDir, write_text


def hint_record(run: Path) -> dict[str, Any]:
    """Figures, validity and stage seconds of one finished hint run."""
    rd = RunDir(run)
    build, gen, ack = rd.read("build"), rd.read("generate"), rd.read("ack")
    if "hint_types" not in build.columns:
        raise UserError(f"{run}: build/data.parquet has no hint_types: not a hint task's run")
    fig = figures(pairs(build, gen, ack)).replace({np.nan: None})
    seconds = {m.parent.name: json.loads(m.read_text()).get("seconds") for m in sorted(run.glob("*/manifest.json"))}
    config = (run / "config.yaml").read_text() if (run / "config.yaml").is_file() else ""
    return {"run": run.name, "questions": int(build["unit_id"].nunique()), "examples": len(build), "responses": len(gen),
            "valid": float(gen["valid"].mean()), "correct_orig": float(gen.loc[gen["variant"] == "orig", "correct"].mean()),
            "correct_cf": float(gen.loc[gen["variant"] == "cf", "correct"].mean()),
            "figures": fig.to_dict("records"), "stage_seconds": seconds, "config": config}


def page(data: dict[str, Any]) -> str:
    """results/hints_embedded.md from the recorded figures."""
    rows = [table_row({k: (np.nan if v is None else v) for k, v in r.items()}) for r in data["figures"]]
    total = sum(v or 0 for v in data["stage_seconds"].values())
    wall = f"; the whole command took {data['wall']:.0f} s wall" if data.get("wall") else ""
    stages = ", ".join(f"{k} {v:.0f} s" for k, v in data["stage_seconds"].items() if v is not None)
    return "\n".join([
        "# Hint tasks on a real model: SmolLM2-135M-Instruct", "",
        f"Written by `{data['command']}` at commit {data['commit']}; CPU: {data['cpu']}. The run: "
        f"{data['questions']} questions, {data['examples']} examples (question × hint type), {data['responses']} "
        f"responses; {100 * data['valid']:.1f}% end in a valid option; accuracy {100 * data['correct_orig']:.1f}% with the "
        f"hint, {100 * data['correct_cf']:.1f}% without. Questions from MMLU and ARC-Challenge (public data); responses "
        "from the shipped SmolLM2 weights, no adapter; verbalisation judged by the project's keyword lexicon for "
        "hints (no human labels, so the judge's error is not in the intervals). Figures as defined in docs/hints.md, "
        "95% cluster-bootstrap intervals over questions.", "", *TABLE_HEAD, *rows, "",
        f"Stage seconds (from the manifests): {stages}; {total:.0f} s in all{wall}.", ""])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m alignment.measure.hint_run", description=__doc__.split("\n")[0])
    p.add_argument("run", help="a finished hint run directory")
    p.add_argument("--wall", type=float, help="the whole command's wall seconds, measured by the caller")
    p.add_argument("--record", help="write the figures to this results JSON file")
    args = p.parse_args(argv)
    try:
        data = hint_record(Path(args.run))
    except UserError as e:
        print(f"hint_run: error: {e}", file=sys.stderr)
        return 2
    data |= {"command": f"python -m alignment.measure.hint_run {args.run}" + (f" --wall {args.wall:.0f}" if args.wall else ""),
             **provenance(), "wall": args.wall}
    print(page(data))
    if args.record:
        write_text(Path(args.record), json.dumps(data, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
