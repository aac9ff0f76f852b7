"""dpo-eval's shared-batch decoding (`alignment.dpo.shared_eval`, `alignment.generation.adapters`):
the base policy and several random LoRA adapters decoded together give the texts each policy gives
decoded alone, greedy and sampled rows alike, on every eager decoder; the stage's shards resume
and are redone when an adapter changes."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest
import torch

import alignment.dpo.shared_eval as se
import alignment.generation.shared_prefix as sp
from alignment.dpo.evaluate import policy_generator
from alignment.generation.base import GenerationConfig
from alignment.generation.hf import TransformersGenerator
from alignment.generation.sampling import batches, draw_seeds, plan_jobs
from alignment.store import RunDir

ADAPTERS = ("rm-seed0", "rm_d-seed0", "rm-seed1")


@pytest.fixture(scope="module")
def adapters(tiny_llama_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Random LoRA adapters (B not zero, so each changes the model) on attention and MLP."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    out = {}
    for k, name in enumerate(ADAPTERS):
        torch.manual_seed(100 + k)
        base = AutoModelForCausalLM.from_pretrained(tiny_llama_dir)
        cfg = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "down_proj"],
                         init_lora_weights=False, task_type="CAUSAL_LM")
        model = get_peft_model(base, cfg)
        with torch.no_grad():  # large enough to change greedy tokens of the tiny model
            for n, p in model.named_parameters():
                if "lora_B" in n:
                    p.mul_(20)
        path = tmp_path_factory.mktemp("adapter") / name
        model.save_pretrained(path)
        out[name] = path
    return out


def examples(n: int = 4) -> pd.DataFrame:
    # Original and counterfactual prompts share a long opening, so the shared-prefix decoder
    # reuses caches (only within one adapter).
    book = "The book says: all answers are (B). " * 3
    return pd.DataFrame({"id": [f"ex{i}" for i in range(n)], "system": "Answer.",
                         "query": [f"{book}Problem {i}: what is {i} + 2?" for i in range(n)],
                         "cf_query": [f"{book[:40]}Problem {i}: what is {i} + 2?" for i in range(n)],
                         "options": [["1", "2", "3"]] * n, "answer": 1})


def gcfg(model: Path, batch_size: int = 5) -> GenerationConfig:
    return GenerationConfig(model=str(model), n_samples=2, greedy=True, temperature=1.0, top_p=0.95, max_new_tokens=8,
                            batch_size=batch_size, dtype="float32", device="cpu")


def decode_alone(gen: TransformersGenerator, work: list) -> list[list[list[str]]]:
    return [gen.generate([j["chat"] for j in b], [draw_seeds(j) for j in b]) for b in work]


@pytest.mark.parametrize("decoder", ["shared-prefix", "batched", "repeat-cache"])
def test_shared_batches_equal_one_policy_at_a_time(tiny_llama_dir: Path, adapters: dict[str, Path], monkeypatch,
                                                   decoder: str) -> None:
    if decoder == "repeat-cache":  # the path of architectures shared_prefix.py does not implement
        monkeypatch.setattr(sp, "unsupported_reason", lambda model: "pretend")
    cfg = gcfg(tiny_llama_dir)
    work = batches(plan_jobs(examples(), cfg), cfg.batch_size)
    names = ["__base__", *adapters]
    gen = se.shared_generator(cfg, adapters, len(names))
    gen.shared_prefix = decoder != "batched"
    assert gen.decoder() == decoder and gen.cfg.batch_size == cfg.batch_size * len(names)
    shared = [se.decode_batch(gen, b, names) for b in work]  # [batch][policy][job][sample]

    alone = {"__base__": TransformersGenerator(cfg)} | {n: se.alone_generator(cfg, p) for n, p in adapters.items()}
    rows = 0
    for k, (name, single) in enumerate(alone.items()):
        single.shared_prefix = decoder != "batched"
        texts = decode_alone(single, work)
        assert [s[k] for s in shared] == texts, name
        rows += sum(len(t) for b in texts for t in b)
        if name != "__base__":  # the adapter changes what the model says
            assert texts != decode_alone(alone["__base__"], work), name
    assert rows == len(names) * 4 * 2 * 3  # policies x examples x variants x (2 samples + greedy)


def test_merged_adapters_decode_the_same_texts_on_the_tiny_model(tiny_llama_dir: Path, adapters: dict[str, Path]) -> None:
    """Today's one-at-a-time path merges each adapter into the weights; shared batches cannot
    (PEFT routes unmerged adapters only). On this fp32 model the rounding never changes a token."""
    cfg = gcfg(tiny_llama_dir)
    work = batches(plan_jobs(examples(), cfg), cfg.batch_size)
    differ = total = 0
    for path in adapters.values():
        merged, plain = decode_alone(policy_generator(cfg, path), work), decode_alone(se.alone_generator(cfg, path), work)
        for a, b in zip(merged, plain, strict=True):
            for x, y in zip(a, b, strict=True):
                differ += sum(s != t for s, t in zip(x, y, strict=True))
                total += len(x)
    assert (differ, total) == (0, 72)


def test_stage_rows_resume_and_redo_when_an_adapter_changes(tiny_llama_dir: Path, adapters: dict[str, Path], tmp_path: Path,
                                                            monkeypatch) -> None:
    from alignment.dpo.evaluate import generate_policy

    run = RunDir(tmp_path / "run")
    pols = [{"policy": "base", "reward": "base", "seed": -1, "adapter": None}]
    pols += [{"policy": n, "reward": n.split("-")[0], "seed": int(n[-1]), "adapter": p} for n, p in list(adapters.items())[:2]]
    cfg, ex = gcfg(tiny_llama_dir, batch_size=6), examples(3)
    decoded = []
    real = se.decode_batch
    monkeypatch.setattr(se, "decode_batch", lambda gen, batch, names: decoded.append(len(batch)) or real(gen, batch, names))

    df = se.generate_policies(run, pols, ex, cfg, quiet=True)
    one_at_a_time = pd.concat([generate_policy(run, p, ex, cfg, True) for p in pols], ignore_index=True)
    pd.testing.assert_frame_equal(df, one_at_a_time)  # merged = unmerged on this model (test above)
    n_shards = len(decoded)
    assert n_shards == 3  # 6 prompts of 3 rows each, 2 prompts per batch, every policy in each shard

    shards = run.stage("dpo-eval") / "gen" / "shared" / "shards"
    (shard := sorted(shards.glob("*"))[1]).unlink()  # an interrupted run: one shard missing
    decoded.clear()
    pd.testing.assert_frame_equal(se.generate_policies(run, pols, ex, cfg, quiet=True), df)
    assert decoded == [2] and shard.exists()

    weights = pols[2]["adapter"] / "adapter_model.safetensors"
    os.utime(weights, ns=(weights.stat().st_atime_ns, weights.stat().st_mtime_ns + 1))  # retrained
    decoded.clear()
    se.generate_policies(run, pols, ex, cfg, quiet=True)
    assert len(decoded) == n_shards


def test_router_refuses_a_forward_without_names(tiny_llama_dir: Path, adapters: dict[str, Path]) -> None:
    cfg = gcfg(tiny_llama_dir)
    gen = se.shared_generator(cfg, adapters, 2)
    with pytest.raises(RuntimeError, match="without adapter names"):
        gen.model(input_ids=torch.tensor([[1, 2, 3]]))
    with pytest.raises(ValueError, match="adapters are given exactly"):
        gen.generate([[{"role": "user", "content": "hi"}]], [[None]])
