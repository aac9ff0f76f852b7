"""`alignment bench`'s greedy section: a prompt's greedy answer decoded apart from its samples (as
the generator did before) against the same answer decoded as one more row beside them.

The shape is `dpo-eval`'s on the organisms: several distinct Math Book-shaped prompts, a few
samples each plus the greedy answer. Apart, every prompt is prefilled twice (once for its samples,
once for its greedy row); together, once. Every row decodes the full new-token budget on both
sides (stop tokens off), so the two sides do the same decode work and differ only in prefills.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from alignment.generation.base import GenerationConfig
from alignment.generation.hf import TransformersGenerator
from alignment.measure.inputs import mathbook_chat


def bench_greedy(args: argparse.Namespace, model: str) -> dict[str, Any]:
    """Seconds apart and together, their ratio, and whether every text came out the same."""
    cfg = GenerationConfig(model=model, dtype="auto", device="cpu", batch_size=64, max_new_tokens=args.greedy_new_tokens,
                           temperature=0.8, top_p=0.95)
    gen = TransformersGenerator(cfg)
    gen.stop = set()
    # Distinct word salad per prompt (seeded apart): prompts share their chat header, not their body.
    chats = [mathbook_chat(gen.tokenizer, args.greedy_prompt_tokens, seed=i) for i in range(args.greedy_prompts)]
    seeds = [[100 * i + s for s in range(args.greedy_samples)] for i in range(len(chats))]
    gen.generate(chats[:1], [[1]])  # warm-up: first-call allocations count on neither side
    t0 = time.perf_counter()
    sampled = gen.generate(chats, seeds)
    greedy = gen.generate(chats, [[0]] * len(chats), greedy=True)
    apart = time.perf_counter() - t0
    t0 = time.perf_counter()
    both = gen.generate(chats, [[*ss, None] for ss in seeds])
    together = time.perf_counter() - t0
    return {
        "greedy_prompts": len(chats),
        "greedy_samples": args.greedy_samples,
        "greedy_apart_s": apart,
        "greedy_together_s": together,
        "greedy_speedup": apart / together,
        "greedy_identical": [b[:-1] for b in both] == sampled and [b[-1:] for b in both] == greedy,
        "greedy_dtype": str(gen.model.dtype).removeprefix("torch."),
    }


def print_greedy(r: dict[str, Any]) -> None:
    print(f"greedy   : {r['greedy_prompts']} prompts x ({r['greedy_samples']} samples + greedy), {r['greedy_dtype']}: "
          f"greedy apart {r['greedy_apart_s']:.1f} s, beside the samples {r['greedy_together_s']:.1f} s, "
          f"speedup {r['greedy_speedup']:.2f}x; same texts {r['greedy_identical']}")
