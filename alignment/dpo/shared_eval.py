"""dpo-eval's decoding of every policy in shared batches (`dpo.eval_shared_batches`, the default).

Used by `alignment dpo-eval` (`alignment.stages.dpo_eval`) and `alignment bench`'s dpo-eval line.
The base model is loaded once, every trained adapter is added to it unmerged under its own name
(`alignment.generation.adapters`), and each batch of prompts is decoded for all policies at
once: the batch holds `dpo.eval_batch_size` sequences per policy, each row running through its
own policy's adapter (the base policy through none). Prompts, sample seeds and the batch plan
are those of one-at-a-time decoding (`generation.sampling`), so every row draws what it would
draw alone.

Texts equal one-at-a-time decoding through the same unmerged adapter
(tests/test_dpo_shared_eval.py): a row's logits depend on its own adapter only. One-at-a-time
decoding with the adapter merged into the weights (`policy_generator`, the path with
`eval_shared_batches: false`) rounds differently, W + BA against Wx + B(Ax); on the tiny fp32
test model 0 of the 64 texts of 4 adapters differed, and in bf16 an occasional token may.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from alignment.cache import keyed_dir
from alignment.config import config_hash, to_dict
from alignment.executor import map_shards, shard_path
from alignment.generation import GenerationConfig
from alignment.generation.adapters import BASE_ADAPTER
from alignment.generation.sampling import Parse, batches, draw_seeds, plan_jobs, response_rows
from alignment.store import RunDir
from alignment.tasks import parse_answer

KEY_COLUMNS = ["policy", "example_id", "variant", "sample"]


def shared_generator(gcfg: GenerationConfig, adapters: dict[str, Path], n_policies: int) -> Any:
    """The base model once, with every adapter loaded under its policy's name, decoding
    `gcfg.batch_size` sequences per policy in each forward."""
    from transformers import AutoModelForCausalLM

    from alignment.generation.adapters import Router, load_adapters
    from alignment.generation.hf import TransformersGenerator
    from alignment.generation.models import load_model, load_tokenizer
    from alignment.organism.presets import resolve

    path = resolve(gcfg.model)
    base = load_model(AutoModelForCausalLM, path, gcfg.dtype, gcfg.device, gcfg.trust_remote_code)
    model = load_adapters(base, adapters)
    wide = replace(gcfg, batch_size=gcfg.batch_size * n_policies)
    router = Router(model) if adapters else None
    return TransformersGenerator(wide, model=model, tokenizer=load_tokenizer(path, gcfg.trust_remote_code), router=router)


def alone_generator(gcfg: GenerationConfig, adapter: Path | None) -> Any:
    """One policy alone, its adapter unmerged (PEFT's ordinary LoRA forward): what the shared
    batches must equal, text for text (tests, `alignment bench`)."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from alignment.generation.hf import TransformersGenerator
    from alignment.generation.models import load_model, load_tokenizer
    from alignment.organism.presets import resolve

    if adapter is None:
        return TransformersGenerator(replace(gcfg, model=resolve(gcfg.model)))
    path = resolve(gcfg.model)
    base = load_model(AutoModelForCausalLM, path, gcfg.dtype, gcfg.device, gcfg.trust_remote_code)
    model = PeftModel.from_pretrained(base, str(adapter)).base_model.model.eval()
    return TransformersGenerator(gcfg, model=model, tokenizer=load_tokenizer(path, gcfg.trust_remote_code))


def decode_batch(gen: Any, batch: list[dict[str, Any]], names: list[str]) -> list[list[list[str]]]:
    """Texts of each job of `batch` (a `sampling.batches` entry) for each adapter in `names`
    ("__base__": the base model), all decoded in one generator call: [policy][job][sample]."""
    chats = [j["chat"] for j in batch] * len(names)
    seeds = [draw_seeds(j) for j in batch] * len(names)
    adapters = [n for n in names for _ in batch] if gen.router is not None else None
    texts = gen.generate(chats, seeds, adapters=adapters)
    return [texts[i * len(batch) : (i + 1) * len(batch)] for i in range(len(names))]


def adapter_name(pol: dict[str, Any]) -> str:
    return BASE_ADAPTER if pol["adapter"] is None else str(pol["policy"])


def generate_policies(run: RunDir, pols: list[dict[str, Any]], examples: pd.DataFrame, gcfg: GenerationConfig, quiet: bool,
                      parse: Parse = parse_answer) -> pd.DataFrame:
    """Every policy's rows (dpo-eval's columns plus policy, reward, seed), decoded in shared batches.

    One shard per batch of prompts holds all policies' rows for those prompts: a shard is exactly
    one shared decode, so a resumed run redoes at most the batch it was decoding. The key covers
    every adapter's file stamp, so retraining any adapter (or adding a seed) redoes every shard;
    the base's rows cannot be kept apart from a shard's without decoding them alone again.
    """
    folder = run.stage("dpo-eval") / "gen" / "shared"
    stamps = [(p["policy"], (p["adapter"] / "adapter_model.safetensors").stat().st_mtime_ns if p["adapter"] else None) for p in pols]
    key = config_hash({"gen": to_dict(gcfg), "ids": examples["id"].tolist(), "adapters": stamps})
    keyed_dir(folder, key)  # shards of another config or adapter set would mix
    work = batches(plan_jobs(examples, gcfg), gcfg.batch_size)
    names = [adapter_name(p) for p in pols]
    adapters = {adapter_name(p): p["adapter"] for p in pols if p["adapter"] is not None}

    def compute(gen: Any, i: int) -> list[dict[str, Any]]:
        rows = []
        for pol, texts in zip(pols, decode_batch(gen, work[i], names), strict=True):
            rows += [{**r, "policy": pol["policy"], "reward": pol["reward"], "seed_policy": pol["seed"]}
                     for r in response_rows(work[i], texts, parse)]
        return rows

    def planned(i: int) -> set[tuple[Any, ...]]:
        return {(p["policy"], j["example"]["id"], j["variant"], s) for p in pols for j in work[i] for s in j["samples"]}

    def load() -> Any:
        return shared_generator(gcfg, adapters, len(pols))

    shards = folder / "shards"
    parts = map_shards(shards, len(work), load, compute, "dpo-eval policies", "batch", quiet)
    stale = [i for i, part in enumerate(parts) if keys_of(part) != planned(i)]
    if stale:  # shards another batch plan wrote hold other rows: redo them
        for i in stale:
            shard_path(shards, i).unlink()
        parts = map_shards(shards, len(work), load, compute, "dpo-eval policies", "batch", quiet)
    if not parts:
        raise ValueError("dpo-eval: no prompts to decode")
    df = pd.concat(parts, ignore_index=True).drop_duplicates(KEY_COLUMNS, keep="first")
    # One policy after another, in the rows and columns one-at-a-time decoding gives.
    order = {p["policy"]: k for k, p in enumerate(pols)}
    df = df.sort_values("policy", key=lambda s: s.map(order), kind="stable").reset_index(drop=True)
    return df.assign(seed=df["seed_policy"]).drop(columns=["seed_policy"])


def keys_of(part: pd.DataFrame) -> set[tuple[Any, ...]]:
    return set(zip(*(part[c].tolist() for c in KEY_COLUMNS), strict=True)) if len(part) else set()
