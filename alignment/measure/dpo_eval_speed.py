"""`alignment bench`'s dpo-eval line: N LoRA policies and the base decoded one at a time against
all of them in shared batches, in the same run (`alignment.dpo.shared_eval`).

The workload is dpo-eval's shape: distinct Math Book-shaped prompts, a few samples each plus the
greedy answer, decoded by the base policy and by `--dpo-eval-adapters` random LoRA adapters (on
q/k/v/o, dpo-train's default targets; random B so each policy says something else). One at a
time is dpo-eval's path with `dpo.eval_shared_batches: false`: a fresh base load per policy with
its adapter merged in. Shared is the default path: one load, adapters unmerged, every batch
decoded for all policies at once. Both times include the model loads, as the stage pays them.
Every row decodes the full new-token budget on every side (stop tokens off), so all sides do the
same decode work. The shared texts are checked against each policy decoded alone through its
unmerged adapter (untimed: that is what they must equal; merged weights round differently, and
`merged_differ` counts the texts where that changed a token).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from alignment.config import check_device
from alignment.errors import UserError
from alignment.generation.base import GenerationConfig


def random_adapters(model: str, n: int, folder: Path) -> dict[str, Path]:
    """`n` seeded random LoRA adapters (rank 8 on q/k/v/o) for `model`, saved under `folder`."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    out = {}
    for k in range(n):
        torch.manual_seed(1000 + k)
        base = AutoModelForCausalLM.from_pretrained(model, torch_dtype=torch.float32)
        lora = LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
                          init_lora_weights=False, task_type="CAUSAL_LM")
        out[f"policy{k}"] = folder / f"policy{k}"
        get_peft_model(base, lora).save_pretrained(out[f"policy{k}"])
    return out


def jobs(tokenizer: Any, args: argparse.Namespace) -> list[dict[str, Any]]:
    """One job per prompt in `sampling.plan_jobs`' shape: its samples, then its greedy row."""
    from alignment.measure.inputs import mathbook_chat

    samples = [*range(args.dpo_eval_samples), -1]
    return [{"chat": mathbook_chat(tokenizer, args.dpo_eval_prompt_tokens, seed=i), "samples": samples,
             "seeds": [10_000 * i + s for s in samples]} for i in range(args.dpo_eval_prompts)]


def no_stops(gen: Any) -> Any:
    gen.stop = set()
    return gen


def bench_dpo_eval(args: argparse.Namespace, model: str) -> dict[str, Any]:
    """Seconds one policy at a time (merged) and in shared batches, their ratio, and whether the
    shared texts equal each policy's decoded alone through its unmerged adapter."""
    from alignment.dpo.evaluate import policy_generator
    from alignment.dpo.shared_eval import alone_generator, decode_batch, shared_generator
    from alignment.generation.adapters import BASE_ADAPTER
    from alignment.generation.hf import TransformersGenerator
    from alignment.generation.sampling import batches, draw_seeds
    from alignment.organism.presets import resolve

    check_device(args.dpo_eval_device, "--dpo-eval-device")
    path = resolve(model)
    cfg = GenerationConfig(model=path, dtype=args.dpo_eval_dtype, device=args.dpo_eval_device, batch_size=args.dpo_eval_batch_size,
                           max_new_tokens=args.dpo_eval_new_tokens, temperature=0.8, top_p=0.95)
    with tempfile.TemporaryDirectory() as tmp:
        adapters = random_adapters(path, args.dpo_eval_adapters, Path(tmp))
        warm = TransformersGenerator(cfg)  # first-load costs (file cache, imports) count on neither side
        work = batches(jobs(warm.tokenizer, args), cfg.batch_size)
        rows = sum(len(j["samples"]) for b in work for j in b) * (len(adapters) + 1)
        if rows == 0:
            raise UserError("bench dpo-eval: the workload is empty; its time would measure nothing")
        warm.generate([work[0][0]["chat"]], [[None]])
        names = [BASE_ADAPTER, *adapters]
        paths: list[Path | None] = [None, *adapters.values()]

        def decode_all(gen: Any) -> list[list[list[str]]]:
            return [t for b in work for t in gen.generate([j["chat"] for j in b], [draw_seeds(j) for j in b])]

        t0 = time.perf_counter()
        merged = [decode_all(no_stops(policy_generator(cfg, p))) for p in paths]
        alone_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        gen = no_stops(shared_generator(cfg, adapters, len(names)))
        per_batch = [decode_batch(gen, b, names) for b in work]
        shared_s = time.perf_counter() - t0
        shared = [[t for pb in per_batch for t in pb[k]] for k in range(len(names))]
        unmerged = [decode_all(no_stops(alone_generator(cfg, p))) for p in paths]
    texts = [t for pol in shared for job in pol for t in job]
    return {
        "dpo_eval_policies": len(names),
        "dpo_eval_rows": rows,
        "dpo_eval_alone_s": alone_s,
        "dpo_eval_shared_s": shared_s,
        "dpo_eval_speedup": alone_s / shared_s,
        "dpo_eval_identical": shared == unmerged and len(texts) == rows,
        "dpo_eval_merged_differ": sum(a != b for x, y in zip(merged, shared, strict=True) for u, v in zip(x, y, strict=True)
                                      for a, b in zip(u, v, strict=True)),
        "dpo_eval_decoder": gen.runtime["decoder"],
        "dpo_eval_dtype": gen.runtime["dtype"],
    }


def print_dpo_eval(r: dict[str, Any]) -> None:
    print(f"dpo-eval : {r['dpo_eval_policies']} policies (base + {r['dpo_eval_policies'] - 1} LoRA adapters), "
          f"{r['dpo_eval_rows']} rows, {r['dpo_eval_dtype']}, {r['dpo_eval_decoder']}: one at a time (merged) "
          f"{r['dpo_eval_alone_s']:.1f} s, shared batches {r['dpo_eval_shared_s']:.1f} s, speedup {r['dpo_eval_speedup']:.2f}x; "
          f"same texts as alone unmerged {r['dpo_eval_identical']}; texts where merged weights differ {r['dpo_eval_merged_differ']}")
