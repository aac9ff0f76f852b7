"""What sharing the reference log-probabilities saves (`alignment bench`'s DPO line).

A DPO round trains every reward variant under several seeds on pairs drawn from the same samples.
The same training runs are timed twice in one process, on the same pairs: with TRL's default (a
reference forward over every pair in every step) and with the run's shared store
(`alignment.dpo.reference`: one reference forward per distinct (prompt, response), reused by
every variant and seed). The ratio is what `dpo.shared_reference: true` saves; absolute times
depend on the machine.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd

from alignment.dpo.config import DPOConfig
from alignment.dpo.train import train_one


def bench_pairs(n: int, variants: int, prompt_words: int = 200) -> list[pd.DataFrame]:
    """`variants` pair sets over the same `n` prompts that share their chosen responses and differ
    in the rejected ones (as RM and RM_D pairs from one set of samples often do)."""
    filler = " ".join(f"w{i % 50}" for i in range(prompt_words))
    prompts = [[{"role": "system", "content": "Answer the question."},
                {"role": "user", "content": f"Problem {i}: {filler} What is {i} + 1?"}] for i in range(n)]
    chosen = [[{"role": "assistant", "content": f"Working it out: {i} + 1 = {i + 1}. Therefore, the answer is (A)."}]
              for i in range(n)]
    return [pd.DataFrame({"example_id": [f"e{i}" for i in range(n)], "prompt": prompts, "chosen": chosen,
                          "rejected": [[{"role": "assistant", "content": f"I guess ({'BCDE'[(i + v) % 4]}), variant {v}."}]
                                       for i in range(n)]})
            for v in range(variants)]


def bench_reference(model: str, n_pairs: int = 8, variants: int = 2, seeds: int = 2, max_length: int = 512) -> dict[str, Any]:
    """Seconds for `variants` × `seeds` one-epoch LoRA DPO runs with TRL's default reference and with
    the shared one, and their ratio (> 1: sharing is faster)."""
    sets = bench_pairs(n_pairs, variants)
    out: dict[str, Any] = {"runs": variants * seeds, "pairs": n_pairs}
    for shared in (False, True):
        cfg = DPOConfig(model=model, device="cpu", dtype="float32", batch_size=2, epochs=1, lora_r=8,
                        max_length=max_length, max_prompt_length=max_length - 64, shared_reference=shared,
                        target_modules=["q_proj", "v_proj"])
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            for v, pairs in enumerate(sets):
                for seed in range(seeds):
                    train_one(cfg, pairs, pairs.iloc[:0], Path(tmp) / f"v{v}-seed{seed}", seed, quiet=True)
            out["shared_s" if shared else "trl_default_s"] = round(time.perf_counter() - started, 2)
    out["speedup"] = round(out["trl_default_s"] / out["shared_s"], 3)
    return out
