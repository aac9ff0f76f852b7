"""The report of `alignment.measure.cluster.projection`: measured per-shard times of a finished run dir
(`--run DIR`) and the markdown with every input's provenance.

Per-shard times are read from file times: a stage writes `shards/key.txt` before it loads its
model, and each `part-NNNNN.parquet` when its shard is committed, so the first gap is model load
plus one shard and the later gaps are one shard each. The stage's manifest `seconds` less the
span from key.txt to the last shard is the work outside the shard loop (reading inputs, the final
concatenation and write).
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from alignment.errors import UserError

SCENARIOS = {94.0: "the project's decoder (issue 41, measured)",
             749.0: "transformers static cache + compile (issue 41, measured)",
             4000.0: "weight-read floor (issue 41, computed from bandwidth; a lower bound on time at batch 16)"}


def shard_gaps(start: float, ends: list[float]) -> dict[str, float | None]:
    """Seconds of the first shard (model load included), the median later shard, and their
    difference (the load, estimated).

    >>> shard_gaps(0.0, [17.0, 31.0, 46.0, 60.0])  # gaps 17, 14, 15, 14
    {'first_s': 17.0, 'median_later_s': 14.0, 'load_est_s': 3.0}
    >>> shard_gaps(0.0, [5.0])
    {'first_s': 5.0, 'median_later_s': None, 'load_est_s': None}
    """
    times = [start, *sorted(ends)]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    later = statistics.median(gaps[1:]) if len(gaps) > 1 else None
    return {"first_s": gaps[0], "median_later_s": later, "load_est_s": None if later is None else gaps[0] - later}


def shard_timings(run: Path) -> list[dict[str, Any]]:
    """One row per shard folder of a finished run dir (read only)."""
    if not run.is_dir():
        raise UserError(f"--run: {run} is not a run dir")
    rows = []
    for manifest in sorted(run.glob("*/manifest.json")):
        try:
            seconds = float(json.loads(manifest.read_text(encoding="utf-8"))["seconds"])
        except (ValueError, KeyError, TypeError):
            raise UserError(f"{manifest}: not a stage manifest with a 'seconds' field") from None
        for key in sorted((manifest.parent / "shards").rglob("key.txt")):
            parts = list(key.parent.glob("part-*.parquet"))
            if not parts:
                continue
            start, ends = key.stat().st_mtime, [p.stat().st_mtime for p in parts]
            top = key.parent == manifest.parent / "shards"
            rows.append({"stage": manifest.parent.name, "shards_dir": str(key.parent.relative_to(run)),
                         "shards": len(parts), **shard_gaps(start, ends),
                         "stage_seconds": seconds if top else None,
                         "outside_shards_s": seconds - (max(ends) - start) if top else None})
    return rows


def _h(x: float | None) -> str:
    return "does not fit" if x is None else f"{x:,.1f}"


def _s(x: float | None) -> str:
    return "-" if x is None else f"{x:,.2f}"


def _scenario(tok_s: float) -> str:
    return f"{tok_s:,.0f}: " + SCENARIOS.get(tok_s, "from --decode-tok-s")


def ack_shard_text() -> str:
    """How `ack` shards the paper judge's work, from the stage's own `shard_size`."""
    from alignment.judge.base import paper_config
    from alignment.stages.ack import SHARD_RESPONSES, shard_size

    j = paper_config()
    return (f"shards of {shard_size(j.batch_size)} responses (`shard_size(judge.batch_size={j.batch_size})`, "
            f"`SHARD_RESPONSES` = {SHARD_RESPONSES}), one {j.model} replica on {j.tensor_parallel_size} GPUs per worker")


def hours_tables(result: dict[str, Any], gpus: list[int], detail_tok_s: float) -> list[str]:
    head = "| Llama-3.1-8B decode tokens/s at batch 16 | " + " | ".join(f"{k} GPU{'s' * (k > 1)}" for k in gpus) + " |"
    out = []
    for key, title in (("hours", f"As the code runs now (`ack` sharded since adee9c9: {ack_shard_text()})"),
                       ("hours_without_ack", "`generate` and `score` only (`ack` left out)")):
        out += [f"{title}:", "", head, "|---" * (len(gpus) + 1) + "|"]
        out += [f"| {_scenario(r['decode_tok_s'])} | " + " | ".join(_h(r[key][k]) for k in gpus) + " |"
                for r in result["scenarios"]]
        out.append("")
    row = next((r for r in result["scenarios"] if r["decode_tok_s"] == detail_tok_s), result["scenarios"][0])
    old = ", ".join(f"{h:,.1f} h on {k} GPU{'s' * (k > 1)}" for k in gpus if (h := row["hours_one_judge"][k]) is not None)
    out += [f"For contrast, the code before adee9c9 ran `ack` as one call on one judge replica in the driver: "
            f"at {row['decode_tok_s']:,.0f} tokens/s the same model gives {old}.", ""]
    return out


def detail_table(result: dict[str, Any], gpus: list[int]) -> list[str]:
    out = ["| config | stage | shards | s per shard | load s | GPUs per replica | "
           + " | ".join(f"h on {k}" for k in gpus) + " |", "|---" * (6 + len(gpus)) + "|"]
    for d in result["detail"]:
        out.append(f"| {d['config']} | {d['name']} | {d['shards']:,} | {_s(d['per_shard_s'])} | {d['load_s']:.0f} "
                   f"| {d['gpus_per_replica']} | " + " | ".join(_h(d['hours'][k]) for k in gpus) + " |")
    return out


def sizes_table(grids: list[Any], response_tokens: float) -> list[str]:
    out = ["| config | examples (per split) | prompts | responses | generated tokens (assumed mean) "
           "| scored sequences per RM | judge calls | prompt chars (mean) |", "|---" * 8 + "|"]
    tot = [0, 0, 0, 0]
    for g in grids:
        s = g.summary()
        row = [s["prompts"], s["responses"], s["scored_per_rm"], s["judge_calls"]]
        tot = [a + b for a, b in zip(tot, row, strict=True)]
        split = ", ".join(f"{k} {v:,}" for k, v in g.splits.items())
        out.append(f"| {g.name} | {g.examples:,} ({split}) | {row[0]:,} | {row[1]:,} | {row[1] * response_tokens:,.0f} "
                   f"| {row[2]:,} | {row[3]:,} | {g.prompt_chars:,.0f} |")
    out.append(f"| **grid** | | {tot[0]:,} | {tot[1]:,} | {tot[1] * response_tokens:,.0f} | {tot[2]:,} | {tot[3]:,} | |")
    return out


def inputs_table(inp: Any) -> list[str]:
    from alignment.judge.base import paper_config

    j = paper_config()
    rows = [
        ("decode tokens/s (scenarios)", ", ".join(f"{x:g}" for x in inp.decode_tok_s),
         "measured on an H200 by an earlier session (issue 41), not by this projection: Llama-3.1-8B shape, "
         "bf16, 16 samples x 128 tokens of one ~1,550-token prompt; 4,000 is that session's computed floor"),
        ("3B policy and 70B judge decode", "scaled from the above by parameters per GPU",
         "assumption: decoding is bound by reading the weights (parameter counts from the model cards)"),
        ("scoring tokens", "counted: each prompt once per variant, then every scored response"
         if not inp.score_speedup else f"naive tokens / {inp.score_speedup:g}",
         "the shared-prefix scorer's structure; issue 41 measured a 7.7x shared-prefix speedup at its bench's "
         "shape (measured on an H200 by an earlier session, not by this projection); `--score-speedup 7.7` "
         "applies that factor instead"),
        ("peak bf16 TFLOP/s", f"{inp.peak_tflops:g}", "the prefill rate issue 41's floor used"),
        ("prefill share of peak (MFU)", f"{inp.mfu:g}", "assumption (scoring and the judge reading its input)"),
        ("mean response tokens", f"{inp.response_tokens:g}", "assumption (max_new_tokens is 2048 in the paper configs)"),
        ("characters per token", f"{inp.chars_per_token:g}", "assumption (turns counted prompt characters into tokens)"),
        ("judge", f"{j.model}, TP={j.tensor_parallel_size}, {inp.judge_out_tokens:g} tokens per call",
         "`alignment.judge.paper_config()`; the paper configs leave `judge` at its keyword default; "
         f"tokens per call from --judge-out-tokens (judge.max_new_tokens is {j.max_new_tokens}: an upper bound)"),
        ("`ack` shards", ack_shard_text(), "`alignment.stages.ack.shard_size` (the code); one judge per worker with "
         f"`executor.stages.ack.num_gpus: {j.tensor_parallel_size}` (docs/cluster.md), so k GPUs run "
         f"k // {j.tensor_parallel_size} judges"),
        ("reward models", ", ".join(inp.reward_models),
         "assumption from issue 39 (\"two Skywork reward models\"); the paper configs leave `reward` at its default"),
        ("model load", f"{inp.load_fixed_s:g} s + bf16 weights at {inp.load_gb_s:g} GB/s per GPU", "assumption"),
        ("AQuA-RAT rows without a local file", ", ".join(f"{k} {v:,}" for k, v in inp.aqua_rows.items()),
         "the deepmind/aqua_rat dataset card (dataset_info, config raw: train num_examples 97467); not counted here"),
    ]
    return ["| input | value | source |", "|---|---|---|"] + [f"| {a} | {b} | {c} |" for a, b, c in rows]


def run_label(run: Path) -> str:
    """The run dir and the name its config.yaml gives it (when it has one)."""
    import yaml

    cfg, name = run / "config.yaml", None
    try:  # only a label: an unreadable config leaves it out
        data = yaml.safe_load(cfg.read_text(encoding="utf-8")) if cfg.is_file() else None
        name = data.get("name") if isinstance(data, dict) else None
    except (yaml.YAMLError, UnicodeDecodeError):
        pass
    return f"`{run}`" + (f" (config {name})" if name else "")


def measured_table(rows: list[dict[str, Any]] | None, label: str | None) -> list[str]:
    if not rows:
        return ["No run dir given (`--run DIR`)." if label is None else f"No shard folders in {label}."]
    out = [f"Run dir {label}.", "", "| stage | shards folder | shards | stage seconds | first shard s (with load) | median later shard s "
           "| load s (est.) | outside the shard loop s |", "|---" * 8 + "|"]
    out += [f"| {r['stage']} | {r['shards_dir']} | {r['shards']} | {_s(r['stage_seconds'])} | {_s(r['first_s'])} "
            f"| {_s(r['median_later_s'])} | {_s(r['load_est_s'])} | {_s(r['outside_shards_s'])} |" for r in rows]
    return out


def caveats(grids: list[Any]) -> str:
    flagged = sum(g.splits[s] for g in grids for s in g.uncounted)
    share = flagged / max(sum(g.examples for g in grids), 1)
    big = (f"- {share:.1%} of the grid's examples come from split sizes given by `--aqua-rows` (the AQuA-RAT hub train\n"
           "  split, 97,467 rows on its dataset card). That figure is not counted here and not de-duplicated; the\n"
           "  builder drops repeats, so it is an upper bound. `--aqua-rows train=N` projects a capped train split.\n"
           if flagged else "")
    return f"""\
- This is a projection on paper, not a measurement. No GPU ran for it, and no vLLM throughput has been
  measured by this project. The paper configs sample with vLLM, whose continuous batching runs far
  more than 16 sequences at a time. The batch-16 transformers rates used here are therefore an upper
  bound on generation and judge time, not an estimate of it.
{big}- Every response is assumed to have the mean length. Real lengths vary, and the longest shard in each
  round sets that round's time, so the real tail is longer than this model says.
- Not projected: `build`, `attribute`, `bon` and `report` (CPU, seconds), and `dpo-pairs`, `dpo-train`,
  `dpo-eval`, `audit` and ReasonBench. No per-step time of those stages has been measured at paper shape.
- The judge's Llama-3.3-70B runs with TP=4 (`paper_config`): on fewer than 4 GPUs it does not fit in
  bf16, so totals with `ack` read "does not fit" there (a quantised judge on one GPU is not projected).
- Sharded `ack` with a vLLM judge on TP=4 workers (`executor.stages.ack.num_gpus: 4`) has not run on a
  GPU cluster (docs/cluster.md); its times here are the model's, like every other stage's."""


def markdown(result: dict[str, Any], grids: list[Any], inp: Any) -> str:
    lines = ["# Paper grid wall time on 1, 8 and 32 GPUs: a projection", "",
             "**A projection on paper, not a measurement.** It is built from throughputs measured on a GPU by an",
             "earlier session, from the paper configs' sizes counted in the public datasets, and from assumptions",
             "that are named below. Model and assumptions: `alignment/measure/cluster/projection.py` (module docstring).", "",
             "Produced by:", "", "```", result["command"], "```", "", "## Projected wall time (hours)", ""]
    lines += hours_tables(result, inp.gpus, inp.detail_tok_s)
    lines += [f"## Stage by stage at {inp.detail_tok_s:,.0f} decode tokens/s", ""] + detail_table(result, inp.gpus)
    lines += ["", "## The grid", ""] + sizes_table(grids, inp.response_tokens) + [""]
    lines += [f"- {g.name}: " + "; ".join(g.sources) for g in grids]
    lines += ["", "## Inputs", ""] + inputs_table(inp)
    lines += ["", "## Measured per-shard times of a real run (CPU, this machine)", "",
              "Measured, from file times of the run dir's shards (see `alignment/measure/cluster/report.py`).",
              "They show the overhead's shape: a model load once per worker, then a steady time per shard, and",
              "(last column) what the driver spends outside the shard loop. They are not GPU times.", ""]
    lines += measured_table(result["measured"], result["run"])
    lines += ["", "## Assumptions and caveats", "", caveats(grids), ""]
    return "\n".join(lines)
