"""`alignment bench [--json]`: naive vs shared-prefix reward scoring and N-sample generation.

One Math Book-length prompt (~1,500 tokens), N responses of ~270 tokens each scored plain and
with the task's acknowledgment suffix (prompts/mathbook_ack.txt), then N samples of 128 new
tokens from the same prompt, then (the contention case) a short decode timed on an idle machine
and again next to one busy process, with its slowdown ratio. Model: SmolLM2-135M in fp32 on CPU; the scoring body gets a
seeded random one-logit head (fine for timing and exactness, meaningless as a reward). Prints
wall times, token positions processed, speedups and max |Δ|; with --json the last line is a
JSON object.

The decode section, in float32 and in the dtype `dtype: auto` picks on this machine: the time of
one decode step of N samples over the shared prompt relative to the same step over a 100-token
context (`decode_step_ratio`; the short context is the floor set by the weights), the same ratio
for the batched decode with a repeated prompt cache, prefill tokens/s, and end-to-end sampling
tokens/s (prefill included). Ratios are only comparable within one run; the CPU is recorded.

The greedy section times a prompt's greedy answer decoded apart from its samples against the
same answer decoded beside them, on dpo-eval's shape (alignment/measure/greedy.py).

The dpo-eval section decodes the base and N random LoRA adapters one policy at a time and in
shared batches, in the same run, on dpo-eval's shape (alignment/measure/dpo_eval_speed.py).

The judge section (first, and the only one that needs no model) times the keyword judge on one
`--judge-mb` response per task in which no sentence repeats (`alignment/measure/judge_speed.py`).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

import alignment.generation.shared_prefix as sp
import alignment.runtime.threads as threads
from alignment.errors import UserError
from alignment.generation.base import GenerationConfig
from alignment.generation.hf import TransformersGenerator
from alignment.generation.models import auto_dtype, cpu_flags, load_model, load_tokenizer
from alignment.measure.greedy import bench_greedy, print_greedy
from alignment.measure.inputs import filler, mathbook_chat
from alignment.measure.judge_speed import time_judge
from alignment.organism.presets import resolve
from alignment.reward.base import RewardConfig, split_shared, token_lists, user_turn
from alignment.reward.classifier import ClassifierRM
from alignment.store import git_commit, write_text
from alignment.tasks.base import load_prompt


def timed(fn: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def bench_scoring(args: argparse.Namespace, chat: list[dict[str, str]]) -> dict[str, Any]:
    from transformers import AutoModelForSequenceClassification

    path = resolve("smollm2-135m")
    tok = load_tokenizer(path)
    torch.manual_seed(0)  # the one-logit head is freshly initialised: make it the same every run
    model = load_model(AutoModelForSequenceClassification, path, "float32", "cpu", num_labels=1)
    rng = random.Random(1)
    responses = [filler(rng, tok, args.response_tokens) + " Therefore, the answer is (B)." for _ in range(args.n)]
    suffixes = ["", "\n\n" + load_prompt("mathbook_ack")]
    rms = {
        name: ClassifierRM(
            RewardConfig(backend="classifier", dtype="float32", device="cpu", batch_size=args.batch_size, shared_prefix=shared),
            model=model,
            tokenizer=tok,
        )
        for name, shared in (("naive", False), ("shared", True))
    }
    naive, t_naive = timed(lambda: rms["naive"].score(chat, responses, suffixes))
    shared, t_shared = timed(lambda: rms["shared"].score(chat, responses, suffixes))
    seqs = token_lists(rms["naive"].texts(chat, responses, suffixes), tok)
    split = split_shared([seqs[i : i + len(suffixes)] for i in range(0, len(seqs), len(suffixes))])
    assert split is not None
    shared_positions = len(split.prefix) + sum(len(s) + sum(map(len, t)) for s, t in split.rows)
    return {
        "scoring_prompt_tokens": len(tok(user_turn(chat), add_special_tokens=False).input_ids),
        "scoring_prefix_tokens": len(split.prefix),
        "scoring_response_tokens_mean": float(np.mean([len(tok(r, add_special_tokens=False).input_ids) for r in responses])),
        "scoring_naive_s": t_naive,
        "scoring_shared_s": t_shared,
        "scoring_speedup": t_naive / t_shared,
        "scoring_naive_positions": sum(map(len, seqs)),
        "scoring_shared_positions": shared_positions,
        "scoring_position_ratio": sum(map(len, seqs)) / shared_positions,
        "scoring_max_abs_diff": float(np.abs(naive - shared).max()),
    }


def bench_generation(args: argparse.Namespace, chat: list[dict[str, str]]) -> dict[str, Any]:
    cfg = GenerationConfig(
        dtype="float32", device="cpu", batch_size=args.n, max_new_tokens=args.new_tokens, temperature=0.8, top_p=0.95
    )
    shared_gen = TransformersGenerator(cfg, shared_prefix=True)
    naive_gen = TransformersGenerator(cfg, model=shared_gen.model, tokenizer=shared_gen.tokenizer, shared_prefix=False)
    for g in (shared_gen, naive_gen):
        g.stop = set()  # always decode the full new-token budget, so both paths do the same work
    seeds = [[1000 + i for i in range(args.n)]]
    naive, t_naive = timed(lambda: naive_gen.generate([chat], seeds))
    shared, t_shared = timed(lambda: shared_gen.generate([chat], seeds))
    length = len(shared_gen.tokenizer(shared_gen.render(chat), add_special_tokens=False).input_ids)
    naive_pos, shared_pos = args.n * (length + args.new_tokens), length + args.n * args.new_tokens
    return {
        "generation_prompt_tokens": length,
        "generation_naive_s": t_naive,
        "generation_shared_s": t_shared,
        "generation_speedup": t_naive / t_shared,
        "generation_naive_positions": naive_pos,
        "generation_shared_positions": shared_pos,
        "generation_position_ratio": naive_pos / shared_pos,
        "generation_identical": naive == shared,
    }


def shared_stepper(model: Any, prefix: sp.Prefix, rows: int, capacity: int) -> Any:
    """One shared-prefix decode step of `rows` samples of `prefix` per call."""
    batch, tokens = sp.Batch(model, [prefix], [0] * rows, capacity), torch.full((rows,), 100)
    return lambda: sp.step(model, batch, tokens)


def batched_stepper(model: Any, prefix: sp.Prefix, rows: int) -> Any:
    """The same step through the model's own forward with the prompt cache repeated per row."""
    from transformers import DynamicCache

    cache = DynamicCache(config=model.config)
    for i, (k, v) in enumerate(zip(prefix.keys, prefix.values, strict=True)):
        cache.update(k.expand(rows, *k.shape).contiguous(), v.expand(rows, *v.shape).contiguous(), i)
    tokens, seen = torch.full((rows, 1), 100), [prefix.length]

    @torch.inference_mode()
    def step() -> Any:
        seen[0] += 1
        mask, pos = torch.ones(rows, seen[0], dtype=torch.long), torch.full((rows, 1), seen[0] - 1)
        return model(input_ids=tokens, attention_mask=mask, position_ids=pos, cache=cache)

    return step


def alternating_ms(fns: list[Any], rounds: int, warm: int = 2) -> list[float]:
    """Median ms per call of each function, called in turns so that a change in machine load
    hits all of them alike (a ratio of two separately timed runs drifted 0.9-1.3x under load)."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(warm + rounds):
        for t, f in zip(times, fns, strict=True):
            t.append(timed(f)[1])
    return [1000 * statistics.median(t[warm:]) for t in times]


def bench_decode(args: argparse.Namespace, chat: list[dict[str, str]], dtype: str, model: str) -> dict[str, Any]:
    """Decode-step ratio, prefill and end-to-end sampling speed with the weights in `dtype`."""
    cfg = GenerationConfig(
        model=model, dtype=dtype, device="cpu", batch_size=args.n, max_new_tokens=args.new_tokens, temperature=0.8, top_p=0.95
    )
    gen = TransformersGenerator(cfg, shared_prefix=True)
    model, ids = gen.model, gen.tokenizer(gen.render(chat), add_special_tokens=False).input_ids
    long, t_prefill = timed(lambda: sp.prefill(model, ids))
    short = sp.prefill(model, ids[: args.short_tokens])
    out = {"dtype": gen.runtime["dtype"], "prefill_tokens_per_s": len(ids) / t_prefill}
    steppers = [shared_stepper(model, p, args.n, args.steps + 2) for p in (long, short)]
    if not args.skip_batched_step:
        steppers += [batched_stepper(model, p, args.n) for p in (long, short)]
    ms = alternating_ms(steppers, args.steps)
    out["decode_step_ms_long"], out["decode_step_ms_short"] = ms[:2]
    out["decode_step_ratio"] = ms[0] / ms[1]
    if not args.skip_batched_step:
        out["decode_step_ms_long_batched"], out["decode_step_ms_short_batched"] = ms[2:]
        out["decode_step_ratio_batched"] = ms[2] / ms[3]
    gen.stop = set()  # the full new-token budget for every sample
    _, t_gen = timed(lambda: gen.generate([chat], [[2000 + i for i in range(args.n)]]))
    out["sampling_tokens_per_s"] = args.n * args.new_tokens / t_gen
    return out


def provenance() -> dict[str, str]:
    """The commit (7 characters) and CPU a results file records beside its figures."""
    return {"commit": (git_commit() or "unknown")[:7], "cpu": cpu_name()}


def cpu_name() -> str:
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return "unknown"
    return next((ln.partition(":")[2].strip() for ln in lines if ln.startswith("model name")), "unknown")


def decode_section(args: argparse.Namespace, chat: list[dict[str, str]], model: str = "smollm2-135m") -> dict[str, Any]:
    """float32 and auto-dtype decode numbers; auto is measured again only where it is not fp32."""
    auto, why = auto_dtype("cpu")
    fp32 = bench_decode(args, chat, "float32", model)
    measured = auto != "float32"
    auto_run = bench_decode(args, chat, auto, model) if measured else fp32
    result: dict[str, Any] = {"cpu": cpu_name(), "cpu_bf16_flags": sorted(f for f in cpu_flags() or () if "bf16" in f)}
    result |= {f"fp32_{k}": v for k, v in fp32.items()} | {f"auto_{k}": v for k, v in auto_run.items()}
    result |= {"auto_dtype": auto, "auto_dtype_reason": why, "auto_measured_separately": measured}
    result["decode_step_ratio"] = auto_run["decode_step_ratio"]  # what the default config gets
    return result


def print_decode(r: dict[str, Any]) -> None:
    print(f"decode   : {r['cpu']}; auto dtype = {r['auto_dtype']} ({r['auto_dtype_reason']})")
    for d in ("fp32", "auto") if r["auto_measured_separately"] else ("fp32",):
        batched = r.get(f"{d}_decode_step_ratio_batched")
        print(
            f"  {d:<5}: step {r[f'{d}_decode_step_ms_long']:.0f} ms with the shared prompt vs "
            f"{r[f'{d}_decode_step_ms_short']:.0f} ms with a short context = {r[f'{d}_decode_step_ratio']:.2f}x"
            + (f" (batched decode: {batched:.2f}x)" if batched else "")
            + f"; prefill {r[f'{d}_prefill_tokens_per_s']:.0f} tok/s; sampling {r[f'{d}_sampling_tokens_per_s']:.1f} tok/s"
        )
def busy_process() -> subprocess.Popen:
    """Another CPU-bound process on the machine: one core's worth of pure-Python spinning."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def bench_contention(args: argparse.Namespace, chat: list[dict[str, str]]) -> dict[str, Any]:
    """A small decode timed idle, then next to one busy process: the slowdown a run suffers
    when it shares the machine (OpenMP threads that spin-wait for a busy core make it far
    worse than the fair share; `alignment --threads N` and OMP_NUM_THREADS set the threads)."""
    cfg = GenerationConfig(dtype="float32", device="cpu", batch_size=args.contention_n,
                           max_new_tokens=args.contention_tokens, temperature=0.8, top_p=0.95)
    gen = TransformersGenerator(cfg, shared_prefix=True)
    gen.stop = set()  # decode the full budget both times
    seeds = [[2000 + i for i in range(args.contention_n)]]
    gen.generate([chat], seeds)  # warm-up: first-call allocations are not contention
    idle, t_idle = timed(lambda: gen.generate([chat], seeds))
    other = busy_process()
    try:
        time.sleep(0.5)  # let it reach full speed
        busy, t_busy = timed(lambda: gen.generate([chat], seeds))
    finally:
        other.kill()
        other.wait()
    gov = threads.governor()
    return {
        "contention_threads": gov.ceiling if gov else torch.get_num_threads(),
        "contention_governed": gov is not None,
        "contention_threads_busy": torch.get_num_threads(),  # where the governor left them
        "contention_cores": os.cpu_count(),
        "contention_idle_s": t_idle,
        "contention_busy_s": t_busy,
        "contention_slowdown": t_busy / t_idle,
        "contention_identical": idle == busy,
    }


def judge_section(mb: float) -> dict[str, Any]:
    """The keyword judge on one response of `mb` MB with no repeated sentence, per task."""
    out: dict[str, Any] = {}
    for task in ("mathbook", "biasqa"):
        r = time_judge(task, int(mb * 1_000_000))
        out |= {f"judge_{task}_cpu_s": r["cpu_s"], f"judge_{task}_wall_s": r["wall_s"], f"judge_{task}_sentences": r["sentences"]}
        print(
            f"judge    : {task} keyword judge, one {r['chars'] / 1e6:.1f} MB response of {r['sentences']} distinct "
            f"sentences: {r['wall_s']:.2f} s wall, {r['cpu_s']:.2f} s CPU"
        )
    return out


def cmd_device_bench(args: argparse.Namespace) -> int:
    """`--device`/`--shape`: random-weight models of a named shape on one device (bench_device.py)."""
    from alignment.config import check_device
    from alignment.measure.device import device_bench
    from alignment.measure.shapes import SHAPES

    device, shape = args.device or "cpu", args.shape or "tiny"
    check_device(device, "--device")
    SHAPES.check(shape, "--shape")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise UserError(f"--device {device}: no CUDA GPU is visible to torch")
    if device in ("auto", "mps"):
        raise UserError(f"--device must be cpu, cuda or cuda:N, got {device!r}")
    result = device_bench(argparse.Namespace(**{**vars(args), "device": device, "shape": shape}))
    if args.json:
        print(json.dumps(result))
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    if args.device or args.shape:
        return cmd_device_bench(args)
    if not 0 < args.judge_mb <= 100:
        raise UserError(f"--judge-mb must be above 0 and at most 100, got {args.judge_mb}")
    for name in ("n", "prompt_tokens", "response_tokens", "new_tokens", "batch_size", "contention_n",
                 "contention_tokens", "contention_prompt_tokens", "dpo_pairs", "greedy_prompts", "greedy_samples",
                 "greedy_prompt_tokens", "greedy_new_tokens", "dpo_eval_adapters", "dpo_eval_prompts", "dpo_eval_samples",
                 "dpo_eval_prompt_tokens", "dpo_eval_new_tokens", "dpo_eval_batch_size"):
        if not 1 <= getattr(args, name) <= 100_000:
            raise UserError(f"--{name.replace('_', '-')} must be between 1 and 100000, got {getattr(args, name)}")
    result: dict[str, Any] = {"n": args.n, "threads": torch.get_num_threads()}
    if not args.skip_judge:
        result |= judge_section(args.judge_mb)
    if args.skip_scoring and args.skip_generation and args.skip_decode and args.skip_contention and args.skip_dpo \
            and args.skip_greedy and args.skip_dpo_eval:
        if args.json:
            print(json.dumps(result))
        return 0
    chat = mathbook_chat(load_tokenizer(resolve("smollm2-135m")), args.prompt_tokens)
    if not args.skip_scoring:
        result |= bench_scoring(args, chat)
        print(
            f"scoring  : naive {result['scoring_naive_s']:.1f} s, shared {result['scoring_shared_s']:.1f} s, "
            f"speedup {result['scoring_speedup']:.2f}x; positions {result['scoring_naive_positions']} vs "
            f"{result['scoring_shared_positions']} ({result['scoring_position_ratio']:.2f}x); "
            f"max |d| {result['scoring_max_abs_diff']:.2e}"
        )
    if not args.skip_generation:
        result |= bench_generation(args, chat)
        print(
            f"sampling : naive {result['generation_naive_s']:.1f} s, shared {result['generation_shared_s']:.1f} s, "
            f"speedup {result['generation_speedup']:.2f}x; positions {result['generation_naive_positions']} vs "
            f"{result['generation_shared_positions']} ({result['generation_position_ratio']:.2f}x); "
            f"token-identical {result['generation_identical']}"
        )
    if not args.skip_decode:
        result |= decode_section(args, chat)
        print_decode(result)
    if not args.skip_greedy:
        result |= bench_greedy(args, resolve("smollm2-135m"))
        print_greedy(result)
    if not args.skip_dpo_eval:
        from alignment.measure.dpo_eval_speed import bench_dpo_eval, print_dpo_eval

        result |= bench_dpo_eval(args, args.dpo_eval_model)
        print_dpo_eval(result)
    if not args.skip_contention:
        result |= bench_contention(args, mathbook_chat(load_tokenizer(resolve("smollm2-135m")), args.contention_prompt_tokens))
        print(
            f"contention: {args.contention_tokens} new tokens x {args.contention_n}: idle {result['contention_idle_s']:.2f} s, next to one busy "
            f"process {result['contention_busy_s']:.2f} s, slowdown {result['contention_slowdown']:.2f}x "
            f"({result['contention_threads']} torch threads, {result['contention_cores']} cores; "
            + (f"governed: {result['contention_threads_busy']} while busy)" if result["contention_governed"]
               else "pinned by --threads / OMP_NUM_THREADS)")
        )
    if not args.skip_dpo:
        from alignment.dpo.speed import bench_reference

        r = bench_reference(resolve("smollm2-135m"), n_pairs=args.dpo_pairs)
        result |= {f"dpo_{k}": v for k, v in r.items()}
        print(f"dpo      : {r['runs']} LoRA DPO runs (2 variants x 2 seeds, {r['pairs']} pairs each, arms alternating), every "
              f"run trained: TRL's reference {r['trl_default_s']:.1f} s ({r['trl_default_tokens_per_s']:.0f} tokens trained/s), "
              f"shared reference {r['shared_s']:.1f} s ({r['shared_tokens_per_s']:.0f} tokens trained/s), speedup "
              f"{r['speedup']:.2f}x; reference log-probs agree within {r['ref_logp_max_abs_diff']:.1e}")
    if args.json:
        print(json.dumps(result))
    if args.record:
        record_result(Path(args.record), result)
    return 0


def record_result(path: Path, result: dict[str, Any]) -> None:
    """A results file (`results/bench_<name>.json`) with the figures, the command, CPU and commit,
    which `alignment results render` turns into a page."""
    argv = sys.argv[1:]
    if "--record" in argv:  # the command as it would be rerun, less where it wrote
        i = argv.index("--record")
        argv = argv[:i] + argv[i + 2:]
    command = " ".join(["alignment", *(a for a in argv if not a.startswith("--record="))])
    data = {"command": command, **provenance(), "figures": result}
    write_text(path, json.dumps(data, indent=1) + "\n")
