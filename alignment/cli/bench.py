"""`alignment bench`: its flags; the timings themselves are `alignment.measure.bench`, imported
(with torch) only when the command runs."""

from __future__ import annotations

import argparse


def cmd_bench(args: argparse.Namespace) -> int:
    from alignment.measure.bench import cmd_bench as run

    return run(args)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="time naive vs shared-prefix scoring, sampling and DPO",
                       description="Time naive vs shared-prefix scoring and sampling (CPU, SmolLM2-135M; "
                                   "--device/--shape: random-weight paper shapes on a GPU).")
    p.add_argument("--json", action="store_true", help="end with one JSON line of results")
    p.add_argument("--record", metavar="PATH", help="also write the figures, command, CPU and commit to this results file "
                                                    "(results/bench_<name>.json renders into a results page)")
    p.add_argument("--device", help="cpu, cuda or cuda:N: time random-weight models of --shape there instead "
                                    "(generation, scoring, one LoRA DPO step; see alignment/measure/device.py)")
    p.add_argument("--shape", help="with --device: llama-3.1-8b, llama-3.2-3b, qwen3-1.7b or tiny (default)")
    p.add_argument("--n", type=int, default=16, help="responses / samples per prompt")
    p.add_argument("--prompt-tokens", type=int, default=1500, help="approximate prompt length")
    p.add_argument("--response-tokens", type=int, default=270, help="approximate response length")
    p.add_argument("--new-tokens", type=int, default=128, help="new tokens per sample")
    p.add_argument("--batch-size", type=int, default=8, help="scoring: sequences per forward (both paths)")
    p.add_argument("--skip-scoring", action="store_true", help="skip naive vs shared-prefix reward scoring")
    p.add_argument("--skip-generation", action="store_true", help="skip naive vs shared-prefix sampling")
    p.add_argument("--skip-decode", action="store_true", help="skip decode-step, prefill and sampling speed")
    p.add_argument("--skip-batched-step", action="store_true", help="decode: skip the repeated-cache step ratio")
    p.add_argument("--steps", type=int, default=8, help="decode: timed steps per context (median reported)")
    p.add_argument("--short-tokens", type=int, default=100, help="decode: length of the short context")
    p.add_argument("--skip-greedy", action="store_true", help="skip greedy answers apart vs beside their samples")
    p.add_argument("--greedy-prompts", type=int, default=16, help="greedy case: distinct prompts")
    p.add_argument("--greedy-samples", type=int, default=2, help="greedy case: samples per prompt (plus its greedy answer)")
    p.add_argument("--greedy-prompt-tokens", type=int, default=530, help="greedy case: approximate prompt length")
    p.add_argument("--greedy-new-tokens", type=int, default=64, help="greedy case: new tokens per row")
    p.add_argument("--skip-dpo-eval", action="store_true", help="skip dpo-eval's policies one at a time vs in shared batches")
    p.add_argument("--dpo-eval-model", default="smollm2-135m", help="dpo-eval case: base model (preset, hub id or folder)")
    p.add_argument("--dpo-eval-device", default="cpu", help="dpo-eval case: cpu, cuda or cuda:N")
    p.add_argument("--dpo-eval-dtype", default="float32", choices=["auto", "float32", "bfloat16", "float16"],
                   help="dpo-eval case: weights dtype")
    p.add_argument("--dpo-eval-adapters", type=int, default=9, help="dpo-eval case: random LoRA adapters besides the base")
    p.add_argument("--dpo-eval-prompts", type=int, default=8, help="dpo-eval case: distinct prompts")
    p.add_argument("--dpo-eval-samples", type=int, default=2, help="dpo-eval case: samples per prompt (plus its greedy answer)")
    p.add_argument("--dpo-eval-prompt-tokens", type=int, default=530, help="dpo-eval case: approximate prompt length")
    p.add_argument("--dpo-eval-new-tokens", type=int, default=32, help="dpo-eval case: new tokens per row")
    p.add_argument("--dpo-eval-batch-size", type=int, default=16, help="dpo-eval case: sequences per policy per batch")
    p.add_argument("--skip-contention", action="store_true", help="skip the idle-vs-busy-machine decode")
    p.add_argument("--contention-n", type=int, default=4, help="contention case: samples")
    p.add_argument("--contention-tokens", type=int, default=32, help="contention case: new tokens per sample")
    p.add_argument("--contention-prompt-tokens", type=int, default=300, help="contention case: prompt length")
    p.add_argument("--skip-judge", action="store_true", help="skip timing the keyword judge on one long response")
    p.add_argument("--skip-dpo", action="store_true", help="skip the shared-reference vs TRL-default DPO timing")
    p.add_argument("--dpo-pairs", type=int, default=6, help="DPO case: pairs per variant")
    p.add_argument("--judge-mb", type=float, default=5.0, help="judge case: response size in MB")
    p.set_defaults(func=cmd_bench)
