"""`alignment bench --device cuda --shape llama-3.1-8b [--json]`: the paper's shapes on one device.

Random-weight models of a named shape (alignment/measure/shapes.py; nothing downloads), bf16 on
CUDA and fp32 on a CPU, timed on one Math Book-length prompt (`--prompt-tokens`):

- generation: `--n` samples x `--new-tokens` new tokens (top-p 0.95, temperature 0.8, no stop
  token, so every path decodes the whole budget), tokens/s for the project's decoders (the one
  the device gets by default, and the others: static cache compiled once on CUDA, eager
  shared-prefix), `model.generate` with a dynamic cache and with a static cache (compiled
  automatically on CUDA), against the weight-read floor: one prefill at the measured matmul
  peak plus one read of the weights per step at the measured bandwidth. Each path runs twice;
  the second run is timed, the first (compile included) is reported as `*_first_s`.
- scoring: `--n` responses of `--response-tokens` scored plain and with the acknowledgment
  suffix, naive vs shared prefix, with max |diff| of each against the same weights in fp32 and
  the share of the matmul peak (2 x parameters x positions; attention FLOPs left out).
- DPO: one LoRA step of TRL's `DPOTrainer` (batch 1 pair, reference = adapter off), tokens/s
  and share of peak (6 x parameters x tokens: policy forward and input gradients, reference
  forward; LoRA's own weights are negligible).
- peak memory per section (CUDA allocator; on a CPU the process's peak RSS).

The peak and bandwidth are measured on the device (`device_floors`), not looked up. `--device
cpu --shape tiny` runs the same code in seconds (tests/test_bench.py).
"""

from __future__ import annotations

import argparse
import gc
import random
import resource
import statistics
import tempfile
import time
import warnings
from typing import Any

import numpy as np
import torch

from alignment.generation.base import GenerationConfig
from alignment.generation.hf import TransformersGenerator
from alignment.measure.inputs import WORDS, filler, mathbook_chat
from alignment.measure.shapes import (
    SHAPES,
    Shape,
    build,
    device_floors,
    params,
    sync,
    word_tokenizer,
)
from alignment.reward.base import RewardConfig, split_shared, token_lists
from alignment.reward.classifier import ClassifierRM
from alignment.runtime.console import quiet_trainer
from alignment.tasks.base import load_prompt

PROMPTS = ("mathbook_query", "mathbook_system", "mathbook_instruction", "mathbook_ack")
SAMPLING = {"temperature": 0.8, "top_p": 0.95}


def peak_memory(device: str) -> float:
    """Bytes: the CUDA allocator's peak since the last reset, or this process's peak RSS."""
    if device.startswith("cuda"):
        return float(torch.cuda.max_memory_allocated())
    return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)


def fresh(device: str) -> None:
    """Free the previous section's models and restart the peak-memory count."""
    if device.startswith("cuda"):
        torch._dynamo.reset()  # compiled code and CUDA-graph pools keep the old model alive
    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def twice(fn: Any, device: str) -> tuple[float, float, Any]:
    """Seconds of the first call (compile, warm-up) and of the second (steady), and its result."""
    seconds, result = [], None
    for _ in range(2):
        sync(device)
        t0 = time.perf_counter()
        result = fn()
        sync(device)
        seconds.append(time.perf_counter() - t0)
    return seconds[0], seconds[1], result


def project_decoders(model: Any, tok: Any, chat: Any, args: argparse.Namespace) -> dict[str, Any]:
    """tokens/s of the generator's decoders on this device; `project_decoder` is its default."""
    cfg = GenerationConfig(model="random", dtype=str(model.dtype).removeprefix("torch."), device=args.device,
                           batch_size=args.n, max_new_tokens=args.new_tokens, **SAMPLING)
    out: dict[str, Any] = {"project_decoder": TransformersGenerator(cfg, model=model, tokenizer=tok).decoder()}
    seeds = [[1000 + i for i in range(args.n)]]
    for name, static in (("static", None if args.device.startswith("cuda") else True), ("shared_prefix", False)):
        gen = TransformersGenerator(cfg, model=model, tokenizer=tok, static=static)
        gen.stop = set()  # the whole budget for every sample
        first, second, _ = twice(lambda g=gen: g.generate([chat], seeds), args.device)
        out |= {f"project_{name}_tokens_per_s": args.n * args.new_tokens / second, f"project_{name}_first_s": first}
        if name == "static":
            out["project_static_compile_s"] = float(gen.runtime["compile_s"])
    out["project_tokens_per_s"] = out[f"project_{out['project_decoder'].replace('-', '_')}_tokens_per_s"]
    return out


def hf_generate(model: Any, ids: list[int], args: argparse.Namespace) -> dict[str, Any]:
    """tokens/s of transformers' `model.generate`, dynamic cache and static cache."""
    x = torch.tensor([ids] * args.n, device=model.device)
    kw = dict(do_sample=True, max_new_tokens=args.new_tokens, min_new_tokens=args.new_tokens, pad_token_id=0, **SAMPLING)
    out: dict[str, Any] = {}
    for name, extra in (("dynamic", {}), ("static", {"cache_implementation": "static"})):
        first, second, _ = twice(lambda e=extra: model.generate(x, attention_mask=torch.ones_like(x), **kw, **e), args.device)
        out |= {f"generate_{name}_tokens_per_s": args.n * args.new_tokens / second, f"generate_{name}_first_s": first}
    return out


def generation_section(shape: Shape, tok: Any, chat: Any, floors: dict[str, float], args: argparse.Namespace) -> dict[str, Any]:
    fresh(args.device)
    model = build(shape, "causal", args.device, args.dtype)
    model.generation_config.eos_token_id = None  # no stop token: every path decodes the budget
    ids = tok(tok.apply_chat_template(chat, tokenize=False, add_generation_prompt=True), add_special_tokens=False).input_ids
    out = {"generation_prompt_tokens": len(ids)} | project_decoders(model, tok, chat, args) | hf_generate(model, ids, args)
    n_params = params(model)  # the weights one decode step reads (input embeddings: a lookup)
    floor_s = 2 * n_params * len(ids) / floors["matmul_flops_per_s"]
    floor_s += args.new_tokens * n_params * args.dtype.itemsize / floors["bandwidth_bytes_per_s"]
    out["floor_tokens_per_s"] = args.n * args.new_tokens / floor_s
    out["project_vs_generate_static"] = out["project_tokens_per_s"] / out["generate_static_tokens_per_s"]
    out["floor_vs_project"] = out["floor_tokens_per_s"] / out["project_tokens_per_s"]
    out["generation_peak_memory_bytes"] = peak_memory(args.device)
    return out


def scoring_section(shape: Shape, tok: Any, chat: Any, floors: dict[str, float], args: argparse.Namespace) -> dict[str, Any]:
    fresh(args.device)
    rng = random.Random(1)
    responses = [filler(rng, tok, args.response_tokens) + " Therefore, the answer is (B)." for _ in range(args.n)]
    suffixes = ["", "\n\n" + load_prompt("mathbook_ack")]
    model = build(shape, "classifier", args.device, torch.float32)

    def rm(shared: bool) -> ClassifierRM:
        cfg = RewardConfig(backend="classifier", model="random", dtype="float32", device=args.device,
                           batch_size=args.batch_size, shared_prefix=shared, max_length=1 << 20)
        return ClassifierRM(cfg, model=model, tokenizer=tok)

    reference = rm(False).score(chat, responses, suffixes)  # the same weights in fp32
    model.to(args.dtype)
    times, scores = {}, {}
    for name, scorer in (("naive", rm(False)), ("shared", rm(True))):
        _, times[name], scores[name] = twice(lambda s=scorer: s.score(chat, responses, suffixes), args.device)
    seqs = token_lists(rm(False).texts(chat, responses, suffixes), tok)
    k = len(suffixes)
    split = split_shared([seqs[i : i + k] for i in range(0, len(seqs), k)])
    assert split is not None
    positions = {"naive": sum(map(len, seqs)),
                 "shared": len(split.prefix) + sum(len(s) + sum(map(len, t)) for s, t in split.rows)}
    flops = {n: 2 * params(model) * p for n, p in positions.items()}
    out: dict[str, Any] = {"scoring_speedup": times["naive"] / times["shared"]}
    for name in ("naive", "shared"):
        out |= {f"scoring_{name}_s": times[name], f"scoring_{name}_positions": positions[name],
                f"scoring_{name}_max_abs_diff_vs_fp32": float(np.abs(scores[name] - reference).max()),
                f"scoring_{name}_share_of_peak": flops[name] / times[name] / floors["matmul_flops_per_s"]}
    out["scoring_peak_memory_bytes"] = peak_memory(args.device)
    return out


def dpo_section(shape: Shape, tok: Any, chat: Any, floors: dict[str, float], args: argparse.Namespace) -> dict[str, Any]:
    """One LoRA DPO step of TRL on one (prompt, chosen, rejected) pair, timed after a warm-up step."""
    import datasets
    from peft import LoraConfig
    from transformers import TrainerCallback
    from trl import DPOConfig, DPOTrainer

    fresh(args.device)
    rng = random.Random(2)
    prompt = tok.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
    pair = {"prompt": prompt, "chosen": filler(rng, tok, args.response_tokens), "rejected": filler(rng, tok, args.response_tokens)}
    lengths = [len(tok(prompt + pair[k], add_special_tokens=False).input_ids) for k in ("chosen", "rejected")]
    tokens = sum(lengths)
    steps: list[float] = []

    class Clock(TrainerCallback):
        def on_step_begin(self, *a: Any, **kw: Any) -> None:
            sync(args.device)
            steps.append(time.perf_counter())

        def on_step_end(self, *a: Any, **kw: Any) -> None:
            sync(args.device)
            steps[-1] = time.perf_counter() - steps[-1]

    cuda = args.device.startswith("cuda")
    model = build(shape, "causal", args.device, args.dtype)
    n_params = params(model)  # before LoRA layers are added to it
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # transformers' renames, not ours to fix
        targs = DPOConfig(output_dir=tmp, per_device_train_batch_size=1, max_steps=3, learning_rate=1e-6,
                          max_length=max(lengths) + 16, logging_strategy="no", save_strategy="no", report_to="none",
                          use_cpu=not cuda, bf16=cuda and args.dtype == torch.bfloat16, disable_tqdm=True,
                          dataloader_num_workers=0)
        lora = LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM")
        trainer = DPOTrainer(model=model, args=targs, train_dataset=datasets.Dataset.from_list([pair] * 3),
                             processing_class=tok, peft_config=lora, callbacks=[Clock()])
        quiet_trainer(trainer, True).train()  # no loss dictionaries on stdout (--json ends it)
    step_s = statistics.median(steps[1:])
    return {"dpo_tokens_per_step": tokens, "dpo_step_s": step_s, "dpo_tokens_per_s": tokens / step_s,
            "dpo_share_of_peak": 6 * n_params * tokens / step_s / floors["matmul_flops_per_s"],
            "dpo_peak_memory_bytes": peak_memory(args.device)}


def device_bench(args: argparse.Namespace) -> dict[str, Any]:
    """Every section for `args.shape` on `args.device`; prints one line per section."""
    shape = SHAPES.get(args.shape)
    args.dtype = torch.bfloat16 if args.device.startswith("cuda") else torch.float32
    name = torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu"
    tok = word_tokenizer([load_prompt(p) for p in PROMPTS] + [" ".join(WORDS), "(A) 12 (B) 15 (C) 18 (D) 20 (E) 24"])
    chat = mathbook_chat(tok, args.prompt_tokens)
    floors = device_floors(args.device, args.dtype)
    result: dict[str, Any] = {"shape": shape.name, "device": args.device, "device_name": name,
                              "dtype": str(args.dtype).removeprefix("torch."), "n": args.n} | floors
    print(f"device   : {name}, {result['dtype']}: copy {floors['bandwidth_bytes_per_s'] / 1e12:.2f} TB/s, "
          f"matmul {floors['matmul_flops_per_s'] / 1e12:.1f} TFLOP/s (measured)")
    result |= generation_section(shape, tok, chat, floors, args)
    r = result
    print(f"sampling : {args.n} x {args.new_tokens} new tokens of a {r['generation_prompt_tokens']}-token prompt, tokens/s: "
          f"project {r['project_tokens_per_s']:.0f} ({r['project_decoder']}; static {r['project_static_tokens_per_s']:.0f}, "
          f"compile {r['project_static_compile_s']:.1f} s; shared-prefix {r['project_shared_prefix_tokens_per_s']:.0f}), "
          f"model.generate dynamic {r['generate_dynamic_tokens_per_s']:.0f}, static {r['generate_static_tokens_per_s']:.0f} "
          f"(first call {r['generate_static_first_s']:.1f} s), floor {r['floor_tokens_per_s']:.0f}; "
          f"peak {r['generation_peak_memory_bytes'] / 2**30:.1f} GiB")
    result |= scoring_section(shape, tok, chat, floors, args)
    print(f"scoring  : naive {r['scoring_naive_s']:.2f} s, shared {r['scoring_shared_s']:.2f} s, "
          f"speedup {r['scoring_speedup']:.2f}x; max |d| vs fp32 naive {r['scoring_naive_max_abs_diff_vs_fp32']:.2e}, "
          f"shared {r['scoring_shared_max_abs_diff_vs_fp32']:.2e}; share of peak naive {r['scoring_naive_share_of_peak']:.1%}, "
          f"shared {r['scoring_shared_share_of_peak']:.1%}; peak {r['scoring_peak_memory_bytes'] / 2**30:.1f} GiB")
    result |= dpo_section(shape, tok, chat, floors, args)
    print(f"dpo      : one LoRA step, {r['dpo_tokens_per_step']} tokens: {r['dpo_step_s']:.2f} s, "
          f"{r['dpo_tokens_per_s']:.0f} tokens/s, {r['dpo_share_of_peak']:.1%} of peak; "
          f"peak {r['dpo_peak_memory_bytes'] / 2**30:.1f} GiB")
    return result
