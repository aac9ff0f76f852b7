"""What sharing the reference log-probabilities saves (`alignment bench`'s DPO line).

A DPO round trains every reward variant under several seeds on pairs drawn from the same samples.
The same training runs are timed twice in one process, on the same pairs: with TRL's default (a
reference forward over every pair in every step) and with the run's shared store
(`alignment.dpo.reference`: one reference forward per distinct (prompt, response), reused by
every variant and seed). The ratio is what `dpo.shared_reference: true` saves; absolute times
depend on the machine. A run that trains nothing (every prompt over `max_prompt_length`) fails the
bench rather than timing model loading.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd

from alignment.dpo.config import DPOConfig
from alignment.dpo.train import train_one
from alignment.errors import UserError


def bench_pairs(n: int, variants: int, prompt_words: int = 60) -> list[pd.DataFrame]:
    """`variants` pair sets over the same `n` prompts that share their chosen responses and differ
    in the rejected ones (as RM and RM_D pairs from one set of samples often do). The default
    prompt (about 190 SmolLM2 tokens) fits the bench's `max_prompt_length`, so every run trains."""
    filler = " ".join(f"w{i % 50}" for i in range(prompt_words))
    prompts = [[{"role": "system", "content": "Answer the question."},
                {"role": "user", "content": f"Problem {i}: {filler} What is {i} + 1?"}] for i in range(n)]
    chosen = [[{"role": "assistant", "content": f"Working it out: {i} + 1 = {i + 1}. Therefore, the answer is (A)."}]
              for i in range(n)]
    return [pd.DataFrame({"example_id": [f"e{i}" for i in range(n)], "prompt": prompts, "chosen": chosen,
                          "rejected": [[{"role": "assistant", "content": f"I guess ({'BCDE'[(i + v) % 4]}), variant {v}."}]
                                       for i in range(n)]})
            for v in range(variants)]


ARMS = {False: "trl_default", True: "shared"}


def _config(model: str, max_length: int, shared: bool) -> DPOConfig:
    return DPOConfig(model=model, device="cpu", dtype="float32", batch_size=2, epochs=1, lora_r=8, max_length=max_length,
                     max_prompt_length=max_length - 64, shared_reference=shared, target_modules=["q_proj", "v_proj"])


def _trained(result: dict[str, Any], arm: str, run: str) -> dict[str, Any]:
    """A bench run that trains nothing times nothing: refuse it, naming why."""
    if result.get("status") != "trained" or not result.get("train_tokens"):
        why = (f"{result.get('dropped_long_prompts')} prompts over max_prompt_length" if result.get("status") == "no_pairs"
               else f"status {result.get('status')!r}, {result.get('train_tokens')} tokens trained")
        raise UserError(f"bench dpo: the {arm} run {run} trained nothing ({why}); its time would measure nothing")
    return result


def check_references(model: str, pairs: pd.DataFrame, store_dir: Path, max_length: int, atol: float = 1e-4) -> float:
    """Largest |difference| between TRL's own reference log-probabilities of `pairs` (what its
    default computes in every step) and the shared store's values; raises when above `atol`."""
    import numpy as np

    from alignment.dpo.reference import RefStore
    from alignment.dpo.train import build_trainer, load_policy

    cfg = _config(model, max_length, True)
    stores = list(store_dir.glob("ref_logps-*.parquet"))
    if len(stores) != 1:
        raise UserError(f"bench dpo: expected one shared reference store in {store_dir}, found {len(stores)}")
    with tempfile.TemporaryDirectory() as tmp:
        sets = []
        shared = RefStore(stores[0])
        for store in (None, shared):
            model_, tok = load_policy(cfg, "cpu")
            sets.append(build_trainer(cfg, model_, tok, pairs, pairs.iloc[:0], Path(tmp) / "ck", 0, "cpu", True, [], store).train_dataset)
    if shared.computed:  # the arm's own values, not fresh ones
        raise UserError(f"bench dpo: {shared.computed} reference log-probs were missing from the shared arm's store")
    gap = max(float(np.max(np.abs(np.asarray(sets[0][c]) - np.asarray(sets[1][c])))) for c in ("ref_chosen_logps", "ref_rejected_logps"))
    if not gap <= atol:
        raise UserError(f"bench dpo: the shared reference log-probs differ from TRL's by {gap:.2e} (> {atol})")
    return gap


def bench_reference(model: str, n_pairs: int = 8, variants: int = 2, seeds: int = 2, max_length: int = 512,
                    prompt_words: int = 60) -> dict[str, Any]:
    """Seconds and tokens trained per second for `variants` × `seeds` one-epoch LoRA DPO runs with
    TRL's default reference and with the shared one, and their ratio (> 1: sharing is faster).

    The arms alternate which runs first (run k: TRL's default first when k is even), so neither
    arm always meets a warmer process; every run must train (`UserError` otherwise), and the
    shared store's reference log-probs must match TRL's own on the same pairs (`check_references`)."""
    sets = bench_pairs(n_pairs, variants, prompt_words)
    out: dict[str, Any] = {"runs": variants * seeds, "pairs": n_pairs}
    seconds, tokens = dict.fromkeys(ARMS.values(), 0.0), dict.fromkeys(ARMS.values(), 0)
    with tempfile.TemporaryDirectory() as tmp:
        k = 0
        for v, pairs in enumerate(sets):
            for seed in range(seeds):
                for shared in ((False, True) if k % 2 == 0 else (True, False)):
                    arm, run = ARMS[shared], f"v{v}-seed{seed}"
                    started = time.perf_counter()
                    r = train_one(_config(model, max_length, shared), pairs, pairs.iloc[:0], Path(tmp) / arm / run, seed, quiet=True)
                    seconds[arm] += time.perf_counter() - started
                    tokens[arm] += int(_trained(r, arm, run)["train_tokens"])
                k += 1
        out["ref_logp_max_abs_diff"] = check_references(model, sets[0], Path(tmp) / "shared", max_length)
    for arm in ARMS.values():
        out[f"{arm}_s"] = round(seconds[arm], 2)
        out[f"{arm}_tokens"] = tokens[arm]
        out[f"{arm}_tokens_per_s"] = round(tokens[arm] / seconds[arm], 1)
    out["speedup"] = round(out["trl_default_s"] / out["shared_s"], 3)
    return out
